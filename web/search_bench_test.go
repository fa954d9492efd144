package web

import (
	"context"
	"math"
	"testing"

	"viewer/render"
	"viewer/trace/synth"
)

// BenchmarkSearch10000 collects the first 10,000 hits of a type-name
// search, as the page's overview strip asks for them, on a 2-million-event
// trace with 64 tracks.
func BenchmarkSearch10000(b *testing.B) {
	g := synth.New(synth.Config{Events: 2_000_000, Tracks: 64, Seed: 11})
	x, err := render.Build(context.Background(), g, render.Options{SpillDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	idx := &index{x: x, r: g, stats: x.Stats()}
	for b.Loop() {
		n := 0
		err := idx.search(context.Background(), "Event3", render.At(math.MinInt64), false, func(SearchHit) bool {
			n++
			return n < 10000
		})
		if err != nil || n != 10000 {
			b.Fatal(n, err)
		}
	}
}
