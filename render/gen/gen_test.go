package gen

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
