package render

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/synth"
)

// BenchmarkBuildLive is Build of 10M synthetic events without and with
// publication of snapshots every 100 ms (the default): the cost of
// publishing, including the spill runs it cuts short.
func BenchmarkBuildLive(b *testing.B) {
	const n = 10_000_000
	for _, live := range []bool{false, true} {
		b.Run(fmt.Sprintf("live=%v", live), func(b *testing.B) {
			snaps := 0
			cpu := startCPU()
			for b.Loop() {
				opts := Options{SpillDir: b.TempDir()}
				stop := make(chan struct{})
				counted := make(chan int)
				if live {
					opts.Live = NewLive(0)
					go func() {
						k := 0
						for {
							select {
							case <-opts.Live.Updated():
								if x := opts.Live.Index(); x != nil && x.Growing() {
									k++
								}
								if x := opts.Live.Index(); x != nil && !x.Growing() {
									counted <- k
									return
								}
							case <-stop:
								counted <- k
								return
							}
						}
					}()
				}
				x, err := Build(context.Background(), synth.New(synth.Config{Events: n, Tracks: 64, Seed: 1}), opts)
				if err != nil {
					b.Fatal(err)
				}
				if live {
					close(stop)
					snaps += <-counted
				}
				x.Close()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
			cpu.report(b, n)
			if live {
				b.ReportMetric(float64(snaps)/float64(b.N), "snapshots/op")
			}
		})
	}
}

// BenchmarkSnapshotQuery measures viewport queries (2000 px, 50 tracks)
// on a 10M-event index without time cells, as a snapshot is, at every
// zoom level from the whole trace down to about 1 ns per pixel, at
// random places: p50 and p99 per level. cells=true is the finished
// index, for comparison.
func BenchmarkSnapshotQuery(b *testing.B) {
	x := benchIndex(b, 10_000_000)
	first, last := x.Span()
	ids := make([]trace.TrackID, 50)
	for i := range ids {
		ids[i] = trace.TrackID(i)
	}
	bare := withoutCells(x)
	for _, idx := range []struct {
		name string
		x    *Index
	}{{"cells=false", bare}, {"cells=true", x}} {
		for w := int64(last-first) + 1; w >= 2000; w /= 8 {
			b.Run(fmt.Sprintf("%s/span=%s", idx.name, time.Duration(w)), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, uint64(w)))
				var s Slice
				var took []time.Duration
				for b.Loop() {
					start := first + trace.Time(rng.Int64N(int64(last-first)-w+2))
					vp := Viewport{Start: start, End: start + trace.Time(w), Width: 2000, Tracks: ids}
					t0 := time.Now()
					if err := idx.x.QueryInto(context.Background(), vp, &s); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(t0))
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
			})
		}
	}
}
