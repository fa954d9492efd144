package span

import (
	"cmp"
	"slices"

	"viewer/trace"
)

// columnBits sets the chunk size of a Column: 1024 slices (5 to 16 KiB).
const columnBits = 10

// Column holds one track's slices in chunks that are never copied once
// full: a derivation that grows to millions of slices allocates each
// byte once, instead of copying the whole every time it doubles. Every
// chunk but the last holds exactly 1<<columnBits slices.
//
// A slice is stored as its times and the index of its attributes (name,
// arguments, thread, depth, flags) in a table of the column, where slices
// that share them share one entry (a CPU track's slices repeat a few
// threads, a state track's a few states). A chunk stores them in the most
// compact of its forms that holds them (see chunk): 5 bytes a slice when
// each starts where the one before it ends (a CPU's track, a thread's
// states) and the column has fewer than 256 attributes, 9 when they are
// less than 2^32 ns from the chunk's first start and long, 16 at most.
// Derived slices are stored by the million, and writing fresh memory is
// what deriving them costs.
type Column struct {
	// What every slice added reads and writes comes first, beside what
	// the Builder does (perTrack): one cache line.
	chunks []chunk
	n      int
	// gapped says a slice starts other than where the one before it
	// ends; lastEnd is the last slice's end.
	lastEnd trace.Time
	gapped  bool
	// keys32 says the column has had an attributes index of 256 or
	// more: new chunks keep 32-bit ones from the start.
	keys32 bool
	track  TrackID
	attrs  []attr
	longs  []long
	// dedup finds the attrs entry of a slice while the column is built;
	// nil after Finish, and once it holds maxDedup entries (a track
	// whose slices all differ, as activities with arguments of their
	// own: a table of them would only cost).
	dedup map[attr]uint32
	// recent holds attributes looked up, found without hashing the
	// whole: a track's slices mostly repeat a handful (a CPU track's
	// the threads it runs, a dozen or so), which rarely share a pair of
	// entries; nil before the column holds recentFrom slices and after
	// Finish.
	recent *[recentAttrs]recentAttr
}

// A Column of recentFrom slices or more caches 2^recentBits attributes
// (24 bytes each): small columns, however many, cost no more than their
// slices.
const (
	recentBits  = 5
	recentAttrs = 1 << recentBits
	recentFrom  = 64
)

type recentAttr struct {
	a  attr
	k  uint32
	ok bool
}

// chunk holds up to 1<<columnBits consecutive slices of a Column, their
// times in one of three forms:
//
//   - tight (durs and wide nil): each slice starts where the one before
//     it ends, less than 2^32 ns after the chunk's first start (offs); a
//     slice's end is the next one's start (the last one's: last);
//   - packed (wide nil): every slice starts less than 2^32 ns after the
//     chunk's first start (offs) and lasts less than 2^32 ns (durs);
//   - wide: any slices (wide; a long one's end in the column's longs).
//
// The attributes' indexes of a tight or packed chunk are 8-bit (keys8)
// while they are below 256, else 32-bit (keys); a wide chunk keeps them
// in wide. A chunk begins tight with 8-bit keys (32-bit ones once its
// column has had a larger index) and moves to the next form when a slice
// does not fit the one it is in, copying what it holds (at most a
// chunk's slices): the forms are the same slices, and readers share a
// chunk's arrays (a Snapshot), so a chunk is rewritten only into fresh
// memory.
type chunk struct {
	// What adding a slice to a tight chunk reads and writes first (a
	// cache line), a packed chunk's durs next.
	base  trace.Time // the first slice's start
	last  trace.Time // the last slice's end
	offs  []uint32
	keys8 []uint8
	durs  []uint32
	keys  []uint32
	wide  []rec
}

// rec is a slice of a wide chunk.
type rec struct {
	start trace.Time
	dur   uint32 // end − start; unused for a long slice
	key   uint32 // index into attrs, or longBit|index into longs
}

const longBit = 1 << 31

func (ch *chunk) len() int {
	if ch.wide != nil {
		return len(ch.wide)
	}
	return len(ch.offs)
}

// attr is what a slice holds beside its times.
type attr struct {
	name   NameID
	args   ArgsID
	thread trace.TrackID
	depth  uint16
	flags  Flags
}

