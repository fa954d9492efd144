package main

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// chromeEvent is one event of the trace-event format, as the test reads it.
type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   *string        `json:"ph"`
	TS   *float64       `json:"ts"`
	PID  *int64         `json:"pid"`
	TID  *int64         `json:"tid"`
	ID   *int64         `json:"id"`
	Dur  *float64       `json:"dur"`
	BP   string         `json:"bp"`
	Args map[string]any `json:"args"`
}

// checkChrome validates a trace-event document against the format's rules
// (Google's "Trace Event Format"): every event has ph, ts, pid and tid;
// B and E events nest per thread, in time order, and so do X events
// (each within or after the ones before it); every flow id has one start
// and one finish, not before it. It returns the events.
func checkChrome(t *testing.T, doc []byte) []chromeEvent {
	t.Helper()
	var top struct {
		TraceEvents []chromeEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(doc, &top); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	type thread struct{ pid, tid int64 }
	open := map[thread][]chromeEvent{}
	type flow struct{ s, f []chromeEvent }
	flows := map[int64]*flow{}
	complete := map[thread][]chromeEvent{}
	for i, e := range top.TraceEvents {
		if e.Ph == nil || e.TS == nil || e.PID == nil || e.TID == nil {
			t.Fatalf("event %d lacks ph, ts, pid or tid: %+v", i, e)
		}
		th := thread{*e.PID, *e.TID}
		switch *e.Ph {
		case "B":
			if st := open[th]; len(st) > 0 && *st[len(st)-1].TS > *e.TS {
				t.Fatalf("event %d begins before its parent: %+v", i, e)
			}
			open[th] = append(open[th], e)
		case "E":
			st := open[th]
			if len(st) == 0 {
				t.Fatalf("event %d ends no slice: %+v", i, e)
			}
			if b := st[len(st)-1]; b.Name != e.Name || b.Cat != e.Cat || *b.TS > *e.TS {
				t.Fatalf("event %d %+v does not end the innermost slice %+v", i, e, b)
			}
			open[th] = st[:len(st)-1]
		case "s", "f":
			if e.ID == nil {
				t.Fatalf("flow event %d has no id: %+v", i, e)
			}
			fl := flows[*e.ID]
			if fl == nil {
				fl = &flow{}
				flows[*e.ID] = fl
			}
			if *e.Ph == "s" {
				fl.s = append(fl.s, e)
			} else {
				fl.f = append(fl.f, e)
			}
		case "X":
			if e.Dur == nil || *e.Dur < 0 {
				t.Fatalf("event %d is a slice without a duration: %+v", i, e)
			}
			complete[th] = append(complete[th], e)
		case "i", "M":
		default:
			t.Fatalf("event %d has phase %q", i, *e.Ph)
		}
	}
	for th, st := range open {
		if len(st) > 0 {
			t.Errorf("thread %v: %d slices never end", th, len(st))
		}
	}
	for th, xs := range complete {
		sort.SliceStable(xs, func(i, j int) bool {
			return *xs[i].TS < *xs[j].TS || *xs[i].TS == *xs[j].TS && *xs[i].Dur > *xs[j].Dur
		})
		var ends []float64 // of the enclosing slices
		for _, x := range xs {
			for len(ends) > 0 && ends[len(ends)-1] <= *x.TS {
				ends = ends[:len(ends)-1]
			}
			end := *x.TS + *x.Dur
			if len(ends) > 0 && end > ends[len(ends)-1]+1e-9 {
				t.Fatalf("thread %v: slice %+v crosses the end of its parent at %v", th, x, ends[len(ends)-1])
			}
			ends = append(ends, end)
		}
	}
	for id, fl := range flows {
		if len(fl.s) != 1 || len(fl.f) != 1 || *fl.s[0].TS > *fl.f[0].TS || fl.s[0].Name != fl.f[0].Name || fl.s[0].Cat != fl.f[0].Cat {
			t.Fatalf("flow %d: starts %+v, finishes %+v", id, fl.s, fl.f)
		}
	}
	return top.TraceEvents
}

// TestExportChrome exports the demo trace as Chrome trace events,
// validates the document, and checks that every event is there with its
// activity id and that the events of each activity are linked by flows.
func TestExportChrome(t *testing.T) {
	const demo = "demo.nettrace"
	evs := checkChrome(t, viewerOut(t, "export", "--format", "chrome", demo))
	lines := viewerOut(t, "dump", demo)
	var dumped, withAct int
	acts := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var d struct {
			Labels map[string]string `json:"labels"`
		}
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatal(err)
		}
		dumped++
		if a := d.Labels["ActivityId"]; a != "" {
			withAct++
			if a != "00000000-0000-0000-0000-000000000000" {
				acts[a]++
			}
		}
	}
	var shown, shownAct, slices, flows int
	gotActs := map[string]int{}
	count := func(args map[string]any) {
		shown++
		if a, ok := args["ActivityId"].(string); ok {
			shownAct++
			if a != "00000000-0000-0000-0000-000000000000" {
				gotActs[a]++
			}
		}
	}
	for _, e := range evs {
		switch *e.Ph {
		case "i":
			count(e.Args)
		case "X": // the Start and the Stop
			slices++
			count(e.Args)
			stop, _ := e.Args["stop"].(map[string]any)
			count(stop)
		case "s":
			flows++
		}
	}
	if shown != dumped || shownAct != withAct {
		t.Errorf("%d events (%d with an ActivityId), the dump has %d (%d)", shown, shownAct, dumped, withAct)
	}
	wantFlows := 0
	for a, n := range acts {
		wantFlows += n - 1
		if gotActs[a] != n {
			t.Errorf("activity %s: %d events exported, %d dumped", a, gotActs[a], n)
		}
	}
	// RelatedActivityId links add flows of their own: at least the
	// ActivityId links are there.
	if flows < wantFlows || wantFlows == 0 || slices == 0 {
		t.Errorf("%d flows (want at least %d), %d slices", flows, wantFlows, slices)
	}

	// --where keeps the matching events only, still a valid document.
	evs = checkChrome(t, viewerOut(t, "export", "--where", "OrderStart or OrderStop", "--from", "0", "--to", "1000000000", demo))
	n := 0
	for _, e := range evs {
		if *e.Ph == "X" || *e.Ph == "i" {
			if !strings.HasPrefix(e.Name, "Order") || *e.TS >= 1e6 {
				t.Fatalf("--where exported %+v", e)
			}
			n++
		}
	}
	if n == 0 {
		t.Error("--where exported nothing")
	}
	// --format jsonl is the dump.
	if a, b := viewerOut(t, "export", "--format", "jsonl", "--where", "CacheMiss", demo), viewerOut(t, "dump", "--where", "CacheMiss", demo); !bytes.Equal(a, b) || len(a) == 0 {
		t.Errorf("export --format jsonl wrote %d bytes, dump %d", len(a), len(b))
	}
}
