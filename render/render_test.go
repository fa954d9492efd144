package render

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/synth"
	"viewer/trace/tracetest"
)

// events reads every event of a fresh generator for cfg.
func events(t *testing.T, cfg synth.Config) []trace.Event {
	t.Helper()
	return tracetest.Check(t, synth.New(cfg), true).Events
}

func build(t *testing.T, cfg synth.Config) *Index {
	t.Helper()
	x, err := Build(context.Background(), synth.New(cfg), Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// perTrack splits events by track, keeping time order: the brute-force
// model of an index.
func perTrack(evs []trace.Event) map[trace.TrackID][]trace.Event {
	m := map[trace.TrackID][]trace.Event{}
	for _, e := range evs {
		m[e.Track] = append(m[e.Track], e)
	}
	return m
}

func randomConfig(rng *rand.Rand) synth.Config {
	tracks := 1 + rng.IntN(5)
	if rng.IntN(4) == 0 {
		tracks = 16 + rng.IntN(30) // enough for parallel queries
	}
	return synth.Config{
		Events:    int64(rng.IntN(3000)),
		Tracks:    tracks,
		Types:     1 + rng.IntN(6),
		Seed:      rng.Uint64(),
		MeanGap:   time.Duration(1 + rng.IntN(40)),
		LostEvery: int64(1 + rng.IntN(500)),
		MarkEvery: int64(1 + rng.IntN(300)),
		Truncate:  rng.IntN(2) == 0,
	}
}

func randomViewport(rng *rand.Rand, x *Index, tracks []trace.TrackID) Viewport {
	first, last := x.Span()
	span := int64(last-first) + 1
	start := first + trace.Time(rng.Int64N(span+20)-10)
	var end trace.Time
	switch rng.IntN(4) {
	case 0: // whole trace and more
		start, end = first-trace.Time(rng.IntN(5)), last+trace.Time(1+rng.IntN(5))
	case 1: // a narrow window
		end = start + trace.Time(1+rng.IntN(20))
	default:
		end = start + trace.Time(1+rng.Int64N(span))
	}
	return Viewport{Start: start, End: end, Width: 1 + rng.IntN(300), Tracks: tracks}
}

func TestResolution(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		start := trace.Time(rng.Int64N(1<<40) - 1<<39)
		vp := Viewport{Start: start, End: start + 1 + trace.Time(rng.Int64N(1<<uint(rng.IntN(40)))), Width: 1 + rng.IntN(4000)}
		res, s0, nb, err := Resolution(vp)
		if err != nil {
			t.Fatal(err)
		}
		span := int64(vp.End - vp.Start)
		switch {
		case res&(res-1) != 0:
			t.Fatalf("%+v: res %d not a power of two", vp, res)
		case res*int64(vp.Width) < span:
			t.Fatalf("%+v: res %d finer than a pixel", vp, res)
		case res > 1 && (res/2)*int64(vp.Width) >= span:
			t.Fatalf("%+v: res %d coarser than needed", vp, res)
		case int64(s0)%res != 0 || s0 > vp.Start || s0+trace.Time(res) <= vp.Start:
			t.Fatalf("%+v: start %d not the bucket of the viewport start", vp, s0)
		case s0+trace.Time(int64(nb)*res) < vp.End || s0+trace.Time(int64(nb-1)*res) >= vp.End:
			t.Fatalf("%+v: %d buckets do not end at the viewport end", vp, nb)
		case nb > vp.Width+1:
			t.Fatalf("%+v: %d buckets for %d px", vp, nb, vp.Width)
		}
	}
	tooMany := make([]trace.TrackID, MaxCells/MaxWidth)
	for _, vp := range []Viewport{{Start: 5, End: 5, Width: 10}, {Start: 0, End: 10, Width: 0}, {Start: 0, End: 10, Width: MaxWidth + 1}, {Start: 0, End: 10, Width: MaxWidth, Tracks: tooMany},
		{Start: 0, End: 10, Width: 1, Tracks: make([]trace.TrackID, MaxTracks+1)}} {
		if _, _, _, err := Resolution(vp); !errors.Is(err, ErrViewport) {
			t.Errorf("%+v: err %v, want ErrViewport", vp, err)
		}
	}
	// Extreme times are clamped, never overflow.
	if _, _, nb, err := Resolution(Viewport{Start: -1 << 63, End: 1<<63 - 1, Width: 7}); err != nil || nb > 8 {
		t.Errorf("extreme viewport: %d buckets, %v", nb, err)
	}
}

// TestQueryBruteForce checks every item of random viewports of random
// traces against bucketing every event by hand.
func TestQueryBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cellQueries := 0
	defer func() {
		t.Logf("%d cell queries", cellQueries)
		if cellQueries < 100 {
			t.Errorf("only %d track queries went through the time cells", cellQueries)
		}
	}()
	for iter := range 60 {
		cfg := randomConfig(rng)
		evs := events(t, cfg)
		byTrack := perTrack(evs)
		x := build(t, cfg)
		if x.Events() != int64(len(evs)) {
			t.Fatalf("cfg %+v: indexed %d events, read %d", cfg, x.Events(), len(evs))
		}
		tracks := []trace.TrackID{99} // an unknown track answers empty
		for id := range cfg.Tracks {
			tracks = append(tracks, trace.TrackID(id))
		}
		rng.Shuffle(len(tracks), func(i, j int) { tracks[i], tracks[j] = tracks[j], tracks[i] })
		var s Slice // reused across queries, as a session would
		for range 40 {
			vp := randomViewport(rng, x, tracks)
			if len(evs) == 0 {
				vp = Viewport{Start: 0, End: 100, Width: 10, Tracks: tracks}
			}
			if err := x.QueryInto(context.Background(), vp, &s); err != nil {
				t.Fatal(err)
			}
			res, s0, nb, _ := Resolution(vp)
			if s.Res != res || s.Start != s0 || s.Buckets != nb || len(s.Tracks) != len(tracks) {
				t.Fatalf("slice header %d %d %d %d", s.Res, s.Start, s.Buckets, len(s.Tracks))
			}
			for k, ts := range s.Tracks {
				if ts.Track != tracks[k] {
					t.Fatalf("track %d is %d, want %d", k, ts.Track, tracks[k])
				}
				want := bruteItems(byTrack[ts.Track], s0, res, nb)
				checkItems(t, iter, vp, ts.Items, want, byTrack[ts.Track])
				// Both paths on their own: the index pyramid always, the
				// time cells where the track has the level.
				tr := x.track(ts.Track)
				if tr == nil {
					continue
				}
				shift := uint(bits.TrailingZeros64(uint64(res)))
				end := s0 + trace.Time(int64(nb)*res)
				checkItems(t, iter, vp, tr.slice(nil, s0, end, shift), want, byTrack[ts.Track])
				if items, ok := tr.sliceCells(nil, int(shift), int64(s0)>>shift, nb); ok {
					checkItems(t, iter, vp, items, want, byTrack[ts.Track])
					cellQueries++
				}
			}
			checkMarkers(t, x, &s)
		}
	}
}