// long is a slice of 2^32 ns or more: its end and its attrs index.
type long struct {
	end trace.Time
	key uint32
}

// maxDedup bounds the distinct attributes a column looks up.
const maxDedup = 1 << 16

// Len returns the number of slices.
func (c *Column) Len() int { return c.n }

// At returns slice i (0 ≤ i < Len).
func (c *Column) At(i int) Slice {
	s, e := c.Times(i)
	a := &c.attrs[c.key(i)]
	return Slice{Start: s, End: e, Track: c.track, Name: a.name, Args: a.args, Thread: a.thread, Depth: a.depth, Flags: a.flags}
}

// Start returns the start of slice i.
func (c *Column) Start(i int) trace.Time {
	ch, j := &c.chunks[i>>columnBits], i&(1<<columnBits-1)
	if ch.wide == nil {
		return ch.base + trace.Time(ch.offs[j])
	}
	return ch.wide[j].start
}

// End returns the end of slice i.
func (c *Column) End(i int) trace.Time {
	_, e := c.Times(i)
	return e
}

// Times returns the start and end of slice i.
func (c *Column) Times(i int) (start, end trace.Time) {
	return c.chunkTimes(&c.chunks[i>>columnBits], i&(1<<columnBits-1))
}

// chunkTimes returns the times of slice j of ch.
func (c *Column) chunkTimes(ch *chunk, j int) (start, end trace.Time) {
	switch {
	case ch.wide != nil:
		r := &ch.wide[j]
		if r.key&longBit != 0 {
			return r.start, c.longs[r.key&^longBit].end
		}
		return r.start, r.start + trace.Time(r.dur)
	case ch.durs != nil:
		start = ch.base + trace.Time(ch.offs[j])
		return start, start + trace.Time(ch.durs[j])
	}
	start = ch.base + trace.Time(ch.offs[j])
	if j+1 < len(ch.offs) {
		return start, ch.base + trace.Time(ch.offs[j+1])
	}
	return start, ch.last
}

// ReadTimes writes the starts and ends of slices i, i+1, … into starts
// and ends, as many as both hold up to the end of slice i's chunk (and
// of the column), and returns how many: read chunk by chunk, a whole
// column costs a pass over each chunk's arrays rather than a look-up
// per slice (as Times makes). 0 ≤ i ≤ Len.
func (c *Column) ReadTimes(i int, starts, ends []trace.Time) int {
	if i >= c.n {
		return 0
	}
	ch, j := &c.chunks[i>>columnBits], i&(1<<columnBits-1)
	m := min(ch.len()-j, len(starts), len(ends))
	starts, ends = starts[:m], ends[:m]
	switch {
	case ch.wide != nil:
		for k, r := range ch.wide[j : j+m] {
			starts[k] = r.start
			if r.key&longBit != 0 {
				ends[k] = c.longs[r.key&^longBit].end
			} else {
				ends[k] = r.start + trace.Time(r.dur)
			}
		}
	case ch.durs != nil:
		durs := ch.durs[j : j+m]
		for k, o := range ch.offs[j : j+m] {
			starts[k] = ch.base + trace.Time(o)
			ends[k] = starts[k] + trace.Time(durs[k])
		}
	default:
		for k, o := range ch.offs[j : j+m] {
			starts[k] = ch.base + trace.Time(o)
		}
		if m > 0 {
			copy(ends, starts[1:])
			ends[m-1] = ch.last
			if j+m < len(ch.offs) {
				ends[m-1] = ch.base + trace.Time(ch.offs[j+m])
			}
		}
	}
	return m
}

// key returns the index of slice i's attributes.
func (c *Column) key(i int) uint32 { return c.chunkKey(&c.chunks[i>>columnBits], i&(1<<columnBits-1)) }

func (c *Column) chunkKey(ch *chunk, j int) uint32 {
	switch {
	case ch.keys8 != nil:
		return uint32(ch.keys8[j])
	case ch.wide == nil:
		return ch.keys[j]
	}
	if k := ch.wide[j].key; k&longBit != 0 {
		return c.longs[k&^longBit].key
	}
	return ch.wide[j].key
}

