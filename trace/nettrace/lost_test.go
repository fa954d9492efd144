package nettrace

import (
	"bytes"
	"testing"

	"viewer/trace"
	"viewer/trace/nettrace/nettracetest"
	"viewer/trace/tracetest"
)

// TestLostPositions checks each lost-event gap of the writer-made fixture
// (drops on two threads, found by a sequence-number jump, a sequence point
// and a thread removal): its count, the thread that lost the events and
// where on the timeline the loss shows.
func TestLostPositions(t *testing.T) {
	s, b := allFeatures(t)
	r, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if res := tracetest.Check(t, r, false); res.Err != nil {
		t.Fatal(res.Err)
	}
	at := func(ticks int64) trace.Time { return s.clock.Time(ticks) }
	type gap struct {
		tid   int64
		time  trace.Time
		count int64
	}
	want := []gap{
		{1000, at(8000), 2}, // thread 1 jumps from sequence 3 to 6
		{1000, at(9000), 2}, // the sequence point says thread 1 reached 8
		{1001, at(9400), 6}, // thread 2 removed at 10 after its 4th event; timed at the last event read, in file order
	}
	m := r.Meta()
	var got []gap
	for _, g := range m.Lost {
		got = append(got, gap{m.Tracks[g.Track].TID, g.Time, g.Count})
	}
	if len(got) != len(want) {
		t.Fatalf("gaps %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("gap %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestBeforeSyncTime checks that events earlier than the trace's sync time
// keep their negative times (nothing is clamped to the origin).
func TestBeforeSyncTime(t *testing.T) {
	var buf bytes.Buffer
	w := nettracetest.NewWriter(&buf, nettracetest.TraceInfo{SyncTicks: 10_000, TicksPerSecond: 1e9, PointerSize: 8})
	w.Metadata(0, nettracetest.Metadata{ID: 1, Provider: "P", EventID: 1, Name: "E"})
	w.Threads(nettracetest.Thread{Index: 1, PID: 1, TID: 1})
	w.Events(true,
		nettracetest.Event{MetadataID: 1, Seq: 1, Thread: 1, Capture: 1, Ticks: 5000, Sorted: true},
		nettracetest.Event{MetadataID: 1, Seq: 2, Thread: 1, Capture: 1, Ticks: 12_000, Sorted: true})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	res := tracetest.Check(t, r, true)
	if res.Err != nil || len(res.Events) != 2 || res.Events[0].Time != -5000 || res.Events[1].Time != 2000 || len(r.Meta().Notices) != 0 {
		t.Errorf("events %+v, notices %q, err %v", res.Events, r.Meta().Notices, res.Err)
	}
}

// TestRepeatedFieldName checks that a field name the metadata repeats reads
// as its first field's value in ReadFields, as in Details (the fuzzer found
// ReadFields giving the last).
func TestRepeatedFieldName(t *testing.T) {
	var buf bytes.Buffer
	w := nettracetest.NewWriter(&buf, nettracetest.TraceInfo{TicksPerSecond: 1e9, PointerSize: 8})
	w.Metadata(0, nettracetest.Metadata{ID: 1, Provider: "P", EventID: 1, Name: "E", Fields: []nettracetest.Field{
		{Name: "i", Type: nettracetest.TypeUInt32}, {Name: "i", Type: nettracetest.TypeUInt32}, {Name: "j", Type: nettracetest.TypeUInt32}}})
	w.Threads(nettracetest.Thread{Index: 1, PID: 1, TID: 1})
	w.Events(true, nettracetest.Event{MetadataID: 1, Seq: 1, Thread: 1, Capture: 1, Ticks: 10, Sorted: true,
		Payload: []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	e, err := r.ReadEvent()
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Details(e)
	if err != nil {
		t.Fatal(err)
	}
	checkDecoders(t, r, e, d)
	vals := make([]trace.Value, 2)
	if !r.ReadFields(e, []string{"i", "j"}, vals) || vals[0].String() != "1" || vals[1].String() != "3" {
		t.Errorf("ReadFields i, j = %v", vals)
	}
}
