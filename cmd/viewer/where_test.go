package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"viewer/trace/tracetest"
)

// realTraces lists every trace input in ../shared/realdata.
func realTraces(t *testing.T) []string {
	root := tracetest.RealData(t, "")
	var paths []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && traceInputs[filepath.Ext(p)] {
			paths = append(paths, p)
		}
		return nil
	})
	if len(paths) == 0 {
		t.Fatal("no trace inputs in", root)
	}
	return paths
}

// viewerOut runs the viewer and returns its standard output; a failure is
// fine (a damaged trace's dump fails after writing its events).
func viewerOut(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errOut bytes.Buffer
	run(context.Background(), args, &out, &errOut)
	return out.Bytes()
}

// typeQuery returns a query for exactly one event type of `viewer stats`.
func typeQuery(c typeCount) string {
	return "@provider = " + strconv.Quote(c.Provider) + " and @event = " + strconv.Quote(c.Event) +
		" and @id = " + strconv.FormatInt(c.ID, 10) + " and @version = " + strconv.Itoa(c.Version)
}

type typeCount struct {
	Provider string `json:"provider"`
	Event    string `json:"event"`
	ID       int64  `json:"id"`
	Version  int    `json:"version"`
	Count    int64  `json:"count"`
}

// TestDumpWhereCountsStats checks, on every real trace, that `viewer
// dump --where` selecting one event type writes as many events as
// `viewer stats` counts for it: for a sample of the types (every type when
// VIEWER_EXHAUSTIVE is set), and that every line it writes is of that type.
func TestDumpWhereCountsStats(t *testing.T) {
	for _, path := range realTraces(t) {
		var st struct {
			Counts []typeCount `json:"counts"`
		}
		if err := json.Unmarshal(viewerOut(t, "stats", "--json", path), &st); err != nil {
			t.Fatalf("%s: stats: %v", path, err)
		}
		for _, c := range tracetest.Sample(st.Counts, 1, 1, 16) {
			q := typeQuery(c)
			lines := bytes.Split(bytes.TrimSpace(viewerOut(t, "dump", "--where", q, path)), []byte("\n"))
			if len(lines) == 1 && len(lines[0]) == 0 {
				lines = nil
			}
			if int64(len(lines)) != c.Count {
				t.Errorf("%s: dump --where %s: %d events, stats counts %d", filepath.Base(path), q, len(lines), c.Count)
				continue
			}
			for _, l := range lines {
				var ev struct {
					Provider string `json:"provider"`
					Event    string `json:"event"`
					ID       int64  `json:"id"`
				}
				if err := json.Unmarshal(l, &ev); err != nil || ev.Provider != c.Provider || ev.Event != c.Event || ev.ID != c.ID {
					t.Fatalf("%s: dump --where %s wrote %.200s", filepath.Base(path), q, l)
				}
			}
		}
	}
}

// fieldQueries are predicates on payload fields per real trace, each
// checked against a brute-force filter of the full dump.
var fieldQueries = map[string][]string{
	"msperftools/HelloWorld_GC_Threads_Exception.nettrace": {
		"Reason = Induced", "Count >= 2", `ExceptionType ~ "exception"`, "ClrInstanceID = 0", "Depth in (2, 5)", "not Depth < 1",
	},
	"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace": {"MethodNamespace ~ System.Collections", "ClrInstanceID = 3", "MethodID > 140000000000000"},
	"vpp_rich.cpel":                 {"datum < 1000", "datum ~ 7", "datum in (30, 59)"},
	"g2_test.elog":                  {"arg1 >= 3", "not arg0 = 1"},
	"sched-noclock.data":            {"prev_pid = 18", "next_comm ~ migration", "prev_state > 0 and next_prio < 100"},
	"sched-syscalls-monotonic.data": {"next_comm ~ /^kworker/", "prev_prio in (120, 0)"},
}

// TestDumpWhereFields checks `viewer dump --where FIELD-PREDICATE` against
// the lines of the full dump whose fields satisfy it, evaluated here on
// the JSON.
func TestDumpWhereFields(t *testing.T) {
	for _, path := range realTraces(t) {
		var queries []string
		for suffix, qs := range fieldQueries {
			if strings.HasSuffix(path, "/"+suffix) {
				queries = qs
			}
		}
		if queries == nil {
			continue
		}
		all := bytes.Split(bytes.TrimSpace(viewerOut(t, "dump", path)), []byte("\n"))
		for _, q := range queries {
			var want [][]byte
			for _, l := range all {
				var ev struct {
					Fields []struct {
						Name  string          `json:"name"`
						Value json.RawMessage `json:"value"`
					} `json:"fields"`
				}
				if err := json.Unmarshal(l, &ev); err != nil {
					t.Fatal(err)
				}
				fields := map[string]json.RawMessage{}
				for _, f := range ev.Fields {
					if _, dup := fields[f.Name]; !dup {
						fields[f.Name] = f.Value
					}
				}
				if jsonMatch(t, q, fields) {
					want = append(want, l)
				}
			}
			got := bytes.Split(bytes.TrimSpace(viewerOut(t, "dump", "--where", q, path)), []byte("\n"))
			if len(got) == 1 && len(got[0]) == 0 {
				got = nil
			}
			if len(want) == 0 {
				t.Errorf("%s: %q matches nothing: a weak test", filepath.Base(path), q)
			}
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Errorf("%s: dump --where %q: %d lines, brute force %d", filepath.Base(path), q, len(got), len(want))
			}
		}
	}
}

// jsonMatch evaluates the small grammar of fieldQueries on an event's
// fields: FIELD OP VALUE, FIELD in (V, …), not …, … and …; numbers
// compare as numbers, "~" is a case-insensitive substring or /^prefix/.
func jsonMatch(t *testing.T, q string, fields map[string]json.RawMessage) bool {
	if a, b, ok := strings.Cut(q, " and "); ok {
		return jsonMatch(t, a, fields) && jsonMatch(t, b, fields)
	}
	if rest, ok := strings.CutPrefix(q, "not "); ok {
		return !jsonMatch(t, rest, fields)
	}
	parts := strings.SplitN(q, " ", 3)
	raw, ok := fields[parts[0]]
	if !ok {
		return false
	}
	var num float64
	isNum := json.Unmarshal(raw, &num) == nil
	var text string
	if json.Unmarshal(raw, &text) != nil {
		text = string(raw)
	} else if h, ok := strings.CutPrefix(text, "0x"); ok { // a hex value
		if n, err := strconv.ParseUint(h, 16, 64); err == nil {
			num, isNum = float64(n), true
		}
	}
	val := strings.Trim(parts[2], `"`)
	if parts[1] == "in" {
		for _, v := range strings.Split(strings.Trim(parts[2], "()"), ",") {
			if jsonMatch(t, parts[0]+" = "+strings.TrimSpace(v), fields) {
				return true
			}
		}
		return false
	}
	if parts[1] == "~" {
		if p, ok := strings.CutPrefix(val, "/^"); ok {
			return strings.HasPrefix(strings.ToLower(text), strings.ToLower(strings.TrimSuffix(p, "/")))
		}
		return strings.Contains(strings.ToLower(text), strings.ToLower(val))
	}
	c := strings.Compare(text, val)
	if v, err := strconv.ParseFloat(val, 64); err == nil && isNum {
		c = 0
		if num < v {
			c = -1
		} else if num > v {
			c = 1
		}
	}
	switch parts[1] {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	t.Fatalf("jsonMatch cannot read %q", q)
	return false
}
