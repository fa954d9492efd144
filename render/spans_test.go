package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"viewer/trace"
	"viewer/trace/perf"
	"viewer/trace/perf/perftest"
	"viewer/trace/span"
)

// randomSet makes derived tracks with random slices: track 0 a CPU-like
// lane of back-to-back slices of wildly mixed lengths, with gaps of 0-2
// ns between them (with contig none: a contiguous lane), track 1 nested
// slices at depths 0..2 with overlaps, track 2 a counter. With long, a
// few CPU slices last 2^33 ns and more (lanes that do not fit 32-bit
// points).
func randomSet(rng *rand.Rand, n int, long, contig bool) *span.Set {
	b := span.NewBuilder()
	cpu := b.Track(span.Track{Kind: span.KindCPU, Name: "CPU 0", Of: trace.NoTrack})
	nest := b.Track(span.Track{Kind: span.KindSlices, Name: "activities", Of: trace.NoTrack})
	ctr := b.Track(span.Track{Kind: span.KindCounter, Name: "heap", Of: trace.NoTrack})
	name := b.Name("x")
	t := trace.Time(0)
	for range n {
		d := trace.Time(1 + rng.IntN(10))
		if rng.IntN(50) == 0 {
			d = trace.Time(rng.IntN(100000))
		}
		if long && rng.IntN(2000) == 0 {
			d = 1<<33 + trace.Time(rng.Int64N(1<<33))
		}
		gap := trace.Time(rng.IntN(3))
		if contig {
			gap = 0
		}
		b.Add(span.Slice{Start: t, End: t + d, Track: cpu, Name: name})
		t += d + gap
	}
	for range n / 4 {
		s := trace.Time(rng.IntN(int(t)))
		b.Add(span.Slice{Start: s, End: s + trace.Time(rng.IntN(2000)), Track: nest, Name: name, Depth: uint16(rng.IntN(3))})
	}
	for i := range n {
		b.AddSample(span.Sample{Time: trace.Time(i * int(t) / n), Track: ctr, Value: float64(rng.IntN(1000))})
	}
	// Overlapping slices at one depth: a lane that is all of its track's
	// slices, not contiguous.
	over := b.Track(span.Track{Kind: span.KindSlices, Name: "overlapping", Of: trace.NoTrack})
	for range n / 4 {
		s := trace.Time(rng.IntN(int(min(t, 1<<20)))) // dense enough to overlap
		b.Add(span.Slice{Start: s, End: s + trace.Time(rng.IntN(2000)), Track: over, Name: name})
	}
	b.See(0)
	b.See(t)
	return b.Finish()
}

// TestSpansQueryBruteForce checks viewport queries over derived tracks
// against brute force at many zooms: every slice at least a bucket long
// that reaches into the view is returned whole, once; the counts add up
// to the slices that reach into the view; a summary's busy fraction is
// the coverage of its bucket (in a lane without overlaps); counters carry
// the min and max of each bucket, including the value entering it.
func TestSpansQueryBruteForce(t *testing.T) {
	for _, contig := range []bool{false, true} {
		for _, long := range []bool{false, true} {
			t.Run(fmt.Sprint("long=", long, ",contig=", contig), func(t *testing.T) { testSpansQueryBruteForce(t, long, contig) })
		}
	}
}