// bruteItem is the hand-computed content of one bucket.
type bruteItem struct {
	Item
	types map[trace.TypeID]int
}

func bruteItems(evs []trace.Event, s0 trace.Time, res int64, nb int) []bruteItem {
	var out []bruteItem
	for i, e := range evs {
		if e.Time < s0 || e.Time >= s0+trace.Time(int64(nb)*res) {
			continue
		}
		b := int32(floorDiv(int64(e.Time-s0), res))
		if len(out) == 0 || out[len(out)-1].Bucket != b {
			out = append(out, bruteItem{Item: Item{Bucket: b, First: int32(i), Time: e.Time}, types: map[trace.TypeID]int{}})
		}
		it := &out[len(out)-1]
		it.Count++
		if it.Count > 1 {
			it.Time = s0 + trace.Time(int64(b)*res)
		}
		it.types[e.Type]++
	}
	return out
}

func checkItems(t *testing.T, iter int, vp Viewport, got []Item, want []bruteItem, evs []trace.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("iter %d %+v: %d items, want %d", iter, vp, len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		if g.Bucket != w.Bucket || g.Count != w.Count || g.First != w.First || g.Time != w.Time {
			t.Fatalf("iter %d %+v: item %d = %+v, want %+v", iter, vp, i, g, w.Item)
		}
		if g.Count == 1 && g.Type != evs[g.First].Type {
			t.Fatalf("iter %d: individual event type %d, want %d", iter, g.Type, evs[g.First].Type)
		}
		if w.types[g.Type] == 0 {
			t.Fatalf("iter %d: dominant type %d does not occur in bucket %v", iter, g.Type, w.types)
		}
		for ty, n := range w.types {
			if 2*n > int(w.Count) && g.Type != ty {
				t.Fatalf("iter %d: dominant type %d, but %d holds %d of %d", iter, g.Type, ty, n, w.Count)
			}
		}
	}
}

