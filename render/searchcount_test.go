package render

import (
	"context"
	"math"
	"slices"
	"testing"

	"viewer/trace"
	"viewer/trace/synth"
)

// CountHits bins exactly the events Hits yields, over the whole trace and
// over a part of it, with and without predicates.
func TestCountHits(t *testing.T) {
	x := build(t, synth.Config{Events: 4000, Tracks: 6, Types: 8, Seed: 9, MeanGap: 20})
	first, last := x.Span()
	filters := []Filter{
		{},
		{Types: []trace.TypeID{3}},
		{Types: []trace.TypeID{3, 5}, Tracks: []trace.TrackID{2, 4, 4}},
		{Name: "EVENT7"},
		{Name: "no such event"},
		{Where: []Predicate{{"value", OpGe, "990"}}},
	}
	ranges := [][2]trace.Time{{first, last}, {first + (last-first)/3, first + (last-first)/2}, {last, last}, {math.MinInt64, math.MaxInt64}}
	for fi, f := range filters {
		for _, r := range ranges {
			for _, n := range []int{1, 7, 300} {
				want := make([]int64, n)
				for pos, err := range x.Hits(context.Background(), f, At(r[0]), false) {
					if err != nil {
						t.Fatal(err)
					}
					if pos.Time > r[1] {
						break
					}
					want[binOf(uint64(pos.Time-r[0]), uint64(r[1]-r[0])+1, uint64(n))]++
				}
				got := make([]int64, n)
				complete, err := x.CountHits(context.Background(), f, r[0], r[1], got)
				if err != nil || !complete {
					t.Fatalf("filter %d: complete %v, err %v", fi, complete, err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("filter %d, range %v, %d bins: %v, want %v", fi, r, n, got, want)
				}
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := x.CountHits(ctx, Filter{}, first, last, make([]int64, 4)); err == nil {
		t.Error("a canceled count did not fail")
	}
}

func TestBinOf(t *testing.T) {
	for _, c := range []struct{ d, span, n, want uint64 }{
		{0, 10, 3, 0}, {3, 10, 3, 0}, {4, 10, 3, 1}, {9, 10, 3, 2},
		{math.MaxUint64, 0, 4096, 4095}, {1 << 63, 0, 2, 1}, {math.MaxInt64, math.MaxInt64 + 1, 1000, 999},
	} {
		if got := binOf(c.d, c.span, c.n); got != int(c.want) {
			t.Errorf("binOf(%d, %d, %d) = %d, want %d", c.d, c.span, c.n, got, c.want)
		}
	}
}
