package synth

import (
	"errors"
	"io"
	"testing"

	"viewer/trace"
	"viewer/trace/tracetest"
)

func TestInvariantsAndDeterminism(t *testing.T) {
	cfg := Config{Events: 20000, Tracks: 9, Types: 13, Seed: 3, LostEvery: 1000, MarkEvery: 512, Truncate: true}
	a := tracetest.Check(t, New(cfg), true)
	b := tracetest.Check(t, New(cfg), true)
	if len(a.Events) != 20000 || len(b.Events) != 20000 {
		t.Fatalf("%d and %d events", len(a.Events), len(b.Events))
	}
	for i := range a.Events {
		if a.Events[i] != b.Events[i] {
			t.Fatalf("event %d differs between runs: %+v %+v", i, a.Events[i], b.Events[i])
		}
	}
	if !errors.Is(a.Err, trace.ErrTruncated) {
		t.Errorf("truncated trace ended with %v", a.Err)
	}
	g := New(cfg)
	r := tracetest.Check(t, g, true)
	m := g.Meta()
	if len(m.Lost) != 20 || len(m.Markers) != 40 {
		t.Errorf("%d gaps, %d markers", len(m.Lost), len(m.Markers))
	}
	bursts, stacks, labels := 0, 0, 0
	seen := map[trace.TrackID]bool{}
	for i, e := range r.Events {
		if i > 0 && e.Time == r.Events[i-1].Time {
			bursts++
		}
		if e.Stack != trace.NoStack {
			stacks++
		}
		if e.Labels != trace.NoLabels {
			labels++
		}
		seen[e.Track] = true
		d, err := g.Details(e)
		if err != nil || len(d.Fields) != 4 || d.Fields[1].Value.Int() != Value(e) || d.Label == "" {
			t.Fatalf("details of %+v: %+v %v", e, d, err)
		}
	}
	if bursts == 0 || stacks == 0 || labels == 0 || len(seen) != cfg.Tracks {
		t.Errorf("bursts %d, stacks %d, labels %d, tracks %d", bursts, stacks, labels, len(seen))
	}
	if _, err := New(Config{}).ReadEvent(); err != io.EOF {
		t.Errorf("empty trace: %v", err)
	}
}

// TestReadEvents checks that ReadEvents yields what ReadEvent does, in
// batches of any size, and ends with the same error.
func TestReadEvents(t *testing.T) {
	cfg := Config{Events: 5000, Tracks: 7, Seed: 5, LostEvery: 333, MarkEvery: 100, Truncate: true}
	want := tracetest.Check(t, New(cfg), true)
	g := New(cfg)
	var got []trace.Event
	var err error
	for size := 1; err == nil; size = size*3%1000 + 1 {
		buf := make([]trace.Event, size)
		var n int
		n, err = g.ReadEvents(buf)
		if n < 0 || n > size || err == nil && n != size {
			t.Fatalf("ReadEvents(%d) = %d, %v", size, n, err)
		}
		got = append(got, buf[:n]...)
	}
	if len(got) != len(want.Events) || !errors.Is(err, trace.ErrTruncated) {
		t.Fatalf("%d events ending with %v, want %d ending with %v", len(got), err, len(want.Events), want.Err)
	}
	for i := range got {
		if got[i] != want.Events[i] {
			t.Fatalf("event %d: %+v, want %+v", i, got[i], want.Events[i])
		}
	}
	if m := g.Meta(); len(m.Lost) != 15 || len(m.Markers) != 50 {
		t.Errorf("%d gaps, %d markers", len(m.Lost), len(m.Markers))
	}
}

// TestDecodeFields checks that every choice of fields decodes to what
// Details gives.
func TestDecodeFields(t *testing.T) {
	g := New(Config{Events: 500, Seed: 4})
	r := tracetest.Check(t, g, true)
	for i, e := range r.Events {
		d, err := g.Details(e)
		if err != nil {
			t.Fatal(err)
		}
		idx := []int{i % 4, (i / 4) % 5, 3}
		vals := make([]trace.Value, len(idx))
		if err := g.DecodeFields(e, idx, vals); err != nil {
			t.Fatal(err)
		}
		for j, k := range idx {
			want := trace.Value{}
			if k < len(d.Fields) {
				want = d.Fields[k].Value
			}
			if vals[j].String() != want.String() || vals[j].Kind() != want.Kind() {
				t.Fatalf("event %d field %d: %v, want %v", i, k, vals[j], want)
			}
		}
	}
	if err := g.DecodeFields(trace.Event{}, []int{0}, make([]trace.Value, 1)); err == nil {
		t.Error("a zero event decoded")
	}
}

// TestAppendDetails checks that AppendDetails gives what Details does.
func TestAppendDetails(t *testing.T) {
	g := New(Config{Events: 300, Seed: 6})
	r := tracetest.Check(t, g, true)
	var fields []trace.Field
	var label []byte
	for _, e := range r.Events {
		d, err := g.Details(e)
		if err != nil {
			t.Fatal(err)
		}
		var aerr error
		fields, label, aerr = g.AppendDetails(fields[:0], label[:0], e)
		if aerr != nil || string(label) != d.Label || len(fields) != len(d.Fields) {
			t.Fatalf("AppendDetails: %v %q %v, Details %v %q", fields, label, aerr, d.Fields, d.Label)
		}
		for i := range fields {
			if fields[i].Name != d.Fields[i].Name || fields[i].Value.String() != d.Fields[i].Value.String() {
				t.Fatalf("field %d: %v, Details %v", i, fields[i], d.Fields[i])
			}
		}
	}
}
