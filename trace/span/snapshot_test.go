package span

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"viewer/trace"
)

// adder is a Deriver that adds, per event, a slice at a random earlier
// start (so its track is out of order) and one from the event's time to
// the next event's (events 10 ns apart: a contiguous track), an in-order
// slice longer than 2^32 ns every 100th event, and a counter sample (out
// of order every 7th) of how many slices the Builder held before the
// event: what it adds depends on the order of every Builder call.
type adder struct{ rng *rand.Rand }

func (a *adder) Observe(_ trace.Reader, e trace.Event, b *Builder) {
	out := b.Track(Track{Kind: KindSlices, Name: "out of order"})
	in := b.Track(Track{Kind: KindSlices, Name: "in order"})
	c := b.Track(Track{Kind: KindCounter, Name: "c"})
	back := b.Track(Track{Kind: KindState, Name: "back to back"})
	before := b.nslices
	b.Add(Slice{Start: e.Time, End: e.Time + 10, Track: back})
	b.Add(Slice{Start: e.Time - trace.Time(a.rng.IntN(1000)), End: e.Time, Track: out, Name: b.Name(fmt.Sprint(e.Time % 5)), Thread: e.Track, Depth: uint16(e.Time % 3)})
	if e.Time%100 == 0 {
		b.Add(Slice{Start: e.Time, End: e.Time + 1<<33, Track: in})
	}
	t := e.Time
	if t%7 == 0 {
		t -= 50
	}
	b.AddSample(Sample{Time: t, Track: c, Value: float64(before)})
}

func (a *adder) Finish(trace.Reader, *Builder) {}

type noReader struct{ meta trace.Meta }

func (r *noReader) Meta() *trace.Meta                          { return &r.meta }
func (r *noReader) ReadEvent() (trace.Event, error)            { return trace.Event{}, nil }
func (r *noReader) Stack(trace.StackID) []uint64               { return nil }
func (r *noReader) Labels(trace.LabelsID) []trace.Label        { return nil }
func (r *noReader) Details(trace.Event) (trace.Details, error) { return trace.Details{}, nil }

func dump(s *Set) string {
	out := fmt.Sprint(s.Tracks, s.Names, s.Len(), s.All())
	for id := range s.Tracks {
		out += fmt.Sprint(s.TrackSamples(TrackID(id)), s.Column(TrackID(id)).Contiguous())
	}
	return out
}

// TestSnapshot: a snapshot taken after k events equals what a Driver
// shown only those k events finishes with, and stays so while the
// Driver goes on (the chunks it shares are written only past it).
func TestSnapshot(t *testing.T) {
	const n = 5000
	r := &noReader{}
	v := NewDriver(r, &adder{rand.New(rand.NewPCG(1, 2))})
	type snap struct {
		k    int
		set  *Set
		want string
	}
	var snaps []snap
	for i := range n {
		v.Observe(trace.Event{Time: trace.Time(10 * i), Track: trace.NoTrack})
		if k := i + 1; k%1500 == 0 || k == 1 || k == 1024 {
			ref := NewDriver(r, &adder{rand.New(rand.NewPCG(1, 2))})
			for j := range k {
				ref.Observe(trace.Event{Time: trace.Time(10 * j), Track: trace.NoTrack})
			}
			s := snap{k: k, set: v.Snapshot(), want: dump(ref.Finish())}
			if got := dump(s.set); got != s.want {
				t.Fatalf("snapshot after %d events differs", k)
			}
			snaps = append(snaps, s)
		}
	}
	v.Finish()
	for _, s := range snaps {
		if dump(s.set) != s.want {
			t.Fatalf("snapshot after %d events changed", s.k)
		}
	}
}
