package nettrace

import (
	"math/rand/v2"
	"slices"
	"testing"

	"viewer/trace"
)

// TestOrder checks the run-merging sort against slices.SortStableFunc on
// random regions: interleaved sorted runs (the runtime's layout), random
// times with many ties, and more runs than maxChains.
func TestOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var r Reader
	for iter := range 2000 {
		n := rng.IntN(300)
		threads := 1 + rng.IntN(12)
		if iter%10 == 0 {
			threads = 1 + rng.IntN(200)
		}
		clock := make([]trace.Time, threads)
		r.region, r.runStarts, r.next = r.region[:0], r.runStarts[:0], 0
		for i := range n {
			th := rng.IntN(threads)
			if iter%3 == 0 {
				clock[th] = trace.Time(rng.IntN(50)) // random, many ties
			} else {
				clock[th] += trace.Time(rng.IntN(5))
			}
			r.push(trace.Event{Time: clock[th], Seq: uint32(i)})
		}
		want := slices.Clone(r.region)
		slices.SortStableFunc(want, byTime)
		r.order()
		var got []trace.Event
		for r.left > 0 {
			got = append(got, r.region[r.pop()])
		}
		if got == nil {
			got = r.region[r.next:]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("iteration %d (%d events, %d threads): order differs from a stable sort", iter, n, threads)
		}
		if len(r.runStarts) != 0 {
			t.Fatal("runStarts not reset")
		}
	}
}
