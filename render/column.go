package render

// column is an append-only array stored in fixed-size chunks, so that
// growing it never copies more than one chunk and the peak memory while
// indexing stays close to the final size (a single slice grown by append
// peaks at up to twice its length).
type column[T any] struct {
	chunks [][]T
	n      int
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

func (c *column[T]) pushSlow(v T) {
	k, j := c.n>>chunkBits, c.n&chunkMask
	switch {
	case k == len(c.chunks) && k == 0:
		c.chunks = append(c.chunks, make([]T, 16)) // small tracks stay small
	case k == len(c.chunks):
		c.chunks = append(c.chunks, make([]T, chunkLen))
	default: // the first chunk is full but shorter than chunkLen: double it
		ch := make([]T, min(2*len(c.chunks[k]), chunkLen))
		copy(ch, c.chunks[k])
		c.chunks[k] = ch
	}
	c.chunks[k][j] = v
	c.n++
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

// bytes returns the memory the column holds.
func (c *column[T]) bytes(size int) int64 {
	var n int64
	for _, ch := range c.chunks {
		n += int64(cap(ch)) * int64(size)
	}
	return n + int64(cap(c.chunks))*24
}