// Contiguous reports whether every slice starts where the one before
// it ends, as a CPU track's and a thread's states do: the slices then
// cover the time from the first start to the last end without a gap or
// an overlap, and each one's length follows from the next start.
func (c *Column) Contiguous() bool { return !c.gapped }

// Depth returns the nesting depth of slice i.
func (c *Column) Depth(i int) uint16 { return c.attrs[c.key(i)].depth }

// Depths returns the distinct nesting depths of the slices, in order.
func (c *Column) Depths() []uint16 {
	var ds []uint16
	for i := range c.attrs {
		if d := c.attrs[i].depth; !slices.Contains(ds, d) {
			ds = append(ds, d)
		}
	}
	slices.Sort(ds)
	return ds
}

// bytes returns the memory the column holds.
func (c *Column) bytes() int64 {
	var n int64
	for i := range c.chunks {
		ch := &c.chunks[i]
		n += int64(cap(ch.offs)+cap(ch.durs)+cap(ch.keys))*4 + int64(cap(ch.keys8)) + int64(cap(ch.wide))*16
	}
	return n + int64(cap(c.chunks))*136 + int64(cap(c.attrs))*16 + int64(cap(c.longs))*16
}

func (c *Column) attrKey(s Slice) uint32 {
	a := attr{name: s.Name, args: s.Args, thread: s.Thread, depth: s.Depth, flags: s.Flags}
	if c.recent == nil {
		if c.n < recentFrom {
			return c.lookup(a)
		}
		c.recent = new([recentAttrs]recentAttr)
	}
	// Two ways: the slot the attributes hash to and its neighbour.
	h := (uint32(a.thread)*0x9e3779b1 ^ uint32(a.name)*0x85ebca6b ^ uint32(a.args)*0xc2b2ae35 ^ uint32(a.depth)<<8 ^ uint32(a.flags)) >> (32 - recentBits)
	r, o := &c.recent[h], &c.recent[h^1]
	switch {
	case r.ok && r.a == a:
		return r.k
	case o.ok && o.a == a:
		return o.k
	}
	k := c.lookup(a)
	if r.ok {
		r = o
	}
	*r = recentAttr{a: a, k: k, ok: true}
	return k
}

func (c *Column) lookup(a attr) uint32 {
	if c.dedup == nil && len(c.attrs) == 0 {
		c.dedup = map[attr]uint32{}
	}
	if c.dedup != nil {
		if k, ok := c.dedup[a]; ok {
			return k
		}
	}
	k := uint32(len(c.attrs))
	c.attrs = append(c.attrs, a)
	if c.dedup != nil {
		if len(c.dedup) < maxDedup {
			c.dedup[a] = k
		} else {
			c.dedup = nil
		}
	}
	return k
}

// push appends s (End ≥ Start).
func (c *Column) push(s Slice) { c.pushKey(s.Start, s.End, c.attrKey(s)) }

// pushKey appends a slice from start to end (end ≥ start) whose
// attributes are attrs[k].
func (c *Column) pushKey(start, end trace.Time, k uint32) {
	n := c.n >> columnBits
	if n < len(c.chunks) {
		// The common slice: back to back with the one before it in a
		// tight chunk of 8-bit keys, past the chunk's first (whose end
		// is then the column's: no gap), in the chunk's 2^32 ns.
		ch := &c.chunks[n]
		off := uint64(start - ch.base)
		if off < 1<<32 && k <= 0xff && ch.keys8 != nil && len(ch.offs) > 0 {
			switch {
			case ch.durs == nil && start == ch.last:
				ch.offs = append(ch.offs, uint32(off))
				ch.keys8 = append(ch.keys8, uint8(k))
				ch.last, c.lastEnd = end, end
				c.n++
				return
			case ch.durs != nil && uint64(end-start) < 1<<32:
				// Or any in a packed chunk (a thread's syscalls).
				c.gapped = c.gapped || start != c.lastEnd
				ch.offs = append(ch.offs, uint32(off))
				ch.durs = append(ch.durs, uint32(end-start))
				ch.keys8 = append(ch.keys8, uint8(k))
				ch.last, c.lastEnd = end, end
				c.n++
				return
			}
		}
	}
	if n == len(c.chunks) {
		size := 1 << columnBits
		if n == 0 {
			size = 16 // small tracks stay small; the first chunk grows by append
		}
		ch := chunk{base: start, last: start, offs: make([]uint32, 0, size)}
		if c.keys32 {
			ch.keys = make([]uint32, 0, size)
		} else {
			ch.keys8 = make([]uint8, 0, size)
		}
		c.chunks = append(c.chunks, ch)
	}
	if c.n > 0 && start != c.lastEnd {
		c.gapped = true
	}
	c.lastEnd = end
	ch := &c.chunks[n]
	for !c.add(ch, start, end, k) {
		c.widen(ch)
	}
	c.n++
}

