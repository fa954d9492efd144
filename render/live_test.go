package render

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/span"
	"viewer/trace/synth"
)

// waiting is a live source over a synthetic trace: before reading event
// k for each k in cuts it waits, through Live.AroundWait, until the test
// lets it go on. It reads event by event and decodes fields as synth
// does (it is a FieldsDecoder and a DetailsAppender, not a batch reader).
type waiting struct {
	g      *synth.Trace
	live   *Live
	n      int
	cuts   []int
	at     chan int      // receives k when the source waits before event k
	resume chan struct{} // lets it go on
}

func newWaiting(cfg synth.Config, l *Live, cuts []int) *waiting {
	return &waiting{g: synth.New(cfg), live: l, cuts: cuts, at: make(chan int), resume: make(chan struct{})}
}

func (w *waiting) Meta() *trace.Meta { return w.g.Meta() }

func (w *waiting) ReadEvent() (trace.Event, error) {
	for len(w.cuts) > 0 && w.cuts[0] == w.n {
		w.cuts = w.cuts[1:]
		w.live.AroundWait(func() {
			w.at <- w.n
			<-w.resume
		})
	}
	e, err := w.g.ReadEvent()
	if err == nil {
		w.n++
	}
	return e, err
}

func (w *waiting) Stack(id trace.StackID) []uint64        { return w.g.Stack(id) }
func (w *waiting) Labels(id trace.LabelsID) []trace.Label { return w.g.Labels(id) }
func (w *waiting) Details(e trace.Event) (trace.Details, error) {
	return w.g.Details(e)
}
func (w *waiting) DecodeFields(e trace.Event, idx []int, vals []trace.Value) error {
	return w.g.DecodeFields(e, idx, vals)
}
func (w *waiting) AppendDetails(f []trace.Field, l []byte, e trace.Event) ([]trace.Field, []byte, error) {
	return w.g.AppendDetails(f, l, e)
}

// latest waits until l's snapshot holds n events and returns it.
func latest(t *testing.T, l *Live, n int64) *Index {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		upd := l.Updated()
		if x := l.Index(); x != nil && x.Events() >= n {
			if x.Events() != n {
				t.Fatalf("snapshot has %d events, want %d", x.Events(), n)
			}
			return x
		}
		select {
		case <-upd:
		case <-timeout:
			t.Fatalf("no snapshot of %d events", n)
		}
	}
}

func newGaps() span.Deriver { return &gaps{last: map[trace.TrackID]trace.Time{}} }

// TestLiveSnapshots: after each wait of a live source, the published
// snapshot answers exactly as an Index built by Build over the events
// read so far: queries at several zooms (the snapshot has no time cells,
// the reference has), tracks, counts, details of random events, stats,
// markers, meta, a field search and the derived tracks.
func TestLiveSnapshots(t *testing.T) {
	for _, every := range []time.Duration{time.Nanosecond, 30 * time.Millisecond} {
		t.Run(every.String(), func(t *testing.T) { testLiveSnapshots(t, every) })
	}
}

