package render

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/synth"
)

// TestDecideRuns checks the run-at-a-time forward scan (decideRun, with
// helper goroutines) on a trace whose tracks span many spill runs and
// whose types share type slots (3 and 67, 5 and 69): every hit of a
// filter, in order, equals a brute-force filter of the events where one
// can be written, and the backward scan (which checks one candidate at a
// time) reversed for every filter, and the events of EvaluateFilter's
// mask; a budget or a deadline that stops the
// scan leaves a prefix of the hits.
func TestDecideRuns(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // three helpers, even on one core
	cfg := synth.Config{Events: 60_000, Tracks: 5, Types: 70, Seed: 12, MeanGap: 20}
	evs := events(t, cfg)
	x := build(t, cfg)
	ref := synth.New(cfg)
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
	pred := func(field string, op Op, v string) Expr {
		return Expr{Kind: ExprPred, Pred: Predicate{field, op, v}}
	}
	name := func(s string) Expr { return Expr{Kind: ExprName, Text: s} }
	filters := []struct {
		f     Filter
		brute func(trace.Event, trace.Details) bool // nil: no brute force
	}{
		{Filter{Types: []trace.TypeID{3}, Where: []Predicate{{"value", OpGe, "0"}}}, // every candidate a hit
			func(e trace.Event, d trace.Details) bool { return e.Type == 3 }},
		{Filter{Types: []trace.TypeID{3, 67}, Where: []Predicate{{"value", OpLt, "300"}}},
			func(e trace.Event, d trace.Details) bool {
				return (e.Type == 3 || e.Type == 67) && synth.Value(e) < 300
			}},
		{Filter{Types: []trace.TypeID{1, 15}, Tracks: []trace.TrackID{0, 2}, Where: []Predicate{{"name", OpContains, "ITEM-1"}}},
			func(e trace.Event, d trace.Details) bool {
				return (e.Type == 1 || e.Type == 15) && (e.Track == 0 || e.Track == 2) && Predicate{"name", OpContains, "ITEM-1"}.Match(d)
			}},
		{Filter{Where: []Predicate{{"point.y", OpEq, "42"}}},
			func(e trace.Event, d trace.Details) bool { return synth.Value(e)/10 == 42 }},
		// A field predicate on one type or any event of another (decided
		// by the type column alone) of a slot shared with the first.
		{Filter{Expr: Expr{Kind: ExprOr, Args: []Expr{And(name("Event69"), pred("value", OpEq, "7")), And(name("Event5"), Expr{Kind: ExprNot, Args: []Expr{name("Event5")}}), name("EVENT67")}}}, nil},
		{Filter{Expr: Expr{Kind: ExprText, Text: "item-36"}}, nil},
		{Filter{Expr: And(pred("@track", OpContains, "1"), pred("label", OpMatch, "value=9+$"))}, nil},
		{Filter{Expr: pred("@time", OpLt, "0")}, nil},
	}
	ctx := context.Background()
	collect := func(f Filter, from Position, backward bool) ([]Position, error) {
		var hits []Position
		for pos, err := range x.Hits(ctx, f, from, backward) {
			if err != nil {
				return hits, err
			}
			hits = append(hits, pos)
		}
		return hits, nil
	}
	for fi, c := range filters {
		got, err := collect(c.f, At(math.MinInt64), false)
		if err != nil {
			t.Fatalf("filter %d: %v", fi, err)
		}
		back, err := collect(c.f, At(math.MaxInt64), true)
		if err != nil {
			t.Fatalf("filter %d backward: %v", fi, err)
		}
		slices.Reverse(back)
		if !slices.Equal(got, back) {
			t.Fatalf("filter %d: %d hits forward, %d backward (first difference at %d)", fi, len(got), len(back), firstDiff(got, back))
		}
		if c.brute != nil {
			var want []Position
			for _, a := range all {
				d, err := ref.Details(a.e)
				if err != nil {
					t.Fatal(err)
				}
				if c.brute(a.e, d) {
					want = append(want, a.pos)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("filter %d: %d hits, brute force %d (first difference at %d)", fi, len(got), len(want), firstDiff(got, want))
			}
		}
		// The timeline's filter mask holds the same events.
		mask, err := x.EvaluateFilter(ctx, c.f)
		if err != nil || !mask.Complete || mask.Total() != int64(len(got)) {
			t.Fatalf("filter %d: mask of %d events (err %v), want %d", fi, mask.Total(), err, len(got))
		}
		for _, p := range got {
			if !mask.Bitmap(p.ID.Track).Has(int(p.ID.Index)) {
				t.Fatalf("filter %d: the mask lacks hit %+v", fi, p)
			}
		}
		if fi < 4 && len(got) < 100 {
			t.Fatalf("filter %d: only %d hits: the test tests little", fi, len(got))
		}
		// From the middle of a track's run.
		if len(got) > 10 {
			from := got[len(got)/2]
			mid, err := collect(c.f, from, false)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(mid, got[len(got)/2+1:]) {
				t.Fatalf("filter %d from %+v: %d hits, want %d", fi, from, len(mid), len(got)-len(got)/2-1)
			}
		}
		// A budget that runs out leaves a prefix of the hits.
		for _, budget := range []int64{1, 700, 5000, 20_000} {
			f := c.f
			f.Budget = budget
			part, err := collect(f, At(math.MinInt64), false)
			if err != nil && !errors.Is(err, ErrBudget) {
				t.Fatal(err)
			}
			if len(part) > len(got) || !slices.Equal(part, got[:len(part)]) {
				t.Fatalf("filter %d budget %d: %d hits, not a prefix of the %d hits", fi, budget, len(part), len(got))
			}
			if fi < 4 && int64(len(part)) > budget { // every candidate of these reads its record
				t.Fatalf("filter %d budget %d: %d hits", fi, budget, len(part))
			}
			if err == nil && len(part) != len(got) {
				t.Fatalf("filter %d budget %d: %d hits without ErrBudget, want %d", fi, budget, len(part), len(got))
			}
		}
	}
	// A deadline: the hits before it, then the context's error.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := Filter{Types: []trace.TypeID{3}, Where: []Predicate{{"value", OpGe, "0"}}}
	var n int
	var stop error
	for _, err := range x.Hits(cctx, f, At(math.MinInt64), false) {
		if err != nil {
			stop = err
			break
		}
		if n++; n == 50 {
			cancel()
		}
	}
	if !errors.Is(stop, context.Canceled) || n < 50 {
		t.Fatalf("after cancel: %d hits, %v", n, stop)
	}
}

func firstDiff(a, b []Position) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestSkipRecords checks skipRecords against skipRecord applied n times,
// on records of every length and on damaged input.
func TestSkipRecords(t *testing.T) {
	var b []byte
	var prev trace.Event
	for i := range 500 {
		e := trace.Event{Type: trace.TypeID(i % 7), Seq: uint32(i * i * 977), CPU: int32(i % 3), Stack: trace.StackID(i << (i % 40)), Payload: trace.Loc{Off: int64(i) << (i % 50), Len: int32(i)}}
		b = appendRecord(slices.Grow(b, maxRecordSize), &prev, &e)
		prev = e
	}
	for n := range 60 {
		for i := 0; i < 40; i++ {
			pos := 0
			for range i {
				pos = stepRecord(t, b, pos)
			}
			want := pos
			for range n {
				want = stepRecord(t, b, want)
			}
			if got := skipRecords(b, pos, n); got != want {
				t.Fatalf("skipRecords(at record %d, %d) = %d, want %d", i, n, got, want)
			}
		}
	}
	if got := skipRecords(b, 0, 501); got != len(b)+1 {
		t.Fatalf("past the end: %d, want %d", got, len(b)+1)
	}
	if p := stepRecord(t, b, 0); stepRecord(t, b, p) < p+3 {
		t.Fatalf("record 1 takes %d bytes", stepRecord(t, b, p)-p)
	} else if got := skipRecords(b[:p+2], p, 1); got != p+3 {
		t.Fatalf("a short record: %d, want %d", got, p+3)
	}
}

// TestDecideRunsOpened: an Index opened from its file (whose spill
// records lie in the file's mapping, and whose reader comes with Attach)
// finds the hits of field predicates the built Index finds, with helper
// goroutines and without, and says ErrLoading before Attach.
func TestDecideRunsOpened(t *testing.T) {
	cfg := synth.Config{Events: 30_000, Tracks: 4, Types: 70, Seed: 13, MeanGap: 20}
	x := build(t, cfg)
	y, _ := writeAndOpen(t, x)
	f := Filter{Expr: And(Expr{Kind: ExprName, Text: "Event3"}, Expr{Kind: ExprPred, Pred: Predicate{"value", OpLt, "300"}})}
	hits := func(x *Index) ([]Position, error) {
		var got []Position
		for pos, err := range x.Hits(context.Background(), f, At(math.MinInt64), false) {
			if err != nil {
				return got, err
			}
			got = append(got, pos)
		}
		return got, nil
	}
	if _, err := hits(y); !errors.Is(err, ErrLoading) {
		t.Fatalf("before Attach: %v, want ErrLoading", err)
	}
	if err := y.Attach(context.Background(), synth.New(cfg), Options{SpillDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	want, err := hits(x)
	if err != nil || len(want) < 100 {
		t.Fatalf("built index: %d hits, %v", len(want), err)
	}
	for _, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		got, err := hits(y)
		runtime.GOMAXPROCS(prev)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("GOMAXPROCS %d: %d hits (%v), want %d", procs, len(got), err, len(want))
		}
	}
}

// TestCloseDuringSearch: Close while field searches run (a spill run at
// a time, in place in the mapped spill file, on helper goroutines) waits
// for the runs being read and fails the reads after it with ErrClosed:
// each search ends, with every hit or with a prefix of them and that
// error, and nothing reads the unmapped records (which would crash).
// Details after Close says ErrClosed too.
func TestCloseDuringSearch(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	ctx := context.Background()
	cfg := synth.Config{Events: 100_000, Tracks: 6, Seed: 14, MeanGap: 20}
	f := Filter{Where: []Predicate{{"value", OpLt, "500"}}}
	hits := func(x *Index, seen chan<- int) ([]Position, error) {
		var got []Position
		for pos, err := range x.Hits(ctx, f, At(math.MinInt64), false) {
			if err != nil {
				return got, err
			}
			got = append(got, pos)
			if seen != nil && len(got)%200 == 0 {
				select {
				case seen <- len(got):
				default:
				}
			}
		}
		return got, nil
	}
	closed := 0
	for round := range 5 {
		x, err := Build(ctx, synth.New(cfg), Options{SpillDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		want, err := hits(x, nil)
		if err != nil || len(want) < 10_000 {
			t.Fatalf("%d hits, %v", len(want), err)
		}
		seen := make(chan int, 1)
		type result struct {
			got []Position
			err error
		}
		res := make([]result, 3)
		var wg sync.WaitGroup
		for g := range res {
			wg.Go(func() {
				var s chan<- int
				if g == 0 {
					s = seen
				}
				res[g].got, res[g].err = hits(x, s)
			})
		}
		for n := range seen { // close after a few hundred hits, later each round
			if n >= 200*(round+1) {
				break
			}
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for g, r := range res {
			switch {
			case r.err == nil && slices.Equal(r.got, want):
			case errors.Is(r.err, ErrClosed) && len(r.got) < len(want) && slices.Equal(r.got, want[:len(r.got)]):
				closed++
			default:
				t.Fatalf("round %d search %d: %d hits of %d, %v", round, g, len(r.got), len(want), r.err)
			}
		}
		if _, err := x.Details(want[0].ID, nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("Details after Close: %v, want ErrClosed", err)
		}
	}
	if closed == 0 {
		t.Fatal("no search was cut by Close: the test tests nothing")
	}
}

// TestDecideRunsRandom: on random traces (few or many types, so that
// types share slots or escape the type column; tracks of one run or of
// many, whose last runs are short), a forward search by a field
// predicate on a random set of types, from a random position, finds
// what a brute-force filter of the events finds, in order: decideRun's
// jumps through the block tables land on the records they want.
func TestDecideRunsRandom(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	rng := rand.New(rand.NewPCG(16, 6))
	ctx := context.Background()
	for round := range 12 {
		cfg := synth.Config{
			Events:  int64(1 + rng.IntN(40_000)),
			Tracks:  1 + rng.IntN(12),
			Types:   []int{1, 3, 40, 200, 70_000}[rng.IntN(5)],
			Seed:    rng.Uint64(),
			MeanGap: time.Duration(1 + rng.IntN(30)),
		}
		evs := events(t, cfg)
		x := build(t, cfg)
		pos := make([]Position, len(evs))
		idx := map[trace.TrackID]int32{}
		for i, e := range evs {
			pos[i] = Position{e.Time, EventID{e.Track, idx[e.Track]}}
			idx[e.Track]++
		}
		order := make([]int, len(evs))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int {
			return cmp.Or(cmp.Compare(pos[a].Time, pos[b].Time), cmp.Compare(pos[a].ID.Track, pos[b].ID.Track), cmp.Compare(pos[a].ID.Index, pos[b].ID.Index))
		})
		for range 4 {
			want := map[trace.TypeID]bool{}
			var types []trace.TypeID
			for range 1 + rng.IntN(3) {
				ty := trace.TypeID(rng.IntN(cfg.Types))
				if rng.IntN(3) == 0 { // a type of the trace
					ty = evs[rng.IntN(len(evs))].Type
				}
				want[ty] = true
				types = append(types, ty)
			}
			limit := rng.IntN(1000)
			f := Filter{Types: types, Where: []Predicate{{"value", OpLt, strconv.Itoa(limit)}}}
			from := At(math.MinInt64)
			if rng.IntN(2) == 0 {
				from = pos[order[rng.IntN(len(order))]]
			}
			var brute []Position
			for _, i := range order {
				e := evs[i]
				if want[e.Type] && synth.Value(e) < int64(limit) && from.less(pos[i]) {
					brute = append(brute, pos[i])
				}
			}
			var got []Position
			for p, err := range x.Hits(ctx, f, from, false) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p)
			}
			if !slices.Equal(got, brute) {
				t.Fatalf("round %d %+v, types %v, value < %d from %+v: %d hits, brute force %d (first difference at %d)",
					round, cfg, types, limit, from, len(got), len(brute), firstDiff(got, brute))
			}
		}
	}
}

// TestBlockTable checks the block table of every spill run the writer
// wrote against the records' offsets found by stepping over them, and
// blockTable and blockStart on tables that do not fit their run.
func TestBlockTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 7))
	for range 6 {
		cfg := randomConfig(rng)
		cfg.Events = int64(rng.IntN(30_000))
		x := build(t, cfg)
		for _, tid := range x.Tracks() {
			st := &x.track(tid).spill
			for k, r := range st.runs {
				n := st.n - r.first
				if k+1 < len(st.runs) {
					n = st.runs[k+1].first - r.first
				}
				b := make([]byte, r.size)
				if err := x.spill.readAt(b, r.off); err != nil {
					t.Fatal(err)
				}
				table, end, err := blockTable(b, n)
				if err != nil {
					t.Fatal(err)
				}
				pos := 0
				for i := range n {
					if i > 0 && i%spillBlock == 0 {
						if got, err := blockStart(table, i/spillBlock, end); got != pos || err != nil {
							t.Fatalf("track %d run %d: record %d at %d (%v), stepping says %d", tid, k, i, got, err, pos)
						}
					}
					pos = stepRecord(t, b[:end], pos)
				}
				if pos != end {
					t.Fatalf("track %d run %d: %d records end at %d, the table starts at %d", tid, k, n, pos, end)
				}
			}
		}
	}
	if _, _, err := blockTable(make([]byte, 5), 100); err == nil {
		t.Error("a table longer than its run: no error")
	}
	if _, _, err := blockTable(nil, 0); err == nil {
		t.Error("a run of no records: no error")
	}
	table := []byte{0xff, 0xff}
	if _, err := blockStart(table, 1, 100); err == nil {
		t.Error("an offset past the records: no error")
	}
	if _, err := blockStart(table, 2, 1<<16); err == nil {
		t.Error("a block past the table: no error")
	}
}