// add appends a slice to ch if its form holds it.
func (c *Column) add(ch *chunk, start, end trace.Time, k uint32) bool {
	if ch.wide != nil {
		ch.wide = append(ch.wide, c.wideRec(start, end, k))
		ch.last = end
		return true
	}
	off := uint64(start - ch.base) // huge when start is before base
	d := uint64(end - start)
	if off >= 1<<32 || ch.durs == nil && start != ch.last && len(ch.offs) > 0 || ch.durs != nil && d >= 1<<32 {
		return false
	}
	if ch.keys8 != nil && k > 0xff {
		ch.keys = make([]uint32, len(ch.keys8), cap(ch.keys8))
		for j, k := range ch.keys8 {
			ch.keys[j] = uint32(k)
		}
		ch.keys8, c.keys32 = nil, true
	}
	ch.offs = append(ch.offs, uint32(off))
	if ch.durs != nil {
		ch.durs = append(ch.durs, uint32(d))
	}
	if ch.keys8 != nil {
		ch.keys8 = append(ch.keys8, uint8(k))
	} else {
		ch.keys = append(ch.keys, k)
	}
	ch.last = end
	return true
}

func (c *Column) wideRec(start, end trace.Time, k uint32) rec {
	r := rec{start: start, key: k}
	if d := uint64(end - start); d < 1<<32 {
		r.dur = uint32(d)
	} else {
		c.longs = append(c.longs, long{end: end, key: k})
		r.key = longBit | uint32(len(c.longs)-1)
	}
	return r
}

// widen moves ch to the next form that holds its slices, into fresh
// arrays of the same capacity.
func (c *Column) widen(ch *chunk) {
	if ch.durs == nil {
		durs := make([]uint32, len(ch.offs), cap(ch.offs))
		ok := true
		for j := range durs {
			s, e := c.chunkTimes(ch, j)
			if d := uint64(e - s); d < 1<<32 {
				durs[j] = uint32(d)
			} else {
				ok = false
				break
			}
		}
		if ok {
			ch.durs = durs
			return
		}
	}
	w := make([]rec, len(ch.offs), cap(ch.offs))
	for j := range w {
		s, e := c.chunkTimes(ch, j)
		w[j] = c.wideRec(s, e, c.chunkKey(ch, j))
	}
	ch.offs, ch.durs, ch.keys8, ch.keys, ch.wide = nil, nil, nil, nil, w
}

// finish ends building: the lookup table goes.
func (c *Column) finish() {
	c.dedup, c.recent = nil, nil
	c.attrs, c.longs = slices.Clip(c.attrs), slices.Clip(c.longs)
}

// sort sorts the slices by start, then depth, keeping the order of
// equals. It writes fresh chunks: the old ones may be shared (Snapshot).
func (c *Column) sort() {
	type flat struct {
		start, end trace.Time
		key        uint32
	}
	all := make([]flat, 0, c.n)
	for i := range c.n {
		s, e := c.Times(i)
		all = append(all, flat{s, e, c.key(i)})
	}
	slices.SortStableFunc(all, func(x, y flat) int {
		return cmp.Or(cmp.Compare(x.start, y.start), cmp.Compare(c.attrs[x.key].depth, c.attrs[y.key].depth))
	})
	c.chunks, c.longs, c.n, c.gapped, c.keys32 = nil, nil, 0, false, false
	for _, f := range all {
		c.pushKey(f.start, f.end, f.key)
	}
	c.longs = slices.Clip(c.longs)
}

// appendTo appends the slices to dst.
func (c *Column) appendTo(dst []Slice) []Slice {
	for i := range c.n {
		dst = append(dst, c.At(i))
	}
	return dst
}
