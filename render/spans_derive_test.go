package render

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"viewer/trace"
	"viewer/trace/span"
	"viewer/trace/synth"
)

// gaps derives, per trace track, a slice from each event to the track's
// next one, and a counter of the events' times: what it derives depends
// on every event's time and track.
type gaps struct{ last map[trace.TrackID]trace.Time }

func (g *gaps) Observe(r trace.Reader, e trace.Event, b *span.Builder) {
	t := b.Track(span.Track{Kind: span.KindSlices, Name: "gaps", Of: e.Track, CPU: trace.NoCPU})
	if prev, ok := g.last[e.Track]; ok {
		b.Add(span.Slice{Start: prev, End: e.Time, Track: t, Name: b.Name("gap"), Thread: e.Track})
	}
	g.last[e.Track] = e.Time
	c := b.Track(span.Track{Kind: span.KindCounter, Name: "time", Of: trace.NoTrack, CPU: trace.NoCPU})
	b.AddSample(span.Sample{Time: e.Time, Track: c, Value: float64(e.Time % 1000)})
}

func (g *gaps) Finish(trace.Reader, *span.Builder) {}

// disorder is a reader whose every 37th event comes earlier than the
// one before it, and every 53rd on a track the tables do not hold.
type disorder struct {
	trace.Reader
	n int
}

func (d *disorder) ReadEvent() (trace.Event, error) {
	e, err := d.Reader.ReadEvent()
	d.n++
	if d.n%37 == 0 {
		e.Time -= 5000
	}
	if d.n%53 == 0 {
		e.Track = 1 << 20
	}
	return e, err
}

func disordered() trace.Reader {
	return &disorder{Reader: synth.New(synth.Config{Events: 20000, Tracks: 5, Seed: 9})}
}

func dumpSet(s *span.Set) string {
	out := fmt.Sprint(s.Tracks, s.Names, s.All())
	for id := range s.Tracks {
		out += fmt.Sprint(s.TrackSamples(span.TrackID(id)))
	}
	return out
}

// TestDeriveMatchesBuild: span.Derive (what `viewer spans` prints)
// derives exactly the tracks render.Build keeps beside its index (what
// the /spans API answers from) on a trace with events out of time order
// and on unknown tracks: both clamp the late events as the index does.
func TestDeriveMatchesBuild(t *testing.T) {
	x, err := Build(context.Background(), disordered(), Options{SpillDir: t.TempDir(), Derive: &gaps{last: map[trace.TrackID]trace.Time{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Clamped() == 0 {
		t.Fatal("no event out of order: nothing to compare")
	}
	got, err := span.Derive(disordered(), &gaps{last: map[trace.TrackID]trace.Time{}})
	if err != nil {
		t.Fatal(err)
	}
	if dumpSet(got) != dumpSet(x.Spans().Set()) {
		t.Fatal("span.Derive and render.Build derived different tracks")
	}
	// Unclamped, the same events derive something else: the comparison
	// above can fail.
	r := disordered()
	b, g := span.NewBuilder(), &gaps{last: map[trace.TrackID]trace.Time{}}
	for {
		e, err := r.ReadEvent()
		if err != nil {
			break
		}
		b.See(e.Time)
		g.Observe(r, e, b)
	}
	if dumpSet(b.Finish()) == dumpSet(got) {
		t.Fatal("clamping changed nothing")
	}
	for id := range got.Tracks {
		sm := got.TrackSamples(span.TrackID(id))
		if !slices.IsSortedFunc(sm, func(a, b span.Sample) int { return int(a.Time - b.Time) }) {
			t.Fatal("counter samples out of order")
		}
	}
}

// replay derives, at each event, the next of its slices: tracks of
// every shape a lane is built for.
type replay struct {
	slices []span.Slice
	tracks []span.Track
}

func (p *replay) Observe(_ trace.Reader, _ trace.Event, b *span.Builder) {
	if len(p.slices) == 0 {
		return
	}
	for _, t := range p.tracks {
		b.Track(t)
	}
	b.Add(p.slices[0])
	p.slices = p.slices[1:]
}

func (p *replay) Finish(trace.Reader, *span.Builder) {}

// TestSpansFollowed: the lanes a laneFollower builds while slices are
// derived equal those NewSpans builds from the finished Set, for tracks
// in start order at one depth (back to back, with slices of 2^32 ns and
// more, overlapping, one slice); tracks out of order or at several
// depths are built from the Set.
func TestSpansFollowed(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := &replay{}
	type shape struct {
		name     string
		followed bool
	}
	shapes := []shape{{"back to back", true}, {"long", true}, {"overlaps", true}, {"one", true}, {"out of order", false}, {"depths", false}, {"long last", true}}
	for _, s := range shapes {
		p.tracks = append(p.tracks, span.Track{Kind: span.KindSlices, Name: s.name, Of: trace.NoTrack, CPU: trace.NoCPU})
	}
	const n = 20000 // a few chunks of a Column per track, and a rest
	ts := make([]trace.Time, len(shapes))
	for range n {
		k := rng.IntN(len(shapes))
		if k == 3 && ts[k] > 0 {
			continue
		}
		d := trace.Time(1 + rng.IntN(1000))
		s := span.Slice{Start: ts[k], Track: span.TrackID(k)}
		switch shapes[k].name {
		case "long":
			if rng.IntN(100) == 0 {
				d = 1<<32 + trace.Time(rng.IntN(1000))
			}
		case "overlaps":
			d *= 3
		case "out of order":
			if rng.IntN(50) == 0 {
				s.Start -= 100
			}
		case "depths":
			s.Depth = uint16(rng.IntN(2))
		}
		s.End = s.Start + d
		if shapes[k].name != "overlaps" {
			ts[k] = s.End + trace.Time(rng.IntN(3))
		} else {
			ts[k] += d / 2
		}
		p.slices = append(p.slices, s)
	}
	// The last slice of "long last" alone makes its block's total 2^32
	// ns or more.
	p.slices = append(p.slices, span.Slice{Start: ts[6], End: ts[6] + 1<<32 + 5, Track: 6})
	r := synth.New(synth.Config{Events: int64(len(p.slices)), Tracks: 2, Seed: 1})
	v := span.NewDriver(r, p)
	f := &laneFollower{}
	v.Follow(f)
	for {
		e, err := r.ReadEvent()
		if err != nil {
			break
		}
		v.Observe(e)
	}
	set := v.Finish()
	want, got := NewSpans(set), newSpans(set, f)
	for k, s := range shapes {
		id := span.TrackID(k)
		if n := set.Column(id).Len(); (f.built(id, n) != nil) != s.followed || n == 0 {
			t.Errorf("%s: %d slices, lane built while deriving %v, want %v", s.name, n, f.built(id, n) != nil, s.followed)
		}
		if fmt.Sprintf("%+v", got.lanes[id]) != fmt.Sprintf("%+v", want.lanes[id]) {
			t.Errorf("%s: the lanes built while deriving differ from those built after", s.name)
		}
	}
	if l := got.lanes[1][0]; l.pts == nil {
		t.Error("the long lane has compact points")
	}
	if l := got.lanes[6][0]; l.pts == nil {
		t.Error("the lane whose last block is long has compact points")
	}
	if l := got.lanes[2][0]; l.maxEnd == nil {
		t.Error("the overlapping lane has no maxEnd")
	}
}
