package span

import (
	"cmp"
	"slices"

	"viewer/trace"
)

// columnBits sets the chunk size of a Column: 1024 slices (8 to 16 KiB).
const columnBits = 10

// Column holds one track's slices in chunks that are never copied once
// full: a derivation that grows to millions of slices allocates each
// byte once, instead of copying the whole every time it doubles. Every
// chunk but the last holds exactly 1<<columnBits slices.
//
// A slice is stored as its times and the index of its attributes (name,
// arguments, thread, depth, flags) in a table of the column, where slices
// that share them share one entry (a CPU track's slices repeat a few
// threads, a state track's a few states). A chunk stores the times in the
// most compact of three forms that holds them (see chunk): 8 bytes a
// slice when each starts where the one before it ends (a CPU's track, a
// thread's states), 12 when they are less than 2^32 ns from the chunk's
// first start and long, 16 otherwise. Derived slices are stored by the
// million, and writing fresh memory is what deriving them costs.
type Column struct {
	chunks []chunk
	n      int
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
	// gapped says a slice starts other than where the one before it
	// ends; lastEnd is the last slice's end.
	gapped  bool
	lastEnd trace.Time
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

// chunk holds up to 1<<columnBits consecutive slices of a Column in one
// of three forms, one of tight, packed and wide non-nil:
//
//   - tight: each slice starts where the one before it ends, less than
//     2^32 ns after the chunk's first start; a slice's end is the next
//     one's start (the last one's: last);
//   - packed: every slice starts less than 2^32 ns after the chunk's
//     first start and lasts less than 2^32 ns;
//   - wide: any slices (a long one's end in the column's longs).
//
// A chunk begins tight and moves to the next form when a slice does not
// fit the one it is in, copying the slices it holds (at most a chunk's):
// the forms are the same slices, and readers share a chunk's arrays (a
// Snapshot), so a chunk is rewritten only into fresh memory.
type chunk struct {
	base   trace.Time // the first slice's start
	last   trace.Time // the last slice's end
	tight  []tightRec
	packed []packedRec
	wide   []rec
}

// tightRec is a slice of a tight chunk: its start's offset from the
// chunk's first, and its attributes' index.
type tightRec struct{ off, key uint32 }

// packedRec is a slice of a packed chunk.
type packedRec struct{ off, dur, key uint32 }

// rec is a slice of a wide chunk.
type rec struct {
	start trace.Time
	dur   uint32 // end − start; unused for a long slice
	key   uint32 // index into attrs, or longBit|index into longs
}

const longBit = 1 << 31

func (ch *chunk) len() int {
	switch {
	case ch.tight != nil:
		return len(ch.tight)
	case ch.packed != nil:
		return len(ch.packed)
	}
	return len(ch.wide)
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
	switch {
	case ch.tight != nil:
		return ch.base + trace.Time(ch.tight[j].off)
	case ch.packed != nil:
		return ch.base + trace.Time(ch.packed[j].off)
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
	case ch.tight != nil:
		start = ch.base + trace.Time(ch.tight[j].off)
		if j+1 < len(ch.tight) {
			return start, ch.base + trace.Time(ch.tight[j+1].off)
		}
		return start, ch.last
	case ch.packed != nil:
		r := &ch.packed[j]
		start = ch.base + trace.Time(r.off)
		return start, start + trace.Time(r.dur)
	}
	r := &ch.wide[j]
	if r.key&longBit != 0 {
		return r.start, c.longs[r.key&^longBit].end
	}
	return r.start, r.start + trace.Time(r.dur)
}

// key returns the index of slice i's attributes.
func (c *Column) key(i int) uint32 { return c.chunkKey(&c.chunks[i>>columnBits], i&(1<<columnBits-1)) }

func (c *Column) chunkKey(ch *chunk, j int) uint32 {
	switch {
	case ch.tight != nil:
		return ch.tight[j].key
	case ch.packed != nil:
		return ch.packed[j].key
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
		n += int64(cap(ch.tight))*8 + int64(cap(ch.packed))*12 + int64(cap(ch.wide))*16
	}
	return n + int64(cap(c.chunks))*88 + int64(cap(c.attrs))*16 + int64(cap(c.longs))*16
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
	if n == len(c.chunks) {
		size := 1 << columnBits
		if n == 0 {
			size = 16 // small tracks stay small; the first chunk grows by append
		}
		c.chunks = append(c.chunks, chunk{base: start, last: start, tight: make([]tightRec, 0, size)})
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
	off := uint64(start - ch.base) // huge when start is before base
	switch {
	case ch.tight != nil:
		if off >= 1<<32 || start != ch.last && len(ch.tight) > 0 {
			return false
		}
		ch.tight = append(ch.tight, tightRec{off: uint32(off), key: k})
	case ch.packed != nil:
		d := uint64(end - start)
		if off >= 1<<32 || d >= 1<<32 {
			return false
		}
		ch.packed = append(ch.packed, packedRec{off: uint32(off), dur: uint32(d), key: k})
	default:
		ch.wide = append(ch.wide, c.wideRec(start, end, k))
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
	if ch.tight != nil {
		p := make([]packedRec, len(ch.tight), cap(ch.tight))
		ok := true
		for j, r := range ch.tight {
			s, e := c.chunkTimes(ch, j)
			if d := uint64(e - s); d < 1<<32 {
				p[j] = packedRec{off: r.off, dur: uint32(d), key: r.key}
			} else {
				ok = false
				break
			}
		}
		if ok {
			ch.tight, ch.packed = nil, p
			return
		}
	}
	w := make([]rec, ch.len(), max(cap(ch.tight), cap(ch.packed)))
	for j := range w {
		s, e := c.chunkTimes(ch, j)
		w[j] = c.wideRec(s, e, c.chunkKey(ch, j))
	}
	ch.tight, ch.packed, ch.wide = nil, nil, w
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
	c.chunks, c.longs, c.n, c.gapped = nil, nil, 0, false
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