func checkMarkers(t *testing.T, x *Index, s *Slice) {
	t.Helper()
	var want []MarkerItem
	for k := range nMarkerKinds {
		for _, m := range x.Markers(k) {
			b := s.Bucket(m.Time)
			if b < 0 || b >= int64(s.Buckets) {
				continue
			}
			if n := len(want); n > 0 && want[n-1].Marker.Kind == k && want[n-1].Bucket == int32(b) {
				want[n-1].Count++
				continue
			}
			want = append(want, MarkerItem{Bucket: int32(b), Count: 1, Marker: m})
		}
	}
	if !slices.Equal(s.Markers, want) {
		t.Fatalf("markers %+v, want %+v", s.Markers, want)
	}
}

// TestIndividualEvents checks that a window around every single event of
// a sparse track returns it as an individual event.
func TestIndividualEvents(t *testing.T) {
	cfg := synth.Config{Events: 500, Tracks: 3, Types: 5, Seed: 7, MeanGap: 1000}
	evs := events(t, cfg)
	x := build(t, cfg)
	byTrack := perTrack(evs)
	for tr, es := range byTrack {
		for i, e := range es {
			s, err := x.Query(context.Background(), Viewport{Start: e.Time, End: e.Time + 1, Width: 1, Tracks: []trace.TrackID{tr}})
			if err != nil {
				t.Fatal(err)
			}
			items := s.Tracks[0].Items
			n := 0
			for _, f := range es {
				if f.Time == e.Time {
					n++
				}
			}
			if len(items) != 1 || int(items[0].Count) != n || (n == 1 && (items[0].First != int32(i) || items[0].Type != e.Type)) {
				t.Fatalf("event %d of track %d at %d: items %+v, want count %d", i, tr, e.Time, items, n)
			}
		}
	}
}

func TestEventAndDetails(t *testing.T) {
	cfg := synth.Config{Events: 5000, Tracks: 7, Types: 9, Seed: 11, LostEvery: 300, MarkEvery: 100}
	evs := events(t, cfg)
	x := build(t, cfg)
	ref := synth.New(cfg)
	tracetest.Check(t, ref, false) // tables complete
	idx := map[trace.TrackID]int32{}
	for _, e := range evs {
		id := EventID{Track: e.Track, Index: idx[e.Track]}
		idx[e.Track]++
		got, err := x.Event(id)
		if err != nil {
			t.Fatal(err)
		}
		if got != e {
			t.Fatalf("Event(%v) = %+v, want %+v", id, got, e)
		}
		if id.Index%50 != 0 {
			continue
		}
		sym := func(pid int64, tm trace.Time, addr uint64) (trace.Frame, bool) {
			if pid != ref.Meta().Tracks[e.Track].PID || tm != e.Time {
				t.Fatalf("symbolizer got pid %d time %d", pid, tm)
			}
			return trace.Frame{Module: "m", Func: "f"}, addr&0x40 == 0
		}
		d, err := x.Details(id, sym)
		if err != nil || d.DetailsErr != nil {
			t.Fatal(err, d.DetailsErr)
		}
		wantD, _ := ref.Details(e)
		if d.Details.Label != wantD.Label || len(d.Details.Fields) != len(wantD.Fields) || d.Type.Name != ref.Meta().Types[e.Type].Name {
			t.Fatalf("details %+v, want %+v", d, wantD)
		}
		addrs := ref.Stack(e.Stack)
		if len(d.Stack) != len(addrs) {
			t.Fatalf("stack %v, want %v", d.Stack, addrs)
		}
		for i, f := range d.Stack {
			if f.Addr != addrs[i] || (f.Func == "f") != (addrs[i]&0x40 == 0) {
				t.Fatalf("frame %d = %+v for %#x", i, f, addrs[i])
			}
		}
		if len(d.Labels) != len(ref.Labels(e.Labels)) {
			t.Fatalf("labels %v", d.Labels)
		}
	}
	if _, err := x.Event(EventID{Track: 0, Index: 1 << 30}); err == nil {
		t.Error("Event of a missing index: no error")
	}
	if _, err := x.Event(EventID{Track: 1000, Index: 0}); err == nil {
		t.Error("Event of a missing track: no error")
	}
}