func testSpansQueryBruteForce(t *testing.T, long, contig bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	set := randomSet(rng, 20000, long, contig)
	s := NewSpans(set)
	switch l := &s.lanes[0][0]; {
	case contig && (l.col == nil || l.pts != nil || l.cpts != nil || l.fracs[0] != nil):
		t.Fatalf("long=%v: the contiguous CPU lane has points (%d wide, %d compact) or cell fractions", long, len(l.pts), len(l.cpts))
	case !contig && ((l.pts != nil) != long || (l.ccum == nil) != long || (l.src == nil) != long || l.cpts != nil || l.col != nil):
		// All of its track's slices: the starts from the column, 32-bit
		// totals unless some are too long.
		t.Fatalf("long=%v: the CPU lane has %d wide points, %d compact ones and %d totals", long, len(l.pts), len(l.cpts), len(l.ccum))
	}
	if l := &s.lanes[3][0]; l.src == nil || l.maxEnd == nil {
		t.Fatal("the overlapping track's lane does not read its column or has no maximum ends")
	}
	cpu := set.TrackSlices(0)
	last := cpu[len(cpu)-1].End
	for q := range 300 {
		width := 1 + rng.IntN(1500)
		win := trace.Time(1 + rng.Int64N(int64(last)+1))
		if q%3 == 0 {
			win = trace.Time(1 + rng.IntN(5000))
		}
		vs := trace.Time(rng.Int64N(int64(last)+1)) - win/2
		vp := SpanViewport{Start: vs, End: vs + win, Width: width, Tracks: []span.TrackID{0, 1, 2, 3}}
		got, err := s.Query(context.Background(), vp)
		if err != nil {
			t.Fatal(err)
		}
		qs, qe := got.Start, got.Start+trace.Time(int64(got.Buckets)*got.Res)
		for _, ti := range []int{0, 1, 3} {
			tr := got.Tracks[ti]
			all := set.TrackSlices(span.TrackID(ti))
			want := map[int32]bool{}
			count := 0
			for k, x := range all {
				if x.End > qs && x.Start < qe {
					count++
					if int64(x.End-x.Start) >= got.Res {
						want[int32(k)] = true
					}
				}
			}
			n := 0
			for _, it := range tr.Items {
				n += int(it.Count)
				if !it.Summary {
					if !want[it.Slice] {
						t.Fatalf("query %d track %d: slice %d returned twice or not wide (res %d)", q, ti, it.Slice, got.Res)
					}
					delete(want, it.Slice)
					continue
				}
				if ti == 0 {
					// Track 0's slices do not overlap: those reaching
					// into the bucket follow the first ending after its
					// start.
					var cover int64
					first := sort.Search(len(all), func(k int) bool { return all[k].End > it.Start })
					for _, x := range all[first:] {
						if x.Start >= it.End {
							break
						}
						lo, hi := max(x.Start, it.Start), min(x.End, it.End)
						if hi > lo {
							cover += int64(hi - lo)
						}
					}
					if wantBusy := float64(cover) / float64(got.Res); math.Abs(float64(it.Busy)-wantBusy) > 1e-4 {
						t.Fatalf("query %d: bucket at %d busy %.5f, brute force %.5f", q, it.Start, it.Busy, wantBusy)
					}
				}
			}
			if len(want) > 0 {
				t.Fatalf("query %d track %d: %d wide slices missing", q, ti, len(want))
			}
			if ti == 0 && n != count {
				t.Fatalf("query %d: counts add up to %d, %d slices reach into the view", q, n, count)
			}
			if ti == 0 && len(tr.Items) > 3*(got.Buckets+1) {
				t.Fatalf("query %d: %d items for %d buckets", q, len(tr.Items), got.Buckets)
			}
		}
		samples := set.TrackSamples(2)
		items := got.Tracks[2].Counters
		type mm struct {
			lo, hi float64
			n      int
		}
		buckets := map[int64]*mm{}
		var order []int64
		for i, x := range samples {
			if x.Time < qs || x.Time >= qe {
				continue
			}
			b := int64(x.Time-got.Start) / got.Res
			m := buckets[b]
			if m == nil {
				m = &mm{lo: x.Value, hi: x.Value}
				if i > 0 {
					m.lo, m.hi = min(x.Value, samples[i-1].Value), max(x.Value, samples[i-1].Value)
				}
				buckets[b] = m
				order = append(order, b)
			}
			m.n++
			m.lo, m.hi = min(m.lo, x.Value), max(m.hi, x.Value)
		}
		k := 0
		for _, b := range order {
			m := buckets[b]
			if k >= len(items) || items[k].Bucket != int32(b) || items[k].Min != m.lo || items[k].Max != m.hi || int(items[k].Count) != m.n {
				t.Fatalf("query %d bucket %d: counter item %+v, brute force %+v", q, b, items[min(k, len(items)-1)], *m)
			}
			k++
		}
		if k != len(items) {
			t.Fatalf("query %d: %d counter items, brute force %d", q, len(items), k)
		}
	}
}

