package main

import (
	"context"
	"os"
	"slices"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/perf/perftest"
	"viewer/trace/span"
)

// benchSpans is the derived-track part of `viewer bench`'s report.
type benchSpans struct {
	// DeriveSeconds is the time Build spent deriving slice tracks and
	// indexing them on its reading goroutine, the one the load waits for
	// (span.Split derivers' notes, waits for the goroutines that derive
	// from them, the interval index at the end); DeriveFraction that time
	// over the load's wall time: what deriving adds to the load. On a
	// machine with no idle core those goroutines' work competes with the
	// rest; load_cpu_seconds against a --no-derive run shows that.
	DeriveSeconds  float64 `json:"derive_seconds"`
	DeriveFraction float64 `json:"derive_fraction_of_load"`
	Tracks         int     `json:"tracks"`
	QueryTracks    int     `json:"query_tracks"`
	Slices         int     `json:"slices"`
	Samples        int     `json:"counter_samples"`
	// IndexBytes is the interval index's memory, SliceBytes the slices'
	// (render.Spans.Bytes).
	IndexBytes  int64  `json:"index_bytes"`
	SliceBytes  int64  `json:"slice_bytes"`
	DeriveError string `json:"derive_error,omitempty"`
	// Levels times viewport queries over the derived tracks, as Levels
	// does for the instant tracks.
	Levels []benchLevel `json:"levels"`
}

// generateSched writes a generated scheduler recording of n events to a
// temporary file in dir and returns its name (the caller removes it).
func generateSched(dir string, n int64) (string, error) {
	f, err := os.CreateTemp(dir, "viewer-bench-sched-*.data")
	if err != nil {
		return "", err
	}
	if err := perftest.GenerateSched(f, n, 4, 16); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// sweepSpans reports the derived tracks of x and times queries over
// them at the zoom levels of sweep.
func sweepSpans(ctx context.Context, x *render.Index, loadSeconds float64, seed uint64) (*benchSpans, error) {
	sp := x.Spans()
	if sp == nil {
		if err := x.DeriveErr(); err != nil {
			return &benchSpans{DeriveError: err.Error()}, nil
		}
		return nil, nil
	}
	set := sp.Set()
	b := &benchSpans{DeriveSeconds: x.DeriveTime().Seconds(), Tracks: len(set.Tracks), Slices: set.Len()}
	for id := range set.Tracks {
		b.Samples += len(set.TrackSamples(span.TrackID(id)))
	}
	b.IndexBytes, b.SliceBytes = sp.Bytes()
	if loadSeconds > 0 {
		b.DeriveFraction = b.DeriveSeconds / loadSeconds
	}
	if set.Len() == 0 {
		return b, nil
	}
	// The busiest tracks.
	ids := make([]span.TrackID, len(set.Tracks))
	for i := range ids {
		ids[i] = span.TrackID(i)
	}
	slices.SortStableFunc(ids, func(a, c span.TrackID) int { return set.Column(c).Len() - set.Column(a).Len() })
	ids = ids[:min(len(ids), benchMaxTracks)]
	b.QueryTracks = len(ids)
	first, last := trace.Time(1<<62), trace.Time(-1<<62)
	for id := range set.Tracks {
		if c := set.Column(span.TrackID(id)); c.Len() > 0 {
			first, last = min(first, c.At(0).Start), max(last, c.At(c.Len()-1).End)
		}
	}
	var got render.SpanSlice
	var err error
	b.Levels, err = sweepLevels(first, last, int64(set.Len()), seed, 0x7370, func(start, end trace.Time) (int64, int, error) {
		if err := sp.QueryInto(ctx, render.SpanViewport{Start: start, End: end, Width: benchWidth, Tracks: ids}, &got); err != nil {
			return 0, 0, err
		}
		items := 0
		for _, t := range got.Tracks {
			items += len(t.Items) + len(t.Counters)
		}
		return got.Res, items, nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}