func TestHitTest(t *testing.T) {
	cfg := synth.Config{Events: 3000, Tracks: 4, Types: 5, Seed: 5, MeanGap: 50}
	evs := events(t, cfg)
	x := build(t, cfg)
	byTrack := perTrack(evs)
	rng := rand.New(rand.NewPCG(5, 6))
	first, last := x.Span()
	for range 5000 {
		tr := trace.TrackID(rng.IntN(cfg.Tracks))
		tm := first + trace.Time(rng.Int64N(int64(last-first)+200)-100)
		tol := time.Duration(rng.IntN(300))
		got, ok := x.HitTest(tr, tm, tol)
		best, bestD := -1, time.Duration(0)
		for i, e := range byTrack[tr] {
			d := e.Time.Sub(tm)
			if d < 0 {
				d = -d
			}
			if d <= tol && (best < 0 || d < bestD) {
				best, bestD = i, d
			}
		}
		if ok != (best >= 0) || (ok && got != EventID{Track: tr, Index: int32(best)}) {
			t.Fatalf("HitTest(%d, %d, %v) = %v %v, want %d", tr, tm, tol, got, ok, best)
		}
	}
	// Extreme times and tolerances neither overflow nor panic.
	for _, tm := range []trace.Time{-1 << 62, 1 << 62} {
		if id, ok := x.HitTest(0, tm, 1<<63-1); !ok || (tm < 0) != (id.Index == 0) {
			t.Errorf("HitTest at %d: %v %v", tm, id, ok)
		}
		if _, ok := x.HitTest(0, tm, 1000); ok {
			t.Errorf("HitTest at %d within 1000 ns found an event", tm)
		}
	}
}

