package clr_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/nettrace"
	"viewer/trace/nettrace/nettracetest"
	"viewer/trace/span"
)

func guid(b byte) trace.Value {
	var g [16]byte
	g[0], g[15] = b, 0xaa
	return trace.GUIDValue(g)
}

// TestActivitiesNested writes a NetTrace v6 trace of EventSource
// activities — a request (RequestStart/RequestStop) with two nested
// queries (Query/Start and Query/Stop, RelatedActivityId the request),
// one nested deeper, one on another thread, a stop without start and a
// start without stop — and checks the slices, their depths and their
// arguments.
func TestActivitiesNested(t *testing.T) {
	var buf bytes.Buffer
	w := nettracetest.NewWriter(&buf, nettracetest.TraceInfo{Wall: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), SyncTicks: 0, TicksPerSecond: 1e9, PointerSize: 8})
	f := []nettracetest.Field{{Name: "Path", Type: nettracetest.TypeUTF16String}}
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(w.Metadata(0,
		nettracetest.Metadata{ID: 1, Provider: "Demo-Web", EventID: 1, Name: "RequestStart", Fields: f, HasOpcode: true, Opcode: 1},
		nettracetest.Metadata{ID: 2, Provider: "Demo-Web", EventID: 2, Name: "RequestStop", Fields: f, HasOpcode: true, Opcode: 2},
		nettracetest.Metadata{ID: 3, Provider: "Demo-Db", EventID: 3, Name: "Query/Start", Fields: f, HasOpcode: true, Opcode: 1},
		nettracetest.Metadata{ID: 4, Provider: "Demo-Db", EventID: 4, Name: "Query/Stop", Fields: f, HasOpcode: true, Opcode: 2},
		nettracetest.Metadata{ID: 5, Provider: "Microsoft-Windows-DotNETRuntime", EventID: 1, Name: "GC/Start", HasOpcode: true, Opcode: 1},
	))
	check(w.Threads(nettracetest.Thread{Index: 1, Name: "web", PID: 1, TID: 10}, nettracetest.Thread{Index: 2, Name: "pool", PID: 1, TID: 11}))
	req, q1, q2, q3, lost, open := guid(1), guid(2), guid(3), guid(4), guid(5), guid(6)
	check(w.LabelLists(1,
		[]trace.Label{{Key: "ActivityId", Value: req}},
		[]trace.Label{{Key: "ActivityId", Value: q1}, {Key: "RelatedActivityId", Value: req}},
		[]trace.Label{{Key: "ActivityId", Value: q1}},
		[]trace.Label{{Key: "ActivityId", Value: q2}, {Key: "RelatedActivityId", Value: q1}},
		[]trace.Label{{Key: "ActivityId", Value: q2}},
		[]trace.Label{{Key: "ActivityId", Value: q3}, {Key: "RelatedActivityId", Value: req}},
		[]trace.Label{{Key: "ActivityId", Value: q3}},
		[]trace.Label{{Key: "ActivityId", Value: lost}},
		[]trace.Label{{Key: "ActivityId", Value: open}},
	))
	payload := func(s string) []byte {
		p, err := nettracetest.EncodePayload(f, []trace.Value{trace.StringValue(s)})
		check(err)
		return p
	}
	ev := func(meta uint32, seq uint32, thread uint64, ticks int64, labels uint32, p string) nettracetest.Event {
		e := nettracetest.Event{MetadataID: meta, Seq: seq, Thread: thread, Capture: thread, Proc: 0, Ticks: ticks, Labels: labels, Sorted: true}
		if meta != 5 {
			e.Payload = payload(p)
		}
		return e
	}
	check(w.Events(false,
		ev(4, 1, 1, 50, 8, "lost"),   // a stop without start
		ev(1, 2, 1, 100, 1, "/a"),    // request 100–900
		ev(3, 3, 1, 200, 2, "q1"),    // query 1 200–500, under the request
		ev(3, 4, 1, 250, 4, "q2"),    // query 2 250–300, under query 1
		ev(5, 5, 1, 260, 0, ""),      // the runtime's GC/Start: not an activity
		ev(4, 6, 1, 300, 5, "q2"),    //
		ev(3, 1, 2, 350, 6, "q3"),    // query 3 on the pool thread 350–400
		ev(4, 2, 2, 400, 7, "q3"),    //
		ev(4, 7, 1, 500, 3, "q1"),    //
		ev(2, 8, 1, 900, 1, "/a"),    //
		ev(1, 9, 1, 950, 9, "/open"), // never stops
		ev(1, 10, 1, 1000, 0, "/no"), // no activity id: not paired
	))
	check(w.Close())
	r, err := nettrace.Format{}.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	set, err := span.Derive(r, clr.NewActivities())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range set.All() {
		tr := set.Tracks[s.Track]
		var args []string
		for _, a := range set.ArgList(s.Args) {
			args = append(args, a.Name+"="+a.Value.String())
		}
		got = append(got, fmt.Sprintf("%s@%s %s %d-%d d%d f%d %v", tr.Name, r.Meta().Tracks[tr.Of].Name, set.Name(s.Name), s.Start, s.End, s.Depth, s.Flags, args))
	}
	want := []string{
		fmt.Sprintf("activities@%s Demo-Db/Query 50-50 d0 f%d [end.Path=lost]", trackName(r, 10), span.OpenStart),
		fmt.Sprintf("activities@%s Demo-Web/Request 100-900 d0 f0 [Path=/a end.Path=/a]", trackName(r, 10)),
		fmt.Sprintf("activities@%s Demo-Db/Query 200-500 d1 f0 [Path=q1 end.Path=q1]", trackName(r, 10)),
		fmt.Sprintf("activities@%s Demo-Db/Query 250-300 d2 f0 [Path=q2 end.Path=q2]", trackName(r, 10)),
		fmt.Sprintf("activities@%s Demo-Web/Request 950-1000 d0 f%d [Path=/open]", trackName(r, 10), span.OpenEnd),
		fmt.Sprintf("activities@%s Demo-Db/Query 350-400 d0 f0 [Path=q3 end.Path=q3]", trackName(r, 11)),
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("slices\n got %q\nwant %q", got, want)
	}
}

func trackName(r trace.Reader, tid int64) string {
	for _, t := range r.Meta().Tracks {
		if t.TID == tid && t.Kind == trace.TrackThread {
			return t.Name
		}
	}
	return "?"
}

func TestTaskName(t *testing.T) {
	for _, c := range []struct {
		name   string
		opcode int
		want   string
	}{
		{"RequestStart", 1, "Request"}, {"RequestStop", 2, "Request"}, {"Query/Start", 1, "Query"},
		{"Start", 1, "Start"}, {"Other", 2, "Other"}, {"RequestStop", 1, "RequestStop"},
	} {
		if got := clr.TaskName(c.name, c.opcode); got != c.want {
			t.Errorf("TaskName(%q, %d) = %q, want %q", c.name, c.opcode, got, c.want)
		}
	}
}
