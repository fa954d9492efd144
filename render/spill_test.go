package render

import (
	"io"
	"math/rand/v2"
	"testing"

	"viewer/trace"
	"viewer/trace/synth"
)

// TestSpillReadOrders reads every event's spilled header back in several
// orders (forward, forward skipping, backward, random, one type at a
// time) with one runReader, as searches do, and checks each against the
// event read: the slot-based deltas and the lazy forward decoding give
// what was written. 70,000 types put some beyond the 16-bit type column
// (typeEscape) and make slots collide.
func TestSpillReadOrders(t *testing.T) {
	cfg := synth.Config{Events: 30000, Tracks: 5, Types: 70000, Seed: 8, MeanGap: 30}
	x := build(t, cfg)
	ref := synth.New(cfg)
	byTrack := map[trace.TrackID][]trace.Event{}
	for {
		e, err := ref.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		byTrack[e.Track] = append(byTrack[e.Track], e)
	}
	escaped := 0
	rng := rand.New(rand.NewPCG(1, 2))
	for tr, evs := range byTrack {
		check := func(order string, idx []int) {
			rr := &runReader{s: x.spill}
			for _, i := range idx {
				got, err := x.event(rr, EventID{Track: tr, Index: int32(i)})
				want := evs[i]
				if err != nil || got != want {
					t.Fatalf("track %d %s: event %d is %+v, %v; want %+v", tr, order, i, got, err, want)
				}
			}
		}
		n := len(evs)
		var fwd, skip, back, random, oneType []int
		for i := range n {
			fwd = append(fwd, i)
			back = append(back, n-1-i)
			random = append(random, rng.IntN(n))
			if rng.IntN(7) == 0 {
				skip = append(skip, i)
			}
			if evs[i].Type == evs[0].Type || evs[i].Type%64 == evs[n/2].Type%64 {
				oneType = append(oneType, i)
			}
			if evs[i].Type >= typeEscape {
				escaped++
			}
		}
		check("forward", fwd)
		check("skipping", skip)
		check("backward", back)
		check("random", random)
		check("one slot", oneType)
	}
	if escaped == 0 {
		t.Error("no event has a type beyond the type column")
	}
}
