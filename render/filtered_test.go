package render

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"viewer/trace"
	"viewer/trace/synth"
)

// TestQueryFilteredBruteForce compares filtered viewports with the
// matching events counted per bucket from the trace's own events.
func TestQueryFilteredBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 16))
	for round := range 40 {
		cfg := randomConfig(rng)
		evs := events(t, cfg)
		x := build(t, cfg)
		byTrack := perTrack(evs)
		tracks := x.Tracks()
		f, want := randomTypeFilter(rng, cfg)
		m, err := x.EvaluateFilter(context.Background(), f)
		if err != nil || !m.Complete {
			t.Fatalf("round %d: EvaluateFilter: %v (complete %v)", round, err, m != nil && m.Complete)
		}
		var total int64
		for _, tid := range tracks {
			var n int64
			for _, e := range byTrack[tid] {
				if want(e) {
					n++
				}
			}
			if got := m.Count(tid); got != n {
				t.Fatalf("round %d: track %d: %d matching, want %d", round, tid, got, n)
			}
			total += n
		}
		if m.Total() != total {
			t.Fatalf("round %d: total %d, want %d", round, m.Total(), total)
		}
		for range 10 {
			vp := randomViewport(rng, x, tracks)
			var s Slice
			if err := x.QueryFilteredInto(context.Background(), vp, m, &s); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			res, start, nb, _ := Resolution(vp)
			for k, ts := range s.Tracks {
				if ts.Track != vp.Tracks[k] {
					t.Fatalf("round %d: track %d at %d, want %d", round, ts.Track, k, vp.Tracks[k])
				}
				var wantItems []Item
				for i, e := range byTrack[ts.Track] {
					b := floorDiv(int64(e.Time-start), res)
					if b < 0 || b >= int64(nb) || !want(e) {
						continue
					}
					if n := len(wantItems); n > 0 && wantItems[n-1].Bucket == int32(b) {
						wantItems[n-1].Count++
						continue
					}
					wantItems = append(wantItems, Item{Bucket: int32(b), Count: 1, First: int32(i), Time: e.Time, Type: e.Type})
				}
				if len(ts.Items) != len(wantItems) {
					t.Fatalf("round %d: track %d: %d items, want %d", round, ts.Track, len(ts.Items), len(wantItems))
				}
				for j, it := range ts.Items {
					w := wantItems[j]
					if it.Bucket != w.Bucket || it.Count != w.Count || it.First != w.First {
						t.Fatalf("round %d: track %d item %d: %+v, want bucket %d count %d first %d", round, ts.Track, j, it, w.Bucket, w.Count, w.First)
					}
					if it.Count == 1 && (it.Time != w.Time || it.Type != w.Type) {
						t.Fatalf("round %d: track %d item %d: event %+v, want time %d type %d", round, ts.Track, j, it, w.Time, w.Type)
					}
					if !want(byTrack[ts.Track][it.First]) {
						t.Fatalf("round %d: track %d item %d: type %d of a non-matching event", round, ts.Track, j, it.Type)
					}
				}
			}
		}
	}
}

// randomTypeFilter returns a filter on event types and its brute-force
// model.
func randomTypeFilter(rng *rand.Rand, cfg synth.Config) (Filter, func(trace.Event) bool) {
	types := max(cfg.Types, 1)
	var set []trace.TypeID
	for ty := range types {
		if rng.IntN(3) == 0 {
			set = append(set, trace.TypeID(ty))
		}
	}
	if len(set) == 0 {
		return Filter{Types: []trace.TypeID{trace.TypeID(types + 5)}}, func(trace.Event) bool { return false }
	}
	return Filter{Types: set}, func(e trace.Event) bool { return slices.Contains(set, e.Type) }
}

// TestEvaluateFilterBudget checks that a filter cut off by its work
// budget returns a partial mask holding only true matches.
func TestEvaluateFilterBudget(t *testing.T) {
	cfg := synth.Config{Events: 5000, Tracks: 4, Types: 3, Seed: 3}
	x := build(t, cfg)
	f := Filter{Where: []Predicate{{Field: "label", Op: OpContains, Value: ""}}, Budget: 100}
	m, err := x.EvaluateFilter(context.Background(), f)
	if !errors.Is(err, ErrBudget) || m == nil || m.Complete {
		t.Fatalf("err %v, mask %v: want a partial mask and ErrBudget", err, m)
	}
	if m.Total() == 0 || m.Total() > 100 {
		t.Fatalf("%d matches within a budget of 100 decodes", m.Total())
	}
	full, err := x.EvaluateFilter(context.Background(), Filter{Where: f.Where})
	if err != nil || !full.Complete || full.Total() != x.Events() {
		t.Fatalf("unbounded: err %v, %d of %d", err, full.Total(), x.Events())
	}
}

// TestSeek checks random access into a mask's events table against the
// k-th hit of a search from the range's start.
func TestSeek(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for round := range 20 {
		cfg := randomConfig(rng)
		cfg.MeanGap = 3 // many events at one time
		x := build(t, cfg)
		f, _ := randomTypeFilter(rng, cfg)
		m, err := x.EvaluateFilter(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		first, last := x.Span()
		lo := first + trace.Time(rng.Int64N(int64(last-first)/2+1))
		var tracks []trace.TrackID
		for _, id := range x.Tracks() {
			if rng.IntN(2) == 0 {
				tracks = append(tracks, id)
			}
		}
		g := f
		g.Tracks = tracks
		var all []Position
		for p, err := range x.Hits(context.Background(), g, At(lo), false) {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, p)
		}
		if n := x.CountMasked(m, tracks, lo, last); n != int64(len(all)) {
			t.Fatalf("round %d: CountMasked %d, want %d", round, n, len(all))
		}
		for k := range len(all) + 2 {
			from, ok := x.Seek(m, tracks, lo, int64(k))
			if ok != (k < len(all)) {
				t.Fatalf("round %d: Seek(%d) ok %v with %d rows", round, k, ok, len(all))
			}
			if !ok {
				continue
			}
			for p, err := range x.Hits(context.Background(), g, from, false) {
				if err != nil {
					t.Fatal(err)
				}
				if p != all[k] {
					t.Fatalf("round %d: row %d: %+v, want %+v", round, k, p, all[k])
				}
				break
			}
		}
	}
}
