package span

import (
	"cmp"
	"slices"

	"viewer/trace"
)

// columnBits sets the chunk size of a Column: 1024 slices (32 KiB).
const columnBits = 10

// Column holds one track's slices in chunks that are never copied once
// full: a derivation that grows to millions of slices allocates each
// byte once, instead of copying the whole every time it doubles. Every
// chunk but the last holds exactly 1<<columnBits slices.
type Column struct {
	chunks [][]rec
	n      int
	track  TrackID
}

// rec is a Slice as a Column stores it: without its track, which is the
// column's (32 bytes instead of 40: derived slices are stored by the
// million, and on a busy machine touching fresh memory is what costs).
type rec struct {
	start, end trace.Time
	name       NameID
	args       ArgsID
	thread     trace.TrackID
	depth      uint16
	flags      Flags
}

func (r *rec) slice(t TrackID) Slice {
	return Slice{Start: r.start, End: r.end, Track: t, Name: r.name, Args: r.args, Thread: r.thread, Depth: r.depth, Flags: r.flags}
}

func toRec(s Slice) rec {
	return rec{start: s.Start, end: s.End, name: s.Name, args: s.Args, thread: s.Thread, depth: s.Depth, flags: s.Flags}
}

// Len returns the number of slices.
func (c *Column) Len() int { return c.n }

// At returns slice i (0 ≤ i < Len).
func (c *Column) At(i int) Slice {
	return c.chunks[i>>columnBits][i&(1<<columnBits-1)].slice(c.track)
}

// Start returns the start of slice i.
func (c *Column) Start(i int) trace.Time { return c.chunks[i>>columnBits][i&(1<<columnBits-1)].start }

// End returns the end of slice i.
func (c *Column) End(i int) trace.Time { return c.chunks[i>>columnBits][i&(1<<columnBits-1)].end }

func (c *Column) push(s Slice) {
	k := c.n >> columnBits
	if k == len(c.chunks) {
		size := 1 << columnBits
		if k == 0 {
			size = 16 // small tracks stay small; the first chunk grows by append
		}
		c.chunks = append(c.chunks, make([]rec, 0, size))
	}
	c.chunks[k] = append(c.chunks[k], toRec(s))
	c.n++
}

// last returns the latest slice pushed (Len > 0).
func (c *Column) last() *rec { return &c.chunks[(c.n-1)>>columnBits][(c.n-1)&(1<<columnBits-1)] }

// sort sorts the slices by start, then depth, keeping the order of
// equals.
func (c *Column) sort() {
	flat := c.flatRecs()
	slices.SortStableFunc(flat, func(x, y rec) int {
		return cmp.Or(cmp.Compare(x.start, y.start), cmp.Compare(x.depth, y.depth))
	})
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
	for _, ch := range c.chunks {
		for i := range ch {
			dst = append(dst, ch[i].slice(c.track))
		}
	}
	return dst
}
