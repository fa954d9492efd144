package nettrace

import (
	"bytes"
	"io"
	"testing"
	"unsafe"

	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/nettrace/nettracetest"
)

// TestReuseStrings checks AppendDetails with ReuseStrings on: on every
// event of the all-features file it gives what Details gives (compared
// before the next call), the next event's strings are written where the
// last ones were, and a pass over events of a flat type allocates
// nothing; with it off, a string handed out keeps its text after later
// events are decoded.
func TestReuseStrings(t *testing.T) {
	_, b := allFeatures(t)
	want, _ := readAll(t, b)
	r, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	r.ReuseStrings(true)
	var fields []trace.Field
	var label []byte
	for i := 0; ; i++ {
		e, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if fields, label, err = r.AppendDetails(fields[:0], label[:0], e); err != nil {
			t.Fatal(err)
		}
		d, err := want.Details(e)
		if err != nil {
			t.Fatal(err)
		}
		if got, w := string(export.AppendFields(nil, fields)), string(export.AppendFields(nil, d.Fields)); got != w || string(label) != d.Label {
			t.Errorf("event %d: %s %q, want %s %q", i, got, label, w, d.Label)
		}
	}

	// a flat type with one string
	var buf bytes.Buffer
	w := nettracetest.NewWriter(&buf, nettracetest.TraceInfo{TicksPerSecond: 1e9, PointerSize: 8})
	w.Metadata(0, nettracetest.Metadata{ID: 1, Provider: "P", EventID: 1, Name: "Named",
		Fields: []nettracetest.Field{{Name: "Name", Type: nettracetest.TypeUTF16String}, {Name: "N", Type: nettracetest.TypeUInt32}}})
	w.Threads(nettracetest.Thread{Index: 1, PID: 1, TID: 10})
	var evs []nettracetest.Event
	for i, s := range []string{"alpha", "beta", "gamma"} {
		p, err := nettracetest.EncodePayload([]nettracetest.Field{{Type: nettracetest.TypeUTF16String}, {Type: nettracetest.TypeUInt32}},
			[]trace.Value{trace.StringValue(s), trace.UintValue(uint64(i))})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, nettracetest.Event{MetadataID: 1, Seq: uint32(i + 1), Thread: 1, Capture: 1, Ticks: int64(i), Sorted: true, Payload: p})
	}
	if err := w.Events(true, evs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, reuse := range []bool{false, true} {
		r, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		r.ReuseStrings(reuse)
		var es []trace.Event
		for {
			e, err := r.ReadEvent()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			es = append(es, e)
		}
		if len(es) != 3 {
			t.Fatalf("%d events, want 3", len(es))
		}
		first, _, err := r.AppendDetails(nil, nil, es[0])
		if err != nil || first[0].Value.Str() != "alpha" {
			t.Fatalf("first event: %v, %v", first, err)
		}
		second, _, _ := r.AppendDetails(nil, nil, es[1])
		s1, s2 := first[0].Value.Str(), second[0].Value.Str()
		same := unsafe.StringData(s1) == unsafe.StringData(s2)
		if s2 != "beta" || same != reuse || !reuse && s1 != "alpha" {
			t.Errorf("reuse %v: strings %q then %q, at the same place: %v", reuse, s1, s2, same)
		}
		if !reuse {
			continue
		}
		fields, label := second[:0], []byte(nil)
		allocs := testing.AllocsPerRun(100, func() {
			for _, e := range es {
				fields, label, _ = r.AppendDetails(fields[:0], label[:0], e)
			}
		})
		if allocs != 0 {
			t.Errorf("%v allocations per pass with strings reused", allocs)
		}
	}
}
