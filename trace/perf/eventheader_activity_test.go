package perf

import (
	"bytes"
	"fmt"
	"testing"

	"viewer/trace/perf/eventheader"
	"viewer/trace/perf/eventheader/eventheadertest"
	"viewer/trace/perf/perftest"
	"viewer/trace/perf/tracefs/tracefstest"
	"viewer/trace/span"
)

// TestEventHeaderActivities writes EventHeader user_events with activity
// opcodes into a perf.data file: a parent activity with a nested child
// (RelatedActivityId the parent), an unpaired stop and an unfinished
// start, on two threads; the derived slices pair and nest as the ids say.
func TestEventHeaderActivities(t *testing.T) {
	const tp, id = "Demo_L4K1", 1000
	st := uint64(perftest.SampleIdentifier | perftest.SampleIP | perftest.SampleTID | perftest.SampleTime | perftest.SampleCPU | perftest.SamplePeriod | perftest.SampleRaw)
	var f memFile
	wr, err := perftest.NewWriter(&f, perftest.WriterOptions{
		Formats: []tracefstest.Format{{System: "user_events", Text: perftest.EventHeaderFormat(tp, id)}},
		Attrs:   []perftest.Attr{{Name: "user_events:" + tp, Type: perftest.TypeTracepoint, Config: id, SampleType: st, SampleIDAll: true, IDs: []uint64{10}}},
		Arch:    "x86_64",
	})
	if err != nil {
		t.Fatal(err)
	}
	act := func(b byte) []byte {
		g := make([]byte, 16)
		g[0], g[15] = b, 0x55
		return g
	}
	ev := func(tid int32, time uint64, name string, opcode uint8, a, rel []byte) {
		raw := []byte{id & 0xff, id >> 8, 0, 0, byte(tid), byte(tid >> 8), 0, 0}
		raw = eventheadertest.AppendEvent(raw, eventheadertest.EventDef{
			Header: eventheadertest.Header{Level: 4, ID: 1, Opcode: opcode}, Name: name, Activity: a, Related: rel,
			Fields:  []eventheadertest.FieldDef{{Name: "n", Encoding: eventheadertest.EncValue32}},
			Payload: []byte{byte(time), 0, 0, 0},
		})
		wr.Sample(perftest.Sample{PID: 1, TID: tid, Time: time, CPU: 0, Period: 1, IP: 1, Raw: raw})
	}
	ev(7, 100, "Orphan", 2, act(9), nil)      // stop without start
	ev(7, 200, "Request", 1, act(1), nil)     // 200–800
	ev(7, 300, "Query", 1, act(2), act(1))    // 300–400, under Request
	ev(7, 400, "Query", 2, act(2), nil)       //
	ev(8, 450, "Job", 1, act(3), act(1))      // another thread: depth 0
	ev(8, 500, "Job", 2, act(3), nil)         //
	ev(7, 600, "Plain", 0, act(4), nil)       // opcode 0: no slice
	ev(7, 800, "RequestDone", 2, act(1), nil) // a stop named otherwise
	ev(7, 900, "Forever", 1, act(5), nil)     // never stops
	if err := func() error { wr.FinishedRound(); return wr.Close() }(); err != nil {
		t.Fatal(err)
	}
	readAll(t, f.b) // the file reads cleanly
	r, err := NewReader(bytes.NewReader(f.b), int64(len(f.b)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := eventheader.NewActivities()
	a.Only = r.IsEventHeader
	set, err := span.Derive(r, a)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range set.All() {
		tr := set.Tracks[s.Track]
		got = append(got, fmt.Sprintf("%s %s %d-%d d%d f%d", r.Meta().Tracks[tr.Of].Name, set.Name(s.Name), s.Start, s.End, s.Depth, s.Flags))
	}
	th7, th8 := r.Meta().Tracks[r.thread(1, 7)].Name, r.Meta().Tracks[r.thread(1, 8)].Name
	const prov = "Demo" // the provider part of the tracepoint name Demo_L4K1
	want := []string{
		fmt.Sprintf("%s %s:Orphan 100-100 d0 f%d", th7, prov, span.OpenStart),
		fmt.Sprintf("%s %s:Request 200-800 d0 f0", th7, prov),
		fmt.Sprintf("%s %s:Query 300-400 d1 f0", th7, prov),
		fmt.Sprintf("%s %s:Forever 900-900 d0 f%d", th7, prov, span.OpenEnd),
		fmt.Sprintf("%s %s:Job 450-500 d0 f0", th8, prov),
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("slices\n got %q\nwant %q", got, want)
	}
}
