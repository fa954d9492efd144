package render

import (
	"math/bits"

	"viewer/trace"
)

// The pyramid answers "which event type dominates events lo..hi-1 of a
// track" in O(log n). Each node summarizes an aligned block of 2^k events
// (k ≥ minLevel) with a majority-vote summary: a candidate type and a
// weight. Two summaries merge as in Boyer–Moore voting (same candidate:
// weights add; else the heavier survives with the difference), which is
// associative enough for the guarantee that matters: a type holding more
// than half of a range is always the candidate of the range's summary,
// however the range is split. A range is summarized by merging, left to
// right, single events at its unaligned edges and the largest aligned
// blocks in between; the candidate always occurs in the range.

// minLevel is the smallest block size (2^minLevel events) with a node.
const minLevel = 4

// node is a majority-vote summary: the candidate type in the high 16 bits
// of the upper word, the weight in the low 32 bits.
type node uint64

func makeNode(typ uint16, w uint32) node { return node(uint64(typ)<<32 | uint64(w)) }

func (n node) typ() uint16    { return uint16(n >> 32) }
func (n node) weight() uint32 { return uint32(n) }

// vote merges two summaries.
func vote(a, b node) node {
	switch {
	case a.typ() == b.typ():
		return makeNode(a.typ(), a.weight()+b.weight())
	case a.weight() >= b.weight():
		return makeNode(a.typ(), a.weight()-b.weight())
	}
	return makeNode(b.typ(), b.weight()-a.weight())
}

// grown grows the pyramid over the blocks that the events from..to-1,
// just added to the columns, complete: their nodes, then the nodes of
// the level above from the pairs they complete, and so on up, a level
// at a time (appended a run at a time, not node by node up every level).
func (t *track) grown(from, to int) {
	var buf [256]node
	for end := (from>>minLevel + 1) << minLevel; end <= to; {
		m := 0
		for ; m < len(buf) && end <= to; end += 1 << minLevel {
			// The block lies in one chunk: chunks hold a multiple of
			// 2^minLevel.
			lo := end - 1<<minLevel
			ty := t.types.chunks[lo>>chunkBits][lo&chunkMask:][:1<<minLevel]
			c, w := ty[0], uint32(1)
			for _, x := range ty[1:] {
				c, w = voteFor(c, w, x)
			}
			buf[m] = makeNode(c, w)
			m++
		}
		t.pushNodes(buf[:m])
	}
}

// pushNodes appends ns to the lowest level and, up the levels, the nodes
// of the pairs each level completes; it overwrites ns.
func (t *track) pushNodes(ns []node) {
	for k := 0; len(ns) > 0; k++ {
		if k == len(t.nodes) {
			t.nodes = append(t.nodes, column[node]{store: t.times.store, cold: true})
			t.carry = append(t.carry, 0)
		}
		col := &t.nodes[k]
		odd := col.len()&1 != 0 // its last node waits in carry for its sibling
		col.appendAll(ns)
		// The pairs completed, written over ns as they are read (the
		// i-th after the 2i-th). The left one of a pair still open waits
		// in carry, rather than being read back from its column then,
		// where a high level's was written batches before (a cache miss).
		up, i := ns[:0], 0
		if odd {
			up, i = append(up, vote(t.carry[k], ns[0])), 1
		}
		for ; i+1 < len(ns); i += 2 {
			up = append(up, vote(ns[i], ns[i+1]))
		}
		if i < len(ns) {
			t.carry[k] = ns[i]
		}
		ns = up
	}
}

// dominant returns the majority-vote candidate of events lo..hi-1 (lo < hi).
func (t *track) dominant(lo, hi int) trace.TypeID {
	s := makeNode(t.types.at(lo), 0)
	for i := lo; i < hi; {
		if i&(1<<minLevel-1) != 0 || hi-i < 1<<minLevel {
			s = vote(s, makeNode(t.types.at(i), 1))
			i++
			continue
		}
		k := bits.TrailingZeros(uint(i))
		if m := bits.Len(uint(hi-i)) - 1; m < k {
			k = m
		}
		s = vote(s, t.nodes[k-minLevel].at(i>>k))
		i += 1 << k
	}
	return typeOf(s.typ())
}

// dominantIn is dominant for events base+lo..base+hi-1 that lie in the
// columns' chunk starting at base, whose types are ty: the hot path of a
// query, written out with the summary in two registers.
func (t *track) dominantIn(ty []uint16, base, lo, hi int) trace.TypeID {
	c, w := uint32(ty[lo]), uint32(0)
	i := lo
	single := func(x uint32) {
		switch {
		case x == c:
			w++
		case w == 0:
			c, w = x, 1
		default:
			w--
		}
	}
	for e := min(hi, (lo+1<<minLevel-1)&^(1<<minLevel-1)); i < e; i++ {
		single(uint32(ty[i]))
	}
	for hi-i >= 1<<minLevel {
		k := bits.TrailingZeros(uint(i))
		if m := bits.Len(uint(hi-i)) - 1; m < k {
			k = m
		}
		nd := t.nodes[k-minLevel].at((base + i) >> k)
		switch nc, nw := uint32(nd.typ()), nd.weight(); {
		case nc == c:
			w += nw
		case w >= nw:
			w -= nw
		default:
			c, w = nc, nw-w
		}
		i += 1 << k
	}
	for ; i < hi; i++ {
		single(uint32(ty[i]))
	}
	return typeOf(uint16(c))
}

func typeOf(ty uint16) trace.TypeID {
	if ty == typeEscape {
		return OtherType
	}
	return trace.TypeID(ty)
}

// voteFor adds type x to the majority vote of candidate c with weight w,
// without branches (types in a block are often mixed): an empty vote
// takes x, then x adds to its candidate or takes from it.
func voteFor(c uint16, w uint32, x uint16) (uint16, uint32) {
	if w == 0 {
		c = x
	}
	d := uint32(1)
	if x != c {
		d = 1<<32 - 1
	}
	return c, w + d
}
