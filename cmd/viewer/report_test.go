package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// dumpLine is what the report tests read of `viewer dump` lines.
type dumpLine struct {
	Time   int64  `json:"time_ns"`
	PID    int64  `json:"pid"`
	TID    int64  `json:"tid"`
	Event  string `json:"event"`
	Fields []struct {
		Name  string          `json:"name"`
		Value json.RawMessage `json:"value"`
	} `json:"fields"`
}

func (l *dumpLine) field(name string) string {
	for _, f := range l.Fields {
		if f.Name == name {
			var s string
			if json.Unmarshal(f.Value, &s) == nil {
				return s
			}
			return string(f.Value)
		}
	}
	return ""
}

func dumpLines(t *testing.T, args ...string) []dumpLine {
	var out []dumpLine
	for _, l := range bytes.Split(bytes.TrimSpace(viewerOut(t, args...)), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var d dumpLine
		if err := json.Unmarshal(l, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// TestReportGC checks `viewer report gc --json` on every real .NET trace:
// one row per GC/Start, its generation and reason those of the event, and
// its pause the time from the SuspendEEStart in force when the GC started
// (its own thread's, else the latest in its process) to the RestartEEStop
// of the thread that began it, worked out here from the dump.
func TestReportGC(t *testing.T) {
	withGCs := 0
	for _, path := range realTraces(t) {
		if ext := filepath.Ext(path); ext != ".nettrace" && ext != ".netperf" {
			continue
		}
		var rep struct {
			GCs []struct {
				Number     int64  `json:"number"`
				Generation int64  `json:"generation"`
				Reason     string `json:"reason"`
				Start      int64  `json:"start_ns"`
				PauseNS    *int64 `json:"pause_ns"`
			} `json:"gcs"`
		}
		if err := json.Unmarshal(viewerOut(t, "report", "gc", "--json", path), &rep); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		starts, pauses := gcsFromDump(t, path)
		if len(rep.GCs) != len(starts) {
			t.Errorf("%s: %d GC rows, %d GC/Start events", filepath.Base(path), len(rep.GCs), len(starts))
			continue
		}
		if len(starts) > 0 {
			withGCs++
		}
		for i, g := range rep.GCs {
			s := starts[i]
			if g.Start != s.Time || g.Reason != s.field("Reason") || s.field("Depth") != itoa(g.Generation) || s.field("Count") != itoa(g.Number) {
				t.Errorf("%s: GC %d is %+v, its GC/Start %+v", filepath.Base(path), i, g, s)
			}
			switch p := pauses[i]; {
			case p == nil && g.PauseNS != nil:
				t.Errorf("%s: GC %d has a pause of %d ns, the dump none", filepath.Base(path), i, *g.PauseNS)
			case p != nil && (g.PauseNS == nil || *g.PauseNS != *p):
				t.Errorf("%s: GC %d pause %v, the dump says %d ns", filepath.Base(path), i, g.PauseNS, *p)
			}
		}
	}
	if withGCs == 0 {
		t.Error("no real trace has GC/Start events")
	}
}

// gcsFromDump works out a trace's GCs from its `viewer dump`, without
// the clr package: its GC/Start events, and for each the pause it ran in
// (nil when none): from the GC/SuspendEEStart in force when it started
// (its own thread's, else the latest in its process) to the
// GC/RestartEEStop of the thread that began that suspension.
func gcsFromDump(t *testing.T, path string) (starts []dumpLine, pauses []*int64) {
	t.Helper()
	lines := dumpLines(t, "dump", "--where", "@provider = Microsoft-Windows-DotNETRuntime and @event in (GC/Start, GC/SuspendEEStart, GC/RestartEEStop)", path)
	type thread struct{ pid, tid int64 }
	inForce := map[thread]int64{} // suspension start by the thread that began it
	waiting := map[thread][]int{}
	for _, l := range lines {
		th := thread{l.PID, l.TID}
		switch l.Event {
		case "GC/SuspendEEStart":
			inForce[th] = l.Time
		case "GC/RestartEEStop":
			for _, i := range waiting[th] {
				p := l.Time - *pauses[i]
				pauses[i] = &p
			}
			delete(waiting, th)
			delete(inForce, th)
		case "GC/Start":
			starts = append(starts, l)
			pauses = append(pauses, nil)
			by, ok := th, false
			if _, ok = inForce[th]; !ok {
				for k, at := range inForce {
					if k.pid == l.PID && (!ok || at > inForce[by] || at == inForce[by] && k.tid < by.tid) {
						by, ok = k, true
					}
				}
			}
			if ok {
				at := inForce[by]
				pauses[len(pauses)-1] = &at // the start, until the restart
				waiting[by] = append(waiting[by], len(pauses)-1)
			}
		}
	}
	for _, w := range waiting { // never restarted: no pause
		for _, i := range w {
			pauses[i] = nil
		}
	}
	return starts, pauses
}

// TestReportExceptions checks that `viewer report exceptions --json`
// lists every Exception/Start of every real .NET trace with its type and
// message, and counts them by type.
func TestReportExceptions(t *testing.T) {
	seen := 0
	for _, path := range realTraces(t) {
		if ext := filepath.Ext(path); ext != ".nettrace" && ext != ".netperf" {
			continue
		}
		var rep struct {
			ByType []struct {
				Type  string `json:"type"`
				Count int    `json:"count"`
			} `json:"by_type"`
			Exceptions []struct {
				Time    int64    `json:"time_ns"`
				Type    string   `json:"type"`
				Message string   `json:"message"`
				Stack   []string `json:"stack"`
			} `json:"exceptions"`
		}
		if err := json.Unmarshal(viewerOut(t, "report", "exceptions", "--json", path), &rep); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		lines := dumpLines(t, "dump", "--where", "@provider = Microsoft-Windows-DotNETRuntime and @event = Exception/Start", path)
		if len(rep.Exceptions) != len(lines) {
			t.Errorf("%s: %d exceptions, %d Exception/Start events", filepath.Base(path), len(rep.Exceptions), len(lines))
			continue
		}
		counts := map[string]int{}
		for i, x := range rep.Exceptions {
			l := lines[i]
			counts[l.field("ExceptionType")]++
			if x.Time != l.Time || x.Type != l.field("ExceptionType") || x.Message != l.field("ExceptionMessage") || x.Type == "" {
				t.Errorf("%s: exception %d is %+v, the event %+v", filepath.Base(path), i, x, l)
			}
			if !strings.Contains(strings.Join(x.Stack, ";"), "!") {
				t.Errorf("%s: exception %d has no symbolized frame: %q", filepath.Base(path), i, x.Stack)
			}
			seen++
		}
		for _, g := range rep.ByType {
			if counts[g.Type] != g.Count {
				t.Errorf("%s: %d exceptions of type %q, counted %d", filepath.Base(path), g.Count, g.Type, counts[g.Type])
			}
		}
	}
	if seen == 0 {
		t.Error("no real trace has Exception/Start events")
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