// TestSearchBruteForce compares Search with a scan of every event in
// position order.
func TestSearchBruteForce(t *testing.T) {
	cfg := synth.Config{Events: 4000, Tracks: 6, Types: 8, Seed: 9, MeanGap: 20}
	evs := events(t, cfg)
	x := build(t, cfg)
	ref := synth.New(cfg)
	tracetest.Check(t, ref, false)
	type ev struct {
		pos Position
		e   trace.Event
	}
	var all []ev
	idx := map[trace.TrackID]int32{}
	for _, e := range evs {
		all = append(all, ev{Position{e.Time, EventID{e.Track, idx[e.Track]}}, e})
		idx[e.Track]++
	}
	slices.SortFunc(all, func(a, b ev) int {
		return cmp.Or(cmp.Compare(a.pos.Time, b.pos.Time), cmp.Compare(a.pos.ID.Track, b.pos.ID.Track), cmp.Compare(a.pos.ID.Index, b.pos.ID.Index))
	})
	p1 := Predicate{"value", OpGe, "990"}
	p2 := Predicate{"name", OpContains, "ITEM-3"}
	p3 := Predicate{"point.x", OpNe, "4"}
	filters := []Filter{
		{},
		{Types: []trace.TypeID{3}},
		{Types: []trace.TypeID{3, 5}, Tracks: []trace.TrackID{2, 4}},
		{Types: []trace.TypeID{2, 70000, -5}, Tracks: []trace.TrackID{5, 1, 5, 99, -7}},
		{Name: "synthetic-2/"},
		{Name: "EVENT7"},
		{Name: "no such event"},
		{Where: []Predicate{p1}},
		{Types: []trace.TypeID{1}, Where: []Predicate{p2, p3}},
	}
	matches := func(f Filter, e trace.Event) bool {
		if len(f.Types) > 0 && !slices.Contains(f.Types, e.Type) {
			return false
		}
		if len(f.Tracks) > 0 && !slices.Contains(f.Tracks, e.Track) {
			return false
		}
		et := ref.Meta().Types[e.Type]
		if f.Name != "" && !containsFold(et.Provider+"/"+et.Name, f.Name) {
			return false
		}
		d, _ := ref.Details(e)
		for _, p := range f.Where {
			if !p.Match(d) {
				return false
			}
		}
		return true
	}
	rng := rand.New(rand.NewPCG(7, 8))
	first, last := x.Span()
	for fi, f := range filters {
		match := make(map[Position]bool, len(all))
		for _, a := range all {
			match[a.pos] = matches(f, a.e)
		}
		for range 60 {
			var from Position
			if rng.IntN(2) == 0 {
				from = At(first + trace.Time(rng.Int64N(int64(last-first)+20)-10))
			} else {
				from = all[rng.IntN(len(all))].pos
			}
			backward := rng.IntN(2) == 0
			got, ok, err := x.Search(context.Background(), f, from, backward)
			if err != nil {
				t.Fatal(err)
			}
			want, wok := EventID{}, false
			if backward {
				for i := len(all) - 1; i >= 0; i-- {
					if all[i].pos.less(from) && match[all[i].pos] {
						want, wok = all[i].pos.ID, true
						break
					}
				}
			} else {
				for _, a := range all {
					if from.less(a.pos) && match[a.pos] {
						want, wok = a.pos.ID, true
						break
					}
				}
			}
			if ok != wok || got != want {
				t.Fatalf("filter %d from %+v backward %v: %v %v, want %v %v", fi, from, backward, got, ok, want, wok)
			}
			// Hits, read up to a limit, is every match in order.
			limit := 1 + rng.IntN(300)
			var hits, wantHits []Position
			for pos, err := range x.Hits(context.Background(), f, from, backward) {
				if err != nil {
					t.Fatal(err)
				}
				if hits = append(hits, pos); len(hits) == limit {
					break
				}
			}
			for i := range all {
				a := all[i]
				if backward {
					a = all[len(all)-1-i]
				}
				if len(wantHits) < limit && (backward && a.pos.less(from) || !backward && from.less(a.pos)) && match[a.pos] {
					wantHits = append(wantHits, a.pos)
				}
			}
			if !slices.Equal(hits, wantHits) {
				t.Fatalf("filter %d from %+v backward %v limit %d: Hits gave %d hits %v…, want %d %v…", fi, from, backward, limit, len(hits), hits[:min(len(hits), 3)], len(wantHits), wantHits[:min(len(wantHits), 3)])
			}
		}
	}
}

