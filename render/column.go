package render

// column is an append-only array stored in fixed-size chunks, so that
// growing it never copies more than one chunk and the peak memory while
// indexing stays close to the final size (a single slice grown by append
// peaks at up to twice its length).
//
// With a store (store.go), every chunk that fills up is sealed: written
// to the store and replaced by its copy in the store's mapping, so that
// only the chunk being filled is on the heap. Sealed chunks are a prefix
// of the list.
type column[T any] struct {
	chunks [][]T
	n      int
	sealed int    // chunks[:sealed] lie in the store
	store  *store // where full chunks go; nil: they stay on the heap
	// cold says that the build does not read the sealed chunks again
	// (store.cold): the pyramid's nodes and the stacked events.
	cold bool
}

const (
	chunkBits = 14
	chunkLen  = 1 << chunkBits
	chunkMask = chunkLen - 1
)

func (c *column[T]) len() int { return c.n }

// push appends v. Chunks are allocated at their full length, so the
// common case is one store.
func (c *column[T]) push(v T) {
	k, j := c.n>>chunkBits, c.n&chunkMask
	if k < len(c.chunks) {
		if ch := c.chunks[k]; j < len(ch) {
			ch[j] = v
			c.n++
			return
		}
	}
	c.pushSlow(v)
}

// appendAll appends vs, copying them a chunk at a time.
func (c *column[T]) appendAll(vs []T) {
	for len(vs) > 0 {
		k, j := c.n>>chunkBits, c.n&chunkMask
		if k < len(c.chunks) && j < len(c.chunks[k]) {
			m := copy(c.chunks[k][j:], vs)
			c.n += m
			vs = vs[m:]
			continue
		}
		c.pushSlow(vs[0])
		vs = vs[1:]
	}
}

func (c *column[T]) pushSlow(v T) {
	k, j := c.n>>chunkBits, c.n&chunkMask
	switch {
	case k == len(c.chunks) && k == 0:
		c.chunks = append(c.chunks, make([]T, 16)) // small tracks stay small
	case k == len(c.chunks):
		full := c.chunks[k-1]
		if c.seal(k-1) && c.store.reuse {
			// Nothing else holds the sealed chunk's heap copy: fill it
			// again, rather than zeroing a new one and collecting the
			// old.
			c.chunks = append(c.chunks, full)
			break
		}
		c.chunks = append(c.chunks, make([]T, chunkLen))
	default: // the first chunk is full but shorter than chunkLen: grow it
		// Eightfold: a track that fills its first chunk copies an eighth
		// of it again on the way, where doubling copied as much as it
		// holds; a small track keeps a small chunk.
		ch := make([]T, min(8*len(c.chunks[k]), chunkLen))
		copy(ch, c.chunks[k])
		c.chunks[k] = ch
	}
	c.chunks[k][j] = v
	c.n++
}

// seal moves the full chunk k to the store, when k is the first chunk
// not yet sealed and the store takes it, and reports whether it did. The
// heap copy is then the caller's to reuse when the store says so
// (store.reuse), else the collector's: a snapshot (live.go) may still
// hold it.
func (c *column[T]) seal(k int) bool {
	if c.store == nil || k != c.sealed || len(c.chunks[k]) != chunkLen {
		return false
	}
	if s := storeSlice(c.store, c.chunks[k], c.cold); &s[0] != &c.chunks[k][0] {
		c.chunks[k] = s
		c.sealed++
		return true
	}
	return false
}

func (c *column[T]) at(i int) T { return c.chunks[i>>chunkBits][i&chunkMask] }

// chunk returns chunk k cut to the elements in use.
func (c *column[T]) chunk(k int) []T {
	ch := c.chunks[k]
	if rest := c.n - k<<chunkBits; rest < len(ch) {
		ch = ch[:rest]
	}
	return ch
}

// clip releases the unused part of the last chunk when it is large.
func (c *column[T]) clip() {
	k := len(c.chunks) - 1
	if k < 0 {
		return
	}
	used := c.n - k<<chunkBits
	if len(c.chunks[k])-used > len(c.chunks[k])/8 {
		c.chunks[k] = append([]T(nil), c.chunks[k][:used]...)
	}
}

// bytes returns the memory the column holds on the heap (not its sealed
// chunks).
func (c *column[T]) bytes(size int) int64 {
	var n int64
	for _, ch := range c.chunks[c.sealed:] {
		n += int64(cap(ch)) * int64(size)
	}
	return n + int64(cap(c.chunks))*24
}
