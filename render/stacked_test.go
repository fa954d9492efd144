package render

import (
	"context"
	"io"
	"slices"
	"testing"

	"viewer/trace"
	"viewer/trace/synth"
)

// TestStackedEvents compares the stacked-event lists with the events a
// second reader returns: every stacked event of a range, with its time,
// type and stack, and the previous one of the same type.
func TestStackedEvents(t *testing.T) {
	cfg := synth.Config{Events: 50000, Tracks: 8, Types: 5, Seed: 7}
	// Three quarters of the synthetic events carry a stack: the tracks
	// list theirs explicitly. With every event stacked the lists stay
	// implicit; stacked only at first, they start implicit and switch.
	for _, c := range []struct {
		name     string
		from     int // events before this position all get a stack
		explicit bool
	}{{"some", 0, true}, {"all", 1 << 30, false}, {"dense first", 3000, true}} {
		t.Run(c.name, func(t *testing.T) {
			n := checkStacked(t, cfg, func() trace.Reader { return &stackFirst{Reader: synth.New(cfg), from: c.from} })
			if (n > 0) != c.explicit {
				t.Errorf("%d tracks list their stacked events explicitly, want explicit lists %v", n, c.explicit)
			}
		})
	}
}

// stackFirst gives a stack to each event of a reader before position
// from that has none.
type stackFirst struct {
	trace.Reader
	n, from int
}

func (s *stackFirst) ReadEvent() (trace.Event, error) {
	e, err := s.Reader.ReadEvent()
	if s.n++; s.n <= s.from && e.Stack == trace.NoStack {
		e.Stack = 1
	}
	return e, err
}

// checkStacked compares the stacked-event lists of the index of the trace
// open returns with a brute-force pass over the same trace, and returns
// how many tracks keep an explicit list.
func checkStacked(t *testing.T, cfg synth.Config, open func() trace.Reader) (explicit int) {
	x, err := Build(context.Background(), open(), Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, tr := range x.tracks {
		if tr != nil && tr.stacked.len() > 0 {
			explicit++
		}
	}
	r := open()
	var all []StackedEvent
	idx := map[trace.TrackID]int32{}
	counts := map[trace.TypeID]int64{}
	for {
		e, err := r.ReadEvent()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		i := idx[e.Track]
		idx[e.Track]++
		if e.Stack != trace.NoStack {
			all = append(all, StackedEvent{ID: EventID{e.Track, i}, Time: e.Time, Type: e.Type, Stack: e.Stack})
			counts[e.Type]++
		}
	}
	var types []StackedType
	for ty, n := range counts {
		types = append(types, StackedType{ty, n})
	}
	slices.SortFunc(types, func(a, b StackedType) int { return int(a.Type - b.Type) })
	if got := x.StackedTypes(); !slices.Equal(got, types) {
		t.Errorf("StackedTypes = %v, want %v", got, types)
	}
	first, last := x.Span()
	from, to := first+(last-first)/3, first+(last-first)/2
	for tr := range trace.TrackID(cfg.Tracks) {
		var want []StackedEvent
		for _, s := range all {
			if s.ID.Track == tr && s.Time >= from && s.Time < to {
				want = append(want, s)
			}
		}
		got := slices.Collect(x.StackedEvents(tr, from, to))
		if !slices.Equal(got, want) {
			t.Fatalf("track %d: %d stacked events, want %d", tr, len(got), len(want))
		}
		if len(want) == 0 {
			continue
		}
		w := want[0]
		var prev *StackedEvent
		for i := range all {
			if s := &all[i]; s.ID.Track == tr && s.Type == w.Type && s.ID.Index < w.ID.Index {
				prev = s
			}
		}
		pt, ok := x.PrevStacked(tr, w.ID.Index, w.Type)
		if ok != (prev != nil) || (ok && pt != prev.Time) {
			t.Errorf("track %d: PrevStacked = %d %v, want %+v", tr, pt, ok, prev)
		}
	}
	return explicit
}
