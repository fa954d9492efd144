package span

import (
	"cmp"
	"slices"

	"viewer/trace"
)

// columnBits sets the chunk size of a Column: 1024 slices (16 KiB).
const columnBits = 10

// Column holds one track's slices in chunks that are never copied once
// full: a derivation that grows to millions of slices allocates each
// byte once, instead of copying the whole every time it doubles. Every
// chunk but the last holds exactly 1<<columnBits slices.
//
// A slice is stored in 16 bytes: its start, its length in 32 bits and
// the index of its attributes (name, arguments, thread, depth, flags) in
// a table of the column, where slices that share them share one entry (a
// CPU track's slices repeat a few threads, a state track's a few
// states). A slice of 2^32 ns or more keeps its end in a table of long
// slices instead. Derived slices are stored by the million, and writing
// fresh memory is what deriving them costs.
type Column struct {
	chunks [][]rec
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

// rec is a slice as a Column stores it.
type rec struct {
	start trace.Time
	dur   uint32 // end − start; unused for a long slice
	key   uint32 // index into attrs, or longBit|index into longs
}

const longBit = 1 << 31

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

func (c *Column) rec(i int) *rec { return &c.chunks[i>>columnBits][i&(1<<columnBits-1)] }

func (c *Column) attr(r *rec) *attr {
	if r.key&longBit != 0 {
		return &c.attrs[c.longs[r.key&^longBit].key]
	}
	return &c.attrs[r.key]
}

// Len returns the number of slices.
func (c *Column) Len() int { return c.n }

// At returns slice i (0 ≤ i < Len).
func (c *Column) At(i int) Slice {
	r := c.rec(i)
	a := c.attr(r)
	return Slice{Start: r.start, End: c.end(r), Track: c.track, Name: a.name, Args: a.args, Thread: a.thread, Depth: a.depth, Flags: a.flags}
}

// Start returns the start of slice i.
func (c *Column) Start(i int) trace.Time { return c.rec(i).start }

// End returns the end of slice i.
func (c *Column) End(i int) trace.Time { return c.end(c.rec(i)) }

// Times returns the start and end of slice i.
func (c *Column) Times(i int) (start, end trace.Time) {
	r := c.rec(i)
	return r.start, c.end(r)
}

// Contiguous reports whether every slice starts where the one before
// it ends, as a CPU track's and a thread's states do: the slices then
// cover the time from the first start to the last end without a gap or
// an overlap, and each one's length follows from the next start.
func (c *Column) Contiguous() bool { return !c.gapped }

// Depth returns the nesting depth of slice i.
func (c *Column) Depth(i int) uint16 { return c.attr(c.rec(i)).depth }

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

func (c *Column) end(r *rec) trace.Time {
	if r.key&longBit != 0 {
		return c.longs[r.key&^longBit].end
	}
	return r.start + trace.Time(r.dur)
}

// bytes returns the memory the column holds.
func (c *Column) bytes() int64 {
	var n int64
	for _, ch := range c.chunks {
		n += int64(cap(ch)) * 16
	}
	return n + int64(cap(c.attrs))*16 + int64(cap(c.longs))*16
}

func (c *Column) key(s Slice) uint32 {
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
func (c *Column) push(s Slice) { c.pushKey(s.Start, s.End, c.key(s)) }

// pushKey appends a slice from start to end (end ≥ start) whose
// attributes are attrs[k].
func (c *Column) pushKey(start, end trace.Time, k uint32) {
	n := c.n >> columnBits
	if n == len(c.chunks) {
		size := 1 << columnBits
		if n == 0 {
			size = 16 // small tracks stay small; the first chunk grows by append
		}
		c.chunks = append(c.chunks, make([]rec, 0, size))
	}
	if c.n > 0 && start != c.lastEnd {
		c.gapped = true
	}
	c.lastEnd = end
	r := rec{start: start, key: k}
	if d := uint64(end - start); d < 1<<32 {
		r.dur = uint32(d)
	} else {
		c.longs = append(c.longs, long{end: end, key: k})
		r.key = longBit | uint32(len(c.longs)-1)
	}
	ch := &c.chunks[n]
	*ch = append(*ch, r)
	c.n++
}

// finish ends building: the lookup table goes.
func (c *Column) finish() {
	c.dedup, c.recent = nil, nil
	c.attrs, c.longs = slices.Clip(c.attrs), slices.Clip(c.longs)
}

// sort sorts the slices by start, then depth, keeping the order of
// equals.
func (c *Column) sort() {
	flat := c.flatRecs()
	slices.SortStableFunc(flat, func(x, y rec) int {
		return cmp.Or(cmp.Compare(x.start, y.start), cmp.Compare(c.attr(&x).depth, c.attr(&y).depth))
	})
	c.gapped = false
	for i := 1; i < len(flat); i++ {
		if flat[i].start != c.end(&flat[i-1]) {
			c.gapped = true
			break
		}
	}
	c.chunks = c.chunks[:0]
	for len(flat) > 0 {
		k := min(len(flat), 1<<columnBits)
		c.chunks = append(c.chunks, flat[:k:k])
		flat = flat[k:]
	}
}

func (c *Column) flatRecs() []rec {
	if len(c.chunks) == 1 {
		return c.chunks[0]
	}
	out := make([]rec, 0, c.n)
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	return out
}

// appendTo appends the slices to dst.
func (c *Column) appendTo(dst []Slice) []Slice {
	for i := range c.n {
		dst = append(dst, c.At(i))
	}
	return dst
}