// TestNextAction checks nextAction, by table and by comparing lanes,
// against a plain scan, on random codes (some with the top bit set,
// some typeEscape) and random sets of codes with an action.
func TestNextAction(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 8))
	pool := []uint16{0, 1, 2, 7, 64, 71, 0x7fff, 0x8000, 0x8001, 0xfffe, typeEscape}
	for round := range 2000 {
		ch := make([]uint16, rng.IntN(40))
		for i := range ch {
			ch[i] = pool[rng.IntN(len(pool))]
		}
		act := new([typeEscape + 1]uint8)
		for range rng.IntN(4) {
			act[pool[rng.IntN(len(pool))]] = uint8(1 + rng.IntN(3))
		}
		few := fewActions(act)
		if c := countActions(act); c <= maxFew && len(few) != c || c > maxFew && few != nil {
			t.Fatalf("fewActions: %d codes for %d with an action", len(few), c)
		}
		for j := range len(ch) + 1 {
			want := j
			for want < len(ch) && act[ch[want]] == actNone {
				want++
			}
			if got := nextAction(ch, j, act, nil); got != want {
				t.Fatalf("round %d: by table from %d: %d, want %d", round, j, got, want)
			}
			if got := nextAction(ch, j, act, few); got != want {
				t.Fatalf("round %d: by lanes (%d codes) from %d: %d, want %d", round, len(few), j, got, want)
			}
		}
	}
}

func countActions(act *[typeEscape + 1]uint8) int {
	n := 0
	for _, a := range act {
		if a != actNone {
			n++
		}
	}
	return n
}

// stepRecord returns the index after the record at b[i:], decoding it:
// the oracle the record skipping is checked against.
func stepRecord(t *testing.T, b []byte, i int) int {
	t.Helper()
	var e trace.Event
	next, err := decodeRecord(&e, b, i)
	if err != nil {
		t.Fatalf("record at %d: %v", i, err)
	}
	return next
}
