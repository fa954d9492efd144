package span

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"viewer/trace"
)

// TestColumn: slices pushed past several chunks read back in order, and
// a track added out of order comes out sorted by start then depth, equal
// ones in the order they were added.
func TestColumn(t *testing.T) {
	b := NewBuilder()
	in := b.Track(Track{Kind: KindCPU, Name: "in order"})
	out := b.Track(Track{Kind: KindSlices, Name: "out of order"})
	const n = 3*(1<<columnBits) + 17
	rng := rand.New(rand.NewPCG(3, 4))
	var want []Slice
	for i := range n {
		b.Add(Slice{Start: trace.Time(i), End: trace.Time(i + 1), Track: in, Name: NameID(i % 7)})
		s := Slice{Start: trace.Time(rng.IntN(500)), End: 1000, Track: out, Depth: uint16(rng.IntN(3)), Args: ArgsID(i)}
		b.Add(s)
		want = append(want, s)
	}
	set := b.Finish()
	if set.Len() != 2*n {
		t.Fatalf("Len %d, want %d", set.Len(), 2*n)
	}
	c := set.Column(in)
	for i := range n {
		if s := c.At(i); s.Start != trace.Time(i) || s.Track != in || s.Name != NameID(i%7) || c.End(i) != trace.Time(i+1) {
			t.Fatalf("slice %d: %+v", i, s)
		}
	}
	slices.SortStableFunc(want, func(x, y Slice) int {
		if x.Start != y.Start {
			return int(x.Start - y.Start)
		}
		return int(x.Depth) - int(y.Depth)
	})
	if got := set.TrackSlices(out); !slices.Equal(got, want) {
		t.Fatalf("out-of-order track not sorted stably")
	}
	if got := set.All(); len(got) != 2*n || got[0].Track != in || got[n].Track != out {
		t.Fatalf("All: %d slices", len(got))
	}
	if set.Column(-1) != nil || set.TrackSlices(99) != nil || set.TrackSamples(99) != nil {
		t.Fatal("unknown tracks answer something")
	}
}

// TestBuilderBounds: slices on no track are dropped and counted, an end
// before the start becomes the start, depth is capped, and samples come
// out in time order per track.
func TestBuilderBounds(t *testing.T) {
	b := NewBuilder()
	tr := b.Track(Track{Kind: KindSlices, Name: "a"})
	if b.Track(Track{Kind: KindSlices, Name: "a"}) != tr {
		t.Fatal("the same track twice got two ids")
	}
	b.Add(Slice{Start: 10, End: 5, Track: tr, Depth: 1000})
	b.Add(Slice{Start: 1, End: 2, Track: -1})
	b.Add(Slice{Start: 1, End: 2, Track: 7})
	ctr := b.Track(Track{Kind: KindCounter, Name: "c"})
	for _, tm := range []trace.Time{5, 3, 9, 1} {
		b.AddSample(Sample{Time: tm, Track: ctr, Value: float64(tm)})
	}
	b.AddSample(Sample{Time: 1, Track: 9})
	if b.Args(nil) != NoArgs {
		t.Error("an empty argument list got an id")
	}
	a := b.Args([]trace.Field{{Name: "x", Value: trace.IntValue(1)}})
	if b.NameBytes([]byte("n")) != b.Name("n") {
		t.Error("NameBytes and Name disagree")
	}
	set := b.Finish()
	if set.Dropped != 3 {
		t.Errorf("Dropped %d, want 3", set.Dropped)
	}
	s := set.TrackSlices(tr)
	if len(s) != 1 || s[0].End != 10 || s[0].Depth != MaxDepth {
		t.Errorf("slices %+v", s)
	}
	var times []trace.Time
	for _, x := range set.TrackSamples(ctr) {
		times = append(times, x.Time)
	}
	if !slices.Equal(times, []trace.Time{1, 3, 5, 9}) {
		t.Errorf("samples at %v", times)
	}
	if len(set.ArgList(a)) != 1 || set.ArgList(NoArgs) != nil || set.ArgList(99) != nil || set.Name(99) != "" {
		t.Error("table lookups")
	}
}

