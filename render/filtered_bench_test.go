package render

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"viewer/trace"
)

// BenchmarkQueryFiltered10M answers filtered viewports of a 10M-event
// trace (64 tracks, 50 shown, 2000 px; the filter keeps one of the
// types) at every zoom from the whole trace down to a few ns per pixel,
// 40 positions each, and reports the p99 and max query times. The mask
// is evaluated once beforehand (reported as eval-ms). The same viewports
// unfiltered give plain-p99-ms, what the filter adds to.
func BenchmarkQueryFiltered10M(b *testing.B) {
	x := benchIndex(b, 10_000_000)
	t0 := time.Now()
	m, err := x.EvaluateFilter(context.Background(), Filter{Types: []trace.TypeID{1}})
	if err != nil {
		b.Fatal(err)
	}
	eval := time.Since(t0)
	first, last := x.Span()
	var ids []trace.TrackID
	for i := range 50 {
		ids = append(ids, trace.TrackID(i))
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var s Slice
	var times, plain []time.Duration
	for b.Loop() {
		times, plain = times[:0], plain[:0]
		for span := int64(last-first) + 1; span >= 2000; span /= 2 {
			for range 40 {
				start := first + trace.Time(rng.Int64N(int64(last-first)-span/2+1))
				vp := Viewport{Start: start, End: start + trace.Time(span), Width: 2000, Tracks: ids}
				q0 := time.Now()
				if err := x.QueryFilteredInto(context.Background(), vp, m, &s); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(q0))
				q0 = time.Now()
				if err := x.QueryInto(context.Background(), vp, &s); err != nil {
					b.Fatal(err)
				}
				plain = append(plain, time.Since(q0))
			}
		}
	}
	slices.Sort(times)
	slices.Sort(plain)
	b.ReportMetric(float64(plain[len(plain)*99/100].Microseconds())/1000, "plain-p99-ms")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(times[len(times)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(len(times)), "queries")
	b.ReportMetric(float64(eval.Milliseconds()), "eval-ms")
	b.ReportMetric(float64(m.Bytes())/1e6, "mask-MB")
}
