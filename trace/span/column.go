package span

import (
	"cmp"
	"slices"
)

// columnBits sets the chunk size of a Column: 4096 slices (160 KiB).
const columnBits = 12

// Column holds one track's slices in chunks that are never copied once
// full: a derivation that grows to millions of slices allocates each
// byte once, instead of copying the whole every time it doubles. Every
// chunk but the last holds exactly 1<<columnBits slices.
type Column struct {
	chunks [][]Slice
	n      int
}

// Len returns the number of slices.
func (c *Column) Len() int { return c.n }

// At returns slice i (0 ≤ i < Len); the caller must not change it.
func (c *Column) At(i int) *Slice {
	return &c.chunks[i>>columnBits][i&(1<<columnBits-1)]
}

func (c *Column) push(s Slice) {
	k := c.n >> columnBits
	if k == len(c.chunks) {
		size := 1 << columnBits
		if k == 0 {
			size = 16 // small tracks stay small; the first chunk grows by append
		}
		c.chunks = append(c.chunks, make([]Slice, 0, size))
	}
	c.chunks[k] = append(c.chunks[k], s)
	c.n++
}

// last returns the latest slice pushed (Len > 0).
func (c *Column) last() *Slice { return c.At(c.n - 1) }

// sort sorts the slices by start, then depth, keeping the order of
// equals.
func (c *Column) sort() {
	flat := c.flat()
	slices.SortStableFunc(flat, func(x, y Slice) int {
		return cmp.Or(cmp.Compare(x.Start, y.Start), cmp.Compare(x.Depth, y.Depth))
	})
	c.chunks = c.chunks[:0]
	for len(flat) > 0 {
		k := min(len(flat), 1<<columnBits)
		c.chunks = append(c.chunks, flat[:k:k])
		flat = flat[k:]
	}
}

// flat returns the slices in one Go slice (a copy, unless there is a
// single chunk).
func (c *Column) flat() []Slice {
	if len(c.chunks) == 1 {
		return c.chunks[0]
	}
	out := make([]Slice, 0, c.n)
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	return out
}