// TestColumnContiguous: a column is contiguous while each slice starts
// where the one before it ended (a long one included), not after a gap
// or an overlap, and, for slices added out of order, when they are so
// once sorted.
func TestColumnContiguous(t *testing.T) {
	cases := []struct {
		name  string
		times [][2]trace.Time // start, end, in the order added
		want  bool
	}{
		{"empty", nil, true},
		{"back to back", [][2]trace.Time{{0, 5}, {5, 5}, {5, 1 << 34}, {1 << 34, 1<<34 + 1}}, true},
		{"gap", [][2]trace.Time{{0, 5}, {6, 7}}, false},
		{"overlap", [][2]trace.Time{{0, 5}, {4, 7}}, false},
		{"out of order, back to back once sorted", [][2]trace.Time{{5, 9}, {0, 5}, {9, 12}}, true},
		{"out of order with a gap", [][2]trace.Time{{6, 9}, {0, 5}}, false},
	}
	for _, c := range cases {
		b := NewBuilder()
		tr := b.Track(Track{Kind: KindState, Name: c.name})
		for _, x := range c.times {
			b.Add(Slice{Start: x[0], End: x[1], Track: tr})
		}
		if got := b.Finish().Column(tr).Contiguous(); got != c.want {
			t.Errorf("%s: Contiguous %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAddKeyed: slices added through Keys (each looked up once, before
// or after others of its track were added) make the Set that Add makes
// of the same slices: the same columns, attributes, order and drops,
// out-of-order, long and deep slices included; the zero Key drops.
func TestAddKeyed(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	plain, keyed := NewBuilder(), NewBuilder()
	var tracks []TrackID
	for i := range 4 {
		tr := Track{Kind: KindSlices, Name: strconv.Itoa(i)}
		tracks = append(tracks, plain.Track(tr))
		keyed.Track(tr)
	}
	keys := map[Slice]Key{}
	prev := map[TrackID]trace.Time{}
	for i := range 5000 {
		// Track 0 gets its slices in order, some at the same time at a
		// lower depth; the others out of order too.
		tr := tracks[rng.IntN(len(tracks))]
		start := trace.Time(i * 10)
		switch rng.IntN(10) {
		case 0:
			if tr != tracks[0] {
				start = trace.Time(rng.IntN(50000))
			}
		case 1, 2:
			start = prev[tr]
		}
		prev[tr] = start
		end := start + trace.Time(rng.IntN(30))
		switch rng.IntN(20) {
		case 0:
			end = start - 5 // moved to the start
		case 1:
			end = start + 1<<33 // a long slice
		}
		s := Slice{Track: tr, Name: NameID(rng.IntN(5)), Args: ArgsID(rng.IntN(3)),
			Thread: trace.TrackID(rng.IntN(4)), Depth: uint16(rng.IntN(3)) * 150, Flags: Flags(rng.IntN(4))}
		if rng.IntN(50) == 0 {
			s.Track = -1
		}
		plain.Add(Slice{Start: start, End: end, Track: s.Track, Name: s.Name, Args: s.Args, Thread: s.Thread, Depth: s.Depth, Flags: s.Flags})
		k, ok := keys[s]
		if !ok {
			k = keyed.Key(s)
			keys[s] = k
		}
		keyed.AddKeyed(k, start, end)
	}
	keyed.AddKeyed(Key{}, 1, 2)
	plain.Add(Slice{Start: 1, End: 2, Track: 99})
	want, got := plain.Finish(), keyed.Finish()
	if got.Dropped != want.Dropped || got.Len() != want.Len() || want.Dropped == 0 {
		t.Fatalf("keyed: %d slices, %d dropped; plain: %d, %d", got.Len(), got.Dropped, want.Len(), want.Dropped)
	}
	if g, w := fmt.Sprint(got.All()), fmt.Sprint(want.All()); g != w {
		t.Fatal("keyed slices differ from those Add made")
	}
}

// TestActivities pairs starts and stops by task and id, nests by parent
// on the same track, and keeps unpaired ends as open slices.
func TestActivities(t *testing.T) {
	b := NewBuilder()
	b.See(0)
	t1 := b.Track(Track{Kind: KindSlices, Name: "t1"})
	t2 := b.Track(Track{Kind: KindSlices, Name: "t2"})
	var a Activities
	id := func(s string) []byte { return []byte(s) }
	a.Stop(b, t1, 1, 5, "q", "Q", id("x"), nil)                            // no start: open start
	a.Start(b, t1, 1, 10, "r", "R", id("r1"), nil, nil)                    // R 10-100
	a.Start(b, t1, 1, 20, "q", "Q", id("q1"), id("r1"), nil)               // Q 20-30 depth 1
	a.Start(b, t2, 2, 25, "q", "Q", id("q2"), id("r1"), nil)               // another track: depth 0
	a.Stop(b, t1, 1, 30, "q", "Q", id("q1"), nil)                          //
	a.Stop(b, t2, 2, 40, "q", "Q", id("q2"), nil)                          //
	a.Start(b, t1, 1, 50, "q", "Q", id("q3"), id("r1"), nil)               // never stops
	a.Stop(b, t1, 1, 100, "r", "R", id("r1"), []trace.Field{{Name: "ok"}}) //
	b.See(120)
	a.Finish(b)
	set := b.Finish()
	var got []string
	for _, s := range set.All() {
		var args []string
		for _, f := range set.ArgList(s.Args) {
			args = append(args, f.Name)
		}
		got = append(got, fmt.Sprintf("%s %s %d-%d d%d f%d %v", set.Tracks[s.Track].Name, set.Name(s.Name), s.Start, s.End, s.Depth, s.Flags, args))
	}
	want := []string{
		"t1 Q 0-5 d0 f1 []", "t1 R 10-100 d0 f0 [end.ok]", "t1 Q 20-30 d1 f0 []", "t1 Q 50-120 d1 f2 []",
		"t2 Q 25-40 d0 f0 []",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

type counting struct{ seen, finished int }

func (c *counting) Observe(trace.Reader, trace.Event, *Builder) { c.seen++ }
func (c *counting) Finish(trace.Reader, *Builder)               { c.finished++ }

// TestJoin: every joined deriver sees every event and one Finish.
func TestJoin(t *testing.T) {
	if Join() != nil || Join(nil, nil) != nil {
		t.Error("Join of nothing is not nil")
	}
	a, c := &counting{}, &counting{}
	if Join(nil, a) != Deriver(a) {
		t.Error("Join of one is not that one")
	}
	d, b := Join(a, nil, c), NewBuilder()
	for range 3 {
		d.Observe(nil, trace.Event{}, b)
	}
	d.Finish(nil, b)
	if *a != (counting{3, 1}) || *c != (counting{3, 1}) {
		t.Errorf("joined derivers saw %+v and %+v", *a, *c)
	}
}

// TestActivitiesBound: starts that never stop, all with one id, stop
// being kept past MaxOpenActivities and are counted as dropped.
func TestActivitiesBound(t *testing.T) {
	if testing.Short() {
		t.Skip("a million starts")
	}
	b := NewBuilder()
	tr := b.Track(Track{Kind: KindSlices, Name: "t"})
	var a Activities
	for i := range MaxOpenActivities + 10 {
		a.Start(b, tr, 0, trace.Time(i), "x", "X", []byte("same"), nil, nil)
	}
	a.Finish(b)
	set := b.Finish()
	if set.Dropped != 10 || set.Len() != MaxOpenActivities {
		t.Errorf("Dropped %d, %d slices", set.Dropped, set.Len())
	}
}

// TestColumnCompact: slices of 2^32 ns and more keep their ends, and a
// track whose slices all differ (past the column's lookup table) keeps
// every slice's attributes, in and out of start order.
func TestColumnCompact(t *testing.T) {
	b := NewBuilder()
	tr := b.Track(Track{Kind: KindSlices, Name: "mixed"})
	rng := rand.New(rand.NewPCG(5, 6))
	var want []Slice
	for i := range maxDedup + 3000 {
		s := Slice{Start: trace.Time(i * 10), Track: tr, Name: NameID(i % 5), Thread: trace.TrackID(i % 3), Depth: uint16(i % 2), Flags: Flags(i % 3)}
		if i < 2000 || rng.IntN(4) == 0 {
			s.Args = ArgsID(i) // distinct
		}
		if i%2 == 1 {
			s.Start = trace.Time(rng.Int64N(1 << 40)) // out of order
		}
		switch rng.IntN(3) {
		case 0:
			s.End = s.Start + 1<<32 + trace.Time(rng.Int64N(1<<40))
		case 1:
			s.End = s.Start + 1<<32 - 1
		default:
			s.End = s.Start + trace.Time(rng.IntN(100))
		}
		b.Add(s)
		want = append(want, s)
	}
	set := b.Finish()
	slices.SortStableFunc(want, func(x, y Slice) int {
		if x.Start != y.Start {
			return cmp.Compare(x.Start, y.Start)
		}
		return int(x.Depth) - int(y.Depth)
	})
	got := set.TrackSlices(tr)
	if len(got) != len(want) {
		t.Fatalf("%d slices, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("slice %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if n, most := set.Bytes(), int64(len(want))*40; n <= 0 || n > most {
		t.Fatalf("Bytes %d, want in (0, %d]", n, most)
	}
}

// BenchmarkBuilderAdd adds slices as a scheduling deriver does: to many
// tracks in turn, each in start order, their attributes repeating a few
// threads and names.
func BenchmarkBuilderAdd(b *testing.B) {
	const tracks, n = 132, 1 << 20
	for b.Loop() {
		bl := NewBuilder()
		ids := make([]TrackID, tracks)
		for i := range ids {
			ids[i] = bl.Track(Track{Kind: KindState, Name: "t" + strconv.Itoa(i)})
		}
		names := [...]NameID{bl.Name("running"), bl.Name("sleeping"), bl.Name("runnable")}
		for i := range n {
			t := trace.Time(i) * 100
			bl.Add(Slice{Start: t, End: t + 250, Track: ids[i%tracks], Name: names[i%3], Thread: trace.TrackID(i % 7)})
		}
		bl.Finish()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/slice")
}

// BenchmarkBuilderAddKeyed adds slices by Key as perf.Sched does: to
// many tracks in turn, each in start order, back to back on some tracks
// (a CPU's, a thread's states) and with gaps on others (syscalls).
func BenchmarkBuilderAddKeyed(b *testing.B) {
	const tracks, n = 132, 1 << 21
	for b.Loop() {
		bl := NewBuilder()
		keys := make([][3]Key, tracks)
		ends := make([]trace.Time, tracks)
		for i := range keys {
			id := bl.Track(Track{Kind: KindState, Name: "t" + strconv.Itoa(i)})
			for k := range keys[i] {
				keys[i][k] = bl.Key(Slice{Track: id, Name: bl.Name("n" + strconv.Itoa(k)), Thread: trace.TrackID(i)})
			}
		}
		for i := range n {
			tr := i % tracks
			t := trace.Time(i) * 100
			start := ends[tr]
			if tr&1 == 0 { // a gap
				start = max(start, t-50)
			}
			bl.AddKeyed(keys[tr][i%3], start, t)
			ends[tr] = t
		}
		bl.Finish()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/slice")
}

// TestColumnForms: a column's chunks in each of their forms (tight,
// packed, wide, moved from one to the next part way) read back exactly
// the slices pushed, checked against a plain list of them: runs of
// back-to-back slices, gaps, overlaps, slices of 2^32 ns and more,
// starts 2^32 ns and more after a chunk's first, and starts out of
// order, with few attributes or more than 8-bit indexes hold, in
// columns built slice by slice (so that a chunk's form is met at every
// length) and read at every length as well.
func TestColumnForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	seen := map[string]bool{} // the forms met
	for round := range 40 {
		var c Column
		var want []Slice
		at := trace.Time(rng.Int64N(1 << 40))
		// Each round keeps to a mix: mostly back to back, mostly gaps,
		// or anything.
		mix := round % 4
		n := rng.IntN(3<<columnBits) + 1
		for i := range n {
			start := at
			// Far starts and long slices move a chunk to the wide
			// form: a few per column.
			switch r := rng.IntN(10000); {
			case r < 5:
				start += 1<<32 + trace.Time(rng.IntN(1000)) // far from the chunk's first
			case r < 10 && mix == 3:
				start -= trace.Time(rng.IntN(1 << 20)) // out of order
			case mix == 0, mix == 1 && r < 2000, mix == 2 && r < 5000:
				// back to back
			default:
				start += trace.Time(rng.IntN(1000)) // a gap
			}
			end := start + trace.Time(rng.IntN(2000))
			if rng.IntN(2000) == 0 {
				end = start + 1<<32 + trace.Time(rng.IntN(3)) - 1 // long (or just short of it)
			}
			names := 4
			if round%5 == 4 && i > 700 {
				names = 1000 // past 256 attributes part way
			}
			s := Slice{Start: start, End: end, Name: NameID(rng.IntN(names)), Depth: uint16(rng.IntN(2)), Flags: Flags(rng.IntN(2))}
			c.push(s)
			want = append(want, s)
			at = max(at, end)
			if rng.IntN(100) == 0 || i == n-1 {
				// Read it all so far, as a Snapshot would.
				if c.Len() != len(want) {
					t.Fatalf("round %d: Len %d, want %d", round, c.Len(), len(want))
				}
				for k, w := range want {
					s, e := c.Times(k)
					if got := c.At(k); got != w || s != w.Start || e != w.End || c.Start(k) != w.Start || c.End(k) != w.End || c.Depth(k) != w.Depth {
						t.Fatalf("round %d, %d slices: slice %d is %+v (times %d %d), want %+v", round, len(want), k, got, s, e, w)
					}
				}
				// ReadTimes, from any slice on in batches of any size,
				// reads the same times, each call to its chunk's end.
				starts, ends := make([]trace.Time, rng.IntN(1500)+1), make([]trace.Time, 1500)
				for k := rng.IntN(len(want)); k < len(want); {
					m := c.ReadTimes(k, starts, ends)
					if w := min(len(starts), len(want)-k, 1<<columnBits-k%(1<<columnBits)); m != w {
						t.Fatalf("round %d, %d slices: ReadTimes(%d) read %d, want %d", round, len(want), k, m, w)
					}
					for j := range m {
						if w := want[k+j]; starts[j] != w.Start || ends[j] != w.End {
							t.Fatalf("round %d: ReadTimes(%d) read slice %d as %d %d, want %+v", round, k, k+j, starts[j], ends[j], w)
						}
					}
					k += m
				}
				if m := c.ReadTimes(len(want), starts, ends); m != 0 {
					t.Fatalf("round %d: ReadTimes past the end read %d", round, m)
				}
			}
		}
		for _, ch := range c.chunks {
			switch {
			case ch.wide != nil:
				seen["wide"] = true
			case ch.durs != nil:
				seen["packed"] = true
			default:
				seen["tight"] = true
			}
			seen[fmt.Sprint("8-bit keys ", ch.keys8 != nil)] = true
		}
		contiguous := true
		for k := 1; k < len(want); k++ {
			contiguous = contiguous && want[k].Start == want[k-1].End
		}
		if c.Contiguous() != contiguous {
			t.Fatalf("round %d: Contiguous %v, want %v", round, c.Contiguous(), contiguous)
		}
		c.finish()
		c.sort()
		slices.SortStableFunc(want, func(x, y Slice) int { return cmp.Or(cmp.Compare(x.Start, y.Start), cmp.Compare(x.Depth, y.Depth)) })
		if got := c.appendTo(nil); !slices.Equal(got, want) {
			t.Fatalf("round %d: sorted column differs", round)
		}
	}
	if len(seen) != 5 {
		t.Fatalf("forms met: %v", seen)
	}
}

// TestColumnBytes: a column takes 5 bytes a slice when its slices run
// back to back (a CPU's, a thread's states), 9 when they have gaps, 16
// when they are far apart, and 3 more for the first two with more
// attributes than 8-bit indexes hold.
func TestColumnBytes(t *testing.T) {
	const n = 8 << columnBits
	for _, c := range []struct {
		name      string
		gap, step trace.Time
		names     int
		per       int64
	}{{"back to back", 0, 100, 1, 5}, {"gaps", 10, 100, 1, 9}, {"far apart", 10, 1 << 30, 1, 16},
		{"back to back, many attributes", 0, 100, 300, 8}, {"gaps, many attributes", 10, 100, 300, 12}} {
		var col Column
		for i := range trace.Time(n) {
			col.push(Slice{Start: i * c.step, End: (i+1)*c.step - c.gap, Name: NameID(int(i) % c.names)})
		}
		col.finish()
		// Allowing for the chunks' headers, the first chunk's growth by
		// append and the attributes.
		if got, most := col.bytes(), c.per*n*21/20+2048+int64(c.names)*32; got < c.per*n || got > most {
			t.Errorf("%s: %d bytes for %d slices, want %d a slice", c.name, got, n, c.per)
		}
	}
}
