package web

import (
	"encoding/json"
	"fmt"
	"testing"

	"viewer/trace"
	"viewer/trace/span"
	"viewer/trace/synth"
)

// gapDeriver makes, per trace track, a slice from each event to the
// next one of the track and a counter of the events' values: a
// format-neutral stand-in for the formats' derivers.
type gapDeriver struct {
	last map[trace.TrackID]trace.Time
}

func (g *gapDeriver) Observe(r trace.Reader, e trace.Event, b *span.Builder) {
	if g.last == nil {
		g.last = map[trace.TrackID]trace.Time{}
	}
	t := b.Track(span.Track{Kind: span.KindSlices, Name: "gaps", Of: e.Track, CPU: trace.NoCPU})
	if prev, ok := g.last[e.Track]; ok {
		b.Add(span.Slice{Start: prev, End: e.Time, Track: t, Name: b.Name("gap"), Thread: e.Track,
			Args: b.Args([]trace.Field{{Name: "value", Value: trace.IntValue(synth.Value(e))}})})
	}
	g.last[e.Track] = e.Time
	c := b.Track(span.Track{Kind: span.KindCounter, Name: "value", Of: trace.NoTrack, CPU: trace.NoCPU})
	b.AddSample(span.Sample{Time: e.Time, Track: c, Value: float64(synth.Value(e))})
}

func (g *gapDeriver) Finish(trace.Reader, *span.Builder) {}

// TestSpansAPI: GET /spans answers a viewport over the derived tracks
// (the counts of a full view add up to every slice, counters carry their
// extremes), GET /spans/{slice} a slice's arguments, and bad requests
// get 400.
func TestSpansAPI(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), func(c *Config) {
		c.Derive = func(trace.Reader) span.Deriver { return &gapDeriver{} }
	})
	const events, tracks = 3000, 4
	_, id, msg := ts.upload("s.synth", synth.File(events, 7, tracks))
	if id == "" {
		t.Fatal(msg)
	}
	ts.waitReady(id)
	resp, b := ts.do("GET", fmt.Sprintf("/api/traces/%s/spans?from=%d&to=%d&width=300", id, -1, int64(1)<<40), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("spans: %d %s", resp.StatusCode, b)
	}
	var rep spansReply
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	slices, counters, maxV := 0, 0, 0.0
	for _, tr := range rep.Tracks {
		for _, it := range tr.Items {
			slices += int(it.Count)
		}
		for _, c := range tr.Counters {
			counters += int(c.Count)
			maxV = max(maxV, c.Max)
		}
	}
	if rep.Total < 2 || slices == 0 || counters != events {
		t.Fatalf("%d derived tracks, %d slices, %d counter samples (want %d)", rep.Total, slices, counters, events)
	}
	// Every event but each track's first ends a gap.
	nonEmpty := 0
	for _, tr := range rep.Tracks {
		if tr.Kind == "slices" {
			nonEmpty++
		}
	}
	if slices != events-nonEmpty {
		t.Errorf("%d slices over %d tracks, want %d", slices, nonEmpty, events-nonEmpty)
	}
	resp, b = ts.do("GET", "/api/traces/"+id+"/spans/0/0", nil)
	var one spanReply
	if resp.StatusCode != 200 || json.Unmarshal(b, &one) != nil || len(one.Args) != 1 || one.Args[0].Name != "value" || one.DurationNS != one.End-one.Start {
		t.Errorf("spans/0: %d %s", resp.StatusCode, b)
	}
	for _, q := range []string{"from=5&to=5&width=10", "from=0&to=10&width=0", "from=x&to=10&width=10", "from=0&to=10&width=10&tracks=99", "from=0&to=10&width=99999"} {
		if resp, b := ts.do("GET", "/api/traces/"+id+"/spans?"+q, nil); resp.StatusCode != 400 {
			t.Errorf("spans?%s: %d %s, want 400", q, resp.StatusCode, b)
		}
	}
	if resp, _ := ts.do("GET", "/api/traces/"+id+"/spans/0/999999", nil); resp.StatusCode != 404 {
		t.Errorf("spans/999999: %d, want 404", resp.StatusCode)
	}
}