func testLiveSnapshots(t *testing.T, every time.Duration) {
	const total = 40000
	cfg := synth.Config{Events: total, Tracks: 9, Seed: 5, LostEvery: 3001, MarkEvery: 2500}
	rng := rand.New(rand.NewPCG(7, uint64(every)))
	cuts := []int{0, 1, 2, 17, batchEvents - 1, batchEvents, batchEvents + 1, 3 * batchEvents}
	for range 6 {
		cuts = append(cuts, rng.IntN(total))
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	l := NewLive(every)
	l.spansAlways = true
	src := newWaiting(cfg, l, cuts)
	type result struct {
		x   *Index
		err error
	}
	done := make(chan result, 1)
	go func() {
		x, err := Build(context.Background(), src, Options{SpillDir: t.TempDir(), Live: l, Derive: newGaps()})
		done <- result{x, err}
	}()
	for _, k := range cuts {
		if got := <-src.at; got != k {
			t.Fatalf("source waits at %d, want %d", got, k)
		}
		if k == 0 {
			if x := l.Index(); x != nil {
				t.Fatalf("a snapshot of %d events before any was read", x.Events())
			}
			src.resume <- struct{}{}
			continue
		}
		snap := latest(t, l, int64(k))
		if !snap.Growing() {
			t.Fatal("a snapshot is not Growing")
		}
		c := cfg
		c.Events = int64(k)
		ref, err := Build(context.Background(), synth.New(c), Options{SpillDir: t.TempDir(), Derive: newGaps()})
		if err != nil {
			t.Fatal(err)
		}
		compareIndexes(t, snap, ref, rng)
		ref.Close()
		if err := snap.Close(); err != nil {
			t.Fatal(err)
		}
		src.resume <- struct{}{}
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.x.Close()
	if l.Index() != r.x || r.x.Growing() {
		t.Fatal("the Live does not end with the final index")
	}
	select {
	case <-l.Updated():
	default:
		t.Fatal("Updated not closed after the end")
	}
	ref, err := Build(context.Background(), synth.New(cfg), Options{SpillDir: t.TempDir(), Derive: newGaps()})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	compareIndexes(t, r.x, ref, rng)
}

// compareIndexes fails unless got answers as want does.
func compareIndexes(t *testing.T, got, want *Index, rng *rand.Rand) {
	t.Helper()
	n := want.Events()
	if got.Events() != n {
		t.Fatalf("Events %d, want %d", got.Events(), n)
	}
	g0, g1 := got.Span()
	w0, w1 := want.Span()
	if g0 != w0 || g1 != w1 {
		t.Fatalf("Span %d..%d, want %d..%d", g0, g1, w0, w1)
	}
	tracks := want.Tracks()
	if !slices.Equal(got.Tracks(), tracks) {
		t.Fatalf("Tracks %v, want %v", got.Tracks(), tracks)
	}
	for _, id := range tracks {
		if got.TrackEvents(id) != want.TrackEvents(id) {
			t.Fatalf("track %d: %d events, want %d", id, got.TrackEvents(id), want.TrackEvents(id))
		}
	}
	if !reflect.DeepEqual(got.Stats(), want.Stats()) {
		t.Fatalf("Stats\n%+v, want\n%+v", got.Stats(), want.Stats())
	}
	if !reflect.DeepEqual(got.Meta(), want.Meta()) {
		t.Fatal("Meta differs")
	}
	if !slices.Equal(got.StackedTypes(), want.StackedTypes()) {
		t.Fatalf("StackedTypes %v, want %v", got.StackedTypes(), want.StackedTypes())
	}
	for k := range nMarkerKinds {
		if !slices.Equal(got.Markers(k), want.Markers(k)) {
			t.Fatalf("markers %v differ", k)
		}
	}
	bare := withoutCells(want)
	ctx := context.Background()
	extent := int64(w1-w0) + 1
	for q := range 12 {
		vp := Viewport{Start: w0, End: w1 + 1, Width: []int{2000, 333, 7}[q%3], Tracks: tracks}
		if q >= 3 { // a random window, down to a few ns
			w := max(1, extent>>rng.IntN(20))
			vp.Start = w0 + trace.Time(rng.Int64N(extent))
			vp.End = vp.Start + trace.Time(w)
		}
		gs, err := got.Query(ctx, vp)
		if err != nil {
			t.Fatal(err)
		}
		// The same index without time cells answers exactly as a
		// snapshot must; with them, the dominant type of a bucket
		// without a majority may be another of its types.
		ref := bare
		if !got.Growing() {
			ref = want
		}
		ns, err := ref.Query(ctx, vp)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gs.Tracks, ns.Tracks) || !reflect.DeepEqual(gs.Markers, ns.Markers) {
			t.Fatalf("query %+v differs from the reference's without cells", vp)
		}
		ws, err := want.Query(ctx, vp)
		if err != nil {
			t.Fatal(err)
		}
		if len(gs.Tracks) != len(ws.Tracks) || !reflect.DeepEqual(gs.Markers, ws.Markers) {
			t.Fatalf("query %+v differs", vp)
		}
		for i, ts := range gs.Tracks {
			wi := ws.Tracks[i].Items
			if len(ts.Items) != len(wi) {
				t.Fatalf("query %+v: track %d has %d items, want %d", vp, ts.Track, len(ts.Items), len(wi))
			}
			for j, it := range ts.Items {
				w := wi[j]
				if it.Type != w.Type {
					if m, ok := majority(want, ts.Track, w); ok || !hasType(want, ts.Track, w, it.Type) {
						t.Fatalf("query %+v: item %+v, want %+v (majority %v %v)", vp, it, w, m, ok)
					}
					it.Type = w.Type
				}
				if it != w {
					t.Fatalf("query %+v: item %+v, want %+v", vp, it, w)
				}
			}
		}
	}
	for range 10 {
		id := tracks[rng.IntN(len(tracks))]
		ev := EventID{Track: id, Index: int32(rng.IntN(want.TrackEvents(id)))}
		gd, err := got.Details(ev, nil)
		if err != nil {
			t.Fatal(err)
		}
		wd, err := want.Details(ev, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gd, wd) {
			t.Fatalf("Details(%v)\n%+v, want\n%+v", ev, gd, wd)
		}
	}
	f := Filter{Where: []Predicate{{Field: "value", Op: OpLt, Value: "250"}}}
	gc, err := got.Count(ctx, f, math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := want.Count(ctx, f, math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gc, wc) {
		t.Fatalf("Count %+v, want %+v", gc, wc)
	}
	// The forward search decides runs (decideRun): a snapshot's read
	// from the growing spill file, the others' in place in a mapping.
	if gh, wh := hitsOf(t, got, f), hitsOf(t, want, f); !slices.Equal(gh, wh) {
		t.Fatalf("%d hits, want %d (first difference at %d)", len(gh), len(wh), firstDiff(gh, wh))
	}
	if got.Spans() == nil || want.Spans() == nil {
		t.Fatal("no derived tracks")
	}
	if dumpSet(got.Spans().Set()) != dumpSet(want.Spans().Set()) {
		t.Fatal("derived tracks differ")
	}
	if len(want.Spans().Set().Tracks) > 0 {
		vp := SpanViewport{Start: w0, End: w1 + 1, Width: 500, Tracks: []span.TrackID{0, 1}}
		gs, err := got.Spans().Query(ctx, vp)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := want.Spans().Query(ctx, vp)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gs, ws) {
			t.Fatal("derived query differs")
		}
	}
}

// TestLiveConcurrent: queries, details, searches and derived queries on
// the latest snapshot from several goroutines while Build goes on (run
// with -race): no race, no error, and Events never goes back.
func TestLiveConcurrent(t *testing.T) {
	const total = 300000
	l := NewLive(time.Millisecond)
	cuts := []int{1000, 5000, 100000, 100001}
	src := newWaiting(synth.Config{Events: total, Tracks: 40, Seed: 11}, l, cuts)
	go func() {
		for range src.at {
			time.Sleep(3 * time.Millisecond)
			src.resume <- struct{}{}
		}
	}()
	ctx := context.Background()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var snaps atomic.Int64
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			var prev int64
			var s Slice
			for !stop.Load() {
				x := l.Index()
				if x == nil {
					time.Sleep(100 * time.Microsecond)
					continue
				}
				snaps.Add(1)
				if x.Events() < prev {
					errs <- fmt.Errorf("Events went back from %d to %d", prev, x.Events())
					return
				}
				prev = x.Events()
				first, last := x.Span()
				tracks := x.Tracks()
				if err := x.QueryInto(ctx, Viewport{Start: first, End: last + 1, Width: 1500, Tracks: tracks}, &s); err != nil {
					errs <- err
					return
				}
				id := tracks[rng.IntN(len(tracks))]
				if _, err := x.Details(EventID{Track: id, Index: int32(rng.IntN(x.TrackEvents(id)))}, nil); err != nil {
					errs <- err
					return
				}
				k := 0
				for _, err := range x.Hits(ctx, Filter{Where: []Predicate{{Field: "value", Op: OpEq, Value: "7"}}}, At(math.MinInt64), false) {
					if err != nil {
						errs <- err
						return
					}
					if k++; k == 20 {
						break
					}
				}
				_ = x.Stats()
				if sp := x.Spans(); sp != nil && len(sp.Set().Tracks) > 0 {
					if _, err := sp.Query(ctx, SpanViewport{Start: first, End: last + 1, Width: 800, Tracks: []span.TrackID{0}}); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	x, err := Build(ctx, src, Options{SpillDir: t.TempDir(), Live: l, Derive: newGaps()})
	stop.Store(true)
	wg.Wait()
	close(src.at)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if x.Events() != total || l.Index() != x {
		t.Fatalf("final index: %d events", x.Events())
	}
	if snaps.Load() == 0 {
		t.Fatal("no snapshot was queried")
	}
}

// batchWaiting is a batch reader (as trace/synth is) that waits in the
// middle of a ReadEvents call: Build cannot hand over the events of the
// call so far, and reads event by event afterwards.
type batchWaiting struct {
	*synth.Trace
	live  *Live
	calls int
}

func (b *batchWaiting) ReadEvents(dst []trace.Event) (int, error) {
	b.calls++
	n, err := b.Trace.ReadEvents(dst[:len(dst)/2])
	if err != nil {
		return n, err
	}
	b.live.AroundWait(func() {})
	m, err := b.Trace.ReadEvents(dst[n:])
	return n + m, err
}

// TestLiveBatchReaderWait: a wait inside ReadEvents keeps every event,
// and Build switches to ReadEvent.
func TestLiveBatchReaderWait(t *testing.T) {
	l := NewLive(time.Nanosecond)
	cfg := synth.Config{Events: 20000, Tracks: 4, Seed: 2}
	r := &batchWaiting{Trace: synth.New(cfg), live: l}
	x, err := Build(context.Background(), r, Options{SpillDir: t.TempDir(), Live: l})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if r.calls != 1 {
		t.Fatalf("ReadEvents called %d times, want once", r.calls)
	}
	ref, err := Build(context.Background(), synth.New(cfg), Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	compareIndexesNoDerive(t, x, ref)
}

// hitsOf returns every hit of f in x, searching forward.
func hitsOf(t *testing.T, x *Index, f Filter) []Position {
	t.Helper()
	var hits []Position
	for pos, err := range x.Hits(context.Background(), f, At(math.MinInt64), false) {
		if err != nil {
			t.Fatal(err)
		}
		hits = append(hits, pos)
	}
	return hits
}

func compareIndexesNoDerive(t *testing.T, got, want *Index) {
	t.Helper()
	if got.Events() != want.Events() || !reflect.DeepEqual(got.Stats(), want.Stats()) {
		t.Fatalf("%d events, want %d", got.Events(), want.Events())
	}
	first, last := want.Span()
	vp := Viewport{Start: first, End: last + 1, Width: 999, Tracks: want.Tracks()}
	gs, err := got.Query(context.Background(), vp)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := want.Query(context.Background(), vp)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gs.Tracks, ws.Tracks) {
		t.Fatal("query differs")
	}
}

// TestLiveCancel: a cancelled Build ends its Live.
func TestLiveCancel(t *testing.T) {
	l := NewLive(time.Nanosecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, synth.New(synth.Config{Events: 1 << 20, Seed: 1}), Options{SpillDir: t.TempDir(), Live: l}); err == nil {
		t.Fatal("no error")
	}
	select {
	case <-l.Updated():
	default:
		t.Fatal("Updated not closed after a failed Build")
	}
}

// withoutCells returns a copy of x whose tracks have no time cells.
func withoutCells(x *Index) *Index {
	c := *x
	c.tracks = make([]*track, len(x.tracks))
	for i, t := range x.tracks {
		if t != nil {
			tc := *t
			tc.cells = nil
			c.tracks[i] = &tc
		}
	}
	n := *x.none
	n.cells = nil
	c.none = &n
	return &c
}

// majority returns the type holding more than half of an item's events,
// by brute force.
func majority(x *Index, id trace.TrackID, it Item) (trace.TypeID, bool) {
	count := map[trace.TypeID]int{}
	t := x.track(id)
	for i := it.First; i < it.First+it.Count; i++ {
		ty := typeOf(t.types.at(int(i)))
		if count[ty]++; 2*count[ty] > int(it.Count) {
			return ty, true
		}
	}
	return 0, false
}

// hasType reports whether one of an item's events has type ty.
func hasType(x *Index, id trace.TrackID, it Item, ty trace.TypeID) bool {
	t := x.track(id)
	for i := it.First; i < it.First+it.Count; i++ {
		if typeOf(t.types.at(int(i))) == ty {
			return true
		}
	}
	return false
}
