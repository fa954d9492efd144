package main

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/perf/perftest"
	"viewer/trace/span"
)

// benchSpans is the derived-track part of `viewer bench`'s report.
type benchSpans struct {
	// DeriveSeconds is the time Build spent deriving slice tracks and
	// indexing them (on its reading goroutine); DeriveFraction that time
	// over the load's wall time.
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
	extent := float64(last-first) + 1
	minWin := max(extent*benchWidth/float64(set.Len()), benchWidth)
	ratio := math.Pow(minWin/extent, 1.0/benchLevels)
	rng := rand.New(rand.NewPCG(seed, 0x7370))
	var got render.SpanSlice
	for lv := 0; lv <= benchLevels; lv++ {
		win := int64(math.Max(1, extent*math.Pow(ratio, float64(lv))))
		l := benchLevel{Level: lv, WindowNS: win, Queries: benchQueries}
		times := make([]float64, 0, benchQueries)
		cpu := make([]float64, 0, benchQueries)
		items := 0
		for range benchQueries {
			start := first
			if room := int64(last-first) + 1 - win; room > 0 {
				start += trace.Time(rng.Int64N(room + 1))
			}
			vp := render.SpanViewport{Start: start, End: start + trace.Time(win), Width: benchWidth, Tracks: ids}
			c0, cok := processCPU()
			t0 := time.Now()
			if err := sp.QueryInto(ctx, vp, &got); err != nil {
				return nil, err
			}
			times = append(times, float64(time.Since(t0).Nanoseconds())/1e6)
			if c1, ok := processCPU(); ok && cok {
				cpu = append(cpu, float64((c1-c0).Nanoseconds())/1e6)
			}
			for _, t := range got.Tracks {
				items += len(t.Items) + len(t.Counters)
			}
			l.ResNS = got.Res
		}
		l.Items = float64(items) / benchQueries
		l.P50MS, l.P99MS, l.MaxMS = percentiles(times)
		if len(cpu) == len(times) {
			l.CPUP50MS, l.CPUP99MS, l.CPUMaxMS = percentiles(cpu)
		}
		b.Levels = append(b.Levels, l)
	}
	return b, nil
}