// TestHitsCanceled checks that a canceled scan ends with the context's
// error rather than with fewer hits.
func TestHitsCanceled(t *testing.T) {
	x := build(t, synth.Config{Events: 4000, Tracks: 6, Types: 8, Seed: 9, MeanGap: 20})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	var last error
	for _, err := range x.Hits(ctx, Filter{}, At(math.MinInt64), false) {
		if err != nil {
			last = err
			break
		}
		if n++; n == 10 {
			cancel()
		}
	}
	if !errors.Is(last, context.Canceled) || n >= 4000 {
		t.Errorf("after cancel: %d hits, error %v; want context.Canceled well before the end", n, last)
	}
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func TestTruncationAndMarkers(t *testing.T) {
	cfg := synth.Config{Events: 1000, Tracks: 3, Seed: 3, LostEvery: 100, MarkEvery: 64, Truncate: true}
	x := build(t, cfg)
	if !errors.Is(x.ReadErr(), trace.ErrTruncated) {
		t.Fatalf("ReadErr %v", x.ReadErr())
	}
	want, err := export.Collect(synth.New(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if got := x.Stats(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Stats %+v, want %+v", got, want)
	}
	tm := x.Markers(MarkerTruncated)
	_, last := x.Span()
	if len(tm) != 1 || tm[0].Time != last || tm[0].Off == 0 {
		t.Fatalf("truncation markers %+v", tm)
	}
	if n := len(x.Markers(MarkerLost)); n != 10 {
		t.Errorf("%d lost markers, want 10", n)
	}
	sp := x.Markers(MarkerSequencePoint)
	if len(sp) != 16 {
		t.Fatalf("%d sequence points, want 16", len(sp))
	}
	if m, ok := x.Resume(sp[3].Time); !ok || m.Off != sp[3].Off {
		t.Errorf("Resume(%d) = %+v %v", sp[3].Time, m, ok)
	}
	if _, ok := x.Resume(sp[0].Time - 1); ok {
		t.Error("Resume before the first marker found one")
	}
}

type failReader struct{ trace.Reader }

func (failReader) ReadEvent() (trace.Event, error) { return trace.Event{}, io.ErrUnexpectedEOF }

// panicReader panics after n events.
type panicReader struct {
	trace.Reader
	n int
}

func (r *panicReader) ReadEvent() (trace.Event, error) {
	if r.n--; r.n < 0 {
		panic("reader bug")
	}
	return r.Reader.ReadEvent()
}

func TestBuildErrors(t *testing.T) {
	for _, n := range []int{0, 5000} {
		_, err := Build(context.Background(), &panicReader{synth.New(synth.Config{Events: 10000}), n}, Options{SpillDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "reader panicked: reader bug") {
			t.Errorf("a reader panicking after %d events: Build error %v", n, err)
		}
	}
	if _, err := Build(context.Background(), failReader{synth.New(synth.Config{})}, Options{SpillDir: t.TempDir()}); err == nil {
		t.Error("a non-format error did not fail Build")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, synth.New(synth.Config{Events: 1 << 20}), Options{SpillDir: t.TempDir()}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Build: %v", err)
	}
	var last Progress
	calls := 0
	x, err := Build(context.Background(), synth.New(synth.Config{Events: 3 * ProgressEvery}), Options{SpillDir: t.TempDir(), Progress: func(p Progress) {
		if p.Events < last.Events || p.Bytes < last.Bytes {
			t.Errorf("progress went back: %+v after %+v", p, last)
		}
		last = p
		calls++
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if !last.Done || last.Events != 3*ProgressEvery || last.Bytes == 0 || calls != 3 {
		t.Errorf("last progress %+v after %d calls", last, calls)
	}
}

// sliceReader is a trace.Reader over events held in memory.
type sliceReader struct {
	meta trace.Meta
	evs  []trace.Event
	i    int
}

func (r *sliceReader) Meta() *trace.Meta { return &r.meta }
func (r *sliceReader) ReadEvent() (trace.Event, error) {
	if r.i == len(r.evs) {
		return trace.Event{}, io.EOF
	}
	r.i++
	return r.evs[r.i-1], nil
}
func (r *sliceReader) Stack(trace.StackID) []uint64        { return nil }
func (r *sliceReader) Labels(trace.LabelsID) []trace.Label { return nil }
func (r *sliceReader) Details(e trace.Event) (trace.Details, error) {
	return trace.Details{Fields: []trace.Field{{Name: "off", Value: trace.IntValue(e.Payload.Off)}}}, nil
}

// TestWildEvents indexes events whose fields take extreme values and type
// ids beyond the 16-bit type column: every event must come back intact,
// slices must report such types as OtherType, and searches by type must
// still find them exactly.
func TestWildEvents(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	r := &sliceReader{}
	for range 3 {
		r.meta.Tracks = append(r.meta.Tracks, trace.Track{Kind: trace.TrackThread})
	}
	r.meta.Types = make([]trace.EventType, 70000)
	pick := func(vals ...int64) int64 { return vals[rng.IntN(len(vals))] }
	var tm trace.Time
	for range 5000 {
		tm += trace.Time(rng.IntN(3))
		r.evs = append(r.evs, trace.Event{
			Time:    tm,
			Track:   trace.TrackID(rng.IntN(3)),
			Type:    trace.TypeID(pick(0, 1, 65534, 65535, 65536, 69999, int64(rng.IntN(70000)))),
			Seq:     uint32(pick(0, 1, math.MaxUint32, rng.Int64N(1<<32))),
			Capture: trace.TrackID(pick(-1, 0, 2)),
			CPU:     int32(pick(-1, 0, math.MaxInt32, math.MinInt32)),
			Stack:   trace.StackID(pick(0, math.MaxInt32, math.MinInt32)),
			Labels:  trace.LabelsID(pick(0, 5, math.MaxInt32)),
			Payload: trace.Loc{Off: pick(0, math.MaxInt64, rng.Int64()), Len: int32(pick(0, math.MaxInt32))},
		})
	}
	x, err := Build(context.Background(), r, Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	idx := map[trace.TrackID]int32{}
	for _, e := range r.evs {
		id := EventID{Track: e.Track, Index: idx[e.Track]}
		idx[e.Track]++
		got, err := x.Event(id)
		if err != nil || got != e {
			t.Fatalf("Event(%v) = %+v, %v; want %+v", id, got, err, e)
		}
	}
	first, last := x.Span()
	s, err := x.Query(context.Background(), Viewport{Start: first, End: last + 1, Width: int(last-first) + 1, Tracks: []trace.TrackID{0, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	per := perTrack(r.evs)
	for _, ts := range s.Tracks {
		for _, it := range ts.Items {
			if it.Count != 1 {
				continue
			}
			want := per[ts.Track][it.First].Type
			if want >= typeEscape {
				want = OtherType
			}
			if it.Type != want {
				t.Fatalf("item %+v: type %d, want %d", it, it.Type, want)
			}
		}
	}
	for _, ty := range []trace.TypeID{65535, 69999, 3} {
		var want []EventID
		idx := map[trace.TrackID]int32{}
		for _, e := range r.evs {
			if e.Type == ty {
				want = append(want, EventID{e.Track, idx[e.Track]})
			}
			idx[e.Track]++
		}
		var got []EventID
		from := At(first)
		for {
			id, ok, err := x.Search(context.Background(), Filter{Types: []trace.TypeID{ty}}, from, false)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			got = append(got, id)
			from, _ = x.PositionOf(id)
		}
		slices.SortFunc(got, func(a, b EventID) int { return cmp.Or(cmp.Compare(a.Track, b.Track), cmp.Compare(a.Index, b.Index)) })
		slices.SortFunc(want, func(a, b EventID) int { return cmp.Or(cmp.Compare(a.Track, b.Track), cmp.Compare(a.Index, b.Index)) })
		if !slices.Equal(got, want) {
			t.Fatalf("type %d: found %d events, want %d", ty, len(got), len(want))
		}
	}
}

// TestConcurrentUse runs every query method from many goroutines at once
// (run with -race): an Index is shared by all the sessions of a trace.
func TestConcurrentUse(t *testing.T) {
	cfg := synth.Config{Events: 20000, Tracks: 20, Types: 9, Seed: 13}
	x := build(t, cfg)
	first, last := x.Span()
	ids := x.Tracks()
	p := Predicate{"value", OpGt, "500"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			var s Slice
			for range 30 {
				vp := randomViewport(rng, x, ids)
				if err := x.QueryInto(context.Background(), vp, &s); err != nil {
					t.Error(err)
					return
				}
				tm := first + trace.Time(rng.Int64N(int64(last-first)+1))
				if id, ok := x.HitTest(ids[rng.IntN(len(ids))], tm, 1000); ok {
					if _, err := x.Details(id, nil); err != nil {
						t.Error(err)
						return
					}
				}
				if _, _, err := x.Search(context.Background(), Filter{Where: []Predicate{p}}, At(tm), g%2 == 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestPutVarint compares putVarint with encoding/binary at every length
// boundary and on random values, written into buffers with exactly the
// room it needs and with more.
func TestPutVarint(t *testing.T) {
	var vs []int64
	for k := range 64 {
		for _, d := range []int64{-1, 0, 1} {
			vs = append(vs, int64(1)<<k+d, -(int64(1)<<k + d))
		}
	}
	vs = append(vs, math.MaxInt64, math.MinInt64, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		vs = append(vs, rng.Int64()>>rng.IntN(64)*(1-2*int64(rng.IntN(2))))
	}
	for _, v := range vs {
		want := binary.AppendVarint(nil, v)
		for _, room := range []int{len(want), binary.MaxVarintLen64 + 8} {
			b := make([]byte, 3+room)
			if n := putVarint(b, 3, v); n != 3+len(want) || !bytes.Equal(b[3:n], want) {
				t.Fatalf("putVarint(%d) with %d bytes of room = % x, want % x", v, room, b[3:n], want)
			}
		}
	}
}