// BenchmarkSpansQuery: a full view of 50 CPU-like tracks of 40,000
// slices each, 2000 pixels wide: every bucket of every track is a
// summary. The slices have gaps between them, or none (contiguous lanes,
// which read their starts from the set's columns).
func BenchmarkSpansQuery(b *testing.B) {
	for _, contig := range []bool{false, true} {
		b.Run(map[bool]string{false: "gapped", true: "contiguous"}[contig], func(b *testing.B) {
			bl := span.NewBuilder()
			var ids []span.TrackID
			for k := range 50 {
				id := bl.Track(span.Track{Kind: span.KindCPU, Name: "CPU", CPU: int32(k), Of: trace.NoTrack})
				ids = append(ids, id)
				t := trace.Time(0)
				for i := range 40000 {
					d := 900 + trace.Time(i%200)
					bl.Add(span.Slice{Start: t, End: t + d, Track: id})
					t += d
					if !contig {
						t += 100 + trace.Time(i%300) - trace.Time(i%200)
					}
				}
			}
			s := NewSpans(bl.Finish())
			if got := s.lanes[0][0].col != nil; got != contig {
				b.Fatalf("lane reads its starts from the column: %v", got)
			}
			vp := SpanViewport{Start: 0, End: 50_000_000, Width: 2000, Tracks: ids}
			var out SpanSlice
			for b.Loop() {
				if err := s.QueryInto(context.Background(), vp, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSearchStart checks the galloping search through the coarse starts
// against a linear scan, on lanes with long runs of equal starts.
func TestSearchStart(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 50 {
		n := 1 + rng.IntN(5000)
		b := span.NewBuilder()
		tr := b.Track(span.Track{Kind: span.KindCPU, Name: "x", Of: trace.NoTrack})
		st := trace.Time(0)
		for range n {
			if rng.IntN(4) == 0 {
				st += trace.Time(rng.IntN(50))
			}
			b.Add(span.Slice{Start: st, End: st + 1, Track: tr})
		}
		l := buildLanes(b.Finish().Column(tr), &laneScratch{})[0]
		for range 200 {
			lo := rng.IntN(n + 1)
			hi := lo + rng.IntN(n+1-lo)
			at := trace.Time(rng.Int64N(int64(st) + 2))
			want := lo
			for want < hi && l.start(want) < at {
				want++
			}
			if got := l.searchStart(lo, hi, at); got != want {
				t.Fatalf("searchStart(%d, %d, %d) = %d, want %d (n %d)", lo, hi, at, got, want, n)
			}
		}
	}
}

// TestSpansQueryParallel: a query over many tracks, split among workers,
// answers each track as a query of that track alone does, and a reused
// SpanSlice holds no items of the previous answer.
func TestSpansQueryParallel(t *testing.T) {
	set := randomSet(rand.New(rand.NewPCG(7, 8)), 5000, false, false)
	s := NewSpans(set)
	var ids []span.TrackID
	for k := range 64 {
		ids = append(ids, span.TrackID(k%3))
	}
	vp := SpanViewport{Start: 0, End: 1 << 20, Width: 700, Tracks: ids}
	var all SpanSlice
	for _, v := range []SpanViewport{{Start: 5, End: 1 << 16, Width: 300, Tracks: ids[:5]}, vp} {
		if err := s.QueryInto(context.Background(), v, &all); err != nil {
			t.Fatal(err)
		}
	}
	if len(all.Tracks) != len(ids) {
		t.Fatalf("%d tracks answered, %d asked", len(all.Tracks), len(ids))
	}
	for k, id := range ids {
		one, err := s.Query(context.Background(), SpanViewport{Start: vp.Start, End: vp.End, Width: vp.Width, Tracks: []span.TrackID{id}})
		if err != nil {
			t.Fatal(err)
		}
		got, want := all.Tracks[k], one.Tracks[0]
		if got.Track != id || !slices.Equal(got.Items, want.Items) || !slices.Equal(got.Counters, want.Counters) {
			t.Fatalf("track %d (%d): %d items, alone %d", k, id, len(got.Items), len(want.Items))
		}
	}
}

// BenchmarkSpansQuerySparse: 50 syscall-like tracks, as `viewer bench
// --generate-sched` queries them: every 128 µs a clump of three 1 µs
// slices, viewed on 2000 pixels 455 ms at a time (buckets of 262 µs, a
// few slices each) and 83 ms at a time (65 µs, finer than the lanes'
// cells: the slices are searched).
func BenchmarkSpansQuerySparse(b *testing.B) {
	bl := span.NewBuilder()
	var ids []span.TrackID
	const period, runs = 128_000, 19_500
	for k := range 50 {
		id := bl.Track(span.Track{Kind: span.KindSlices, Name: "syscalls", Of: trace.TrackID(k), CPU: trace.NoCPU})
		ids = append(ids, id)
		for r := range runs {
			t := trace.Time(1e9 + r*period + k*2000)
			for _, at := range []trace.Time{0, 2000, 5000} {
				bl.Add(span.Slice{Start: t + at, End: t + at + 1000, Track: id})
			}
		}
	}
	s := NewSpans(bl.Finish())
	for _, window := range []int64{455_000_000, 83_000_000} {
		b.Run(fmt.Sprintf("window=%dms", window/1e6), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			var out SpanSlice
			for b.Loop() {
				start := trace.Time(1e9 + rng.Int64N(runs*period-window))
				vp := SpanViewport{Start: start, End: start + trace.Time(window), Width: 2000, Tracks: ids}
				if err := s.QueryInto(context.Background(), vp, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNewSpans indexes the derived tracks of a generated scheduler
// recording (2M events: CPU, state and syscall tracks, 1.75M slices), the
// part of deriving that runs after reading, on every core.
func BenchmarkNewSpans(b *testing.B) {
	var buf seekBuffer
	if err := perftest.GenerateSched(&buf, 2000000, 4, 16); err != nil {
		b.Fatal(err)
	}
	r, err := perf.NewReader(bytes.NewReader(buf.b), int64(len(buf.b)), perf.Options{})
	if err != nil {
		b.Fatal(err)
	}
	set, err := span.Derive(r, perf.NewSched(r))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		NewSpans(set)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(set.Len()), "ns/slice")
}

// seekBuffer is an in-memory io.WriteSeeker.
type seekBuffer struct {
	b   []byte
	off int64
}

func (w *seekBuffer) Write(p []byte) (int, error) {
	if end := w.off + int64(len(p)); end > int64(len(w.b)) {
		w.b = append(w.b, make([]byte, end-int64(len(w.b)))...)
	}
	n := copy(w.b[w.off:], p)
	w.off += int64(n)
	return n, nil
}

func (w *seekBuffer) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += w.off
	case io.SeekEnd:
		off += int64(len(w.b))
	}
	if off < 0 {
		return 0, errors.New("seekBuffer: negative offset")
	}
	w.off = off
	return off, nil
}
