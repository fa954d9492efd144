package render

import "math/bits"

// Bitmap is a set of event indexes of one track, 0..Len()-1, with rank
// support: a prefix popcount every rankWords words, so Rank costs one
// table read and at most rankWords popcounts, and Select a binary search
// of the table. It takes Len()/8 + Len()/128 bytes.
type Bitmap struct {
	words []uint64
	ranks []uint32 // ranks[k]: bits set in words[:k*rankWords]
	n     int
}

// rankWords is the words between two stored prefix counts.
const rankWords = 8

// NewBitmap returns an empty bitmap of n indexes.
func NewBitmap(n int) *Bitmap {
	return &Bitmap{words: make([]uint64, (n+63)/64), n: n}
}

// Len returns the number of indexes the bitmap covers.
func (b *Bitmap) Len() int { return b.n }

// Set adds index i; it must come before Finish.
func (b *Bitmap) Set(i int) { b.words[i>>6] |= 1 << (i & 63) }

// Has reports whether index i is in the set.
func (b *Bitmap) Has(i int) bool {
	return i >= 0 && i < b.n && b.words[i>>6]&(1<<(i&63)) != 0
}

// Finish builds the rank table; Rank and Select need it.
func (b *Bitmap) Finish() {
	b.ranks = make([]uint32, len(b.words)/rankWords+1)
	var c uint32
	for k := range b.ranks {
		b.ranks[k] = c
		for _, w := range b.words[min(k*rankWords, len(b.words)):min((k+1)*rankWords, len(b.words))] {
			c += uint32(bits.OnesCount64(w))
		}
	}
}

// Count returns the number of indexes in the set.
func (b *Bitmap) Count() int { return b.Rank(b.n) }

// Rank returns the number of indexes in the set below i (i clamped to
// 0..Len()).
func (b *Bitmap) Rank(i int) int {
	i = max(0, min(i, b.n))
	w := i >> 6
	k := w / rankWords
	c := int(b.ranks[k])
	for _, x := range b.words[k*rankWords : w] {
		c += bits.OnesCount64(x)
	}
	if r := i & 63; r != 0 {
		c += bits.OnesCount64(b.words[w] & (1<<r - 1))
	}
	return c
}

// Select returns the index of the set's r-th member (from 0), or -1 when
// the set has no more than r members.
func (b *Bitmap) Select(r int) int {
	if r < 0 || len(b.ranks) == 0 {
		return -1
	}
	// The last block whose prefix count is ≤ r.
	lo, hi := 0, len(b.ranks)-1
	for lo < hi {
		m := (lo + hi + 1) / 2
		if int(b.ranks[m]) <= r {
			lo = m
		} else {
			hi = m - 1
		}
	}
	c := int(b.ranks[lo])
	for w := lo * rankWords; w < len(b.words); w++ {
		p := bits.OnesCount64(b.words[w])
		if c+p > r {
			x := b.words[w]
			for range r - c {
				x &= x - 1
			}
			return w<<6 + bits.TrailingZeros64(x)
		}
		c += p
	}
	return -1
}

// Next returns the first index ≥ i in the set, or -1.
func (b *Bitmap) Next(i int) int { return b.Select(b.Rank(i)) }

// Bytes returns the memory the bitmap holds.
func (b *Bitmap) Bytes() int64 { return int64(len(b.words))*8 + int64(len(b.ranks))*4 + 48 }
