package render

import (
	"context"
	"fmt"
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
