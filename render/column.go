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

func (c *column[T]) push(v T) {
	k := c.n >> chunkBits
	if k == len(c.chunks) {
		capacity := chunkLen
		if k == 0 {
			capacity = 16 // small tracks stay small; the first chunk grows by append
		}
		c.chunks = append(c.chunks, make([]T, 0, capacity))
	}
	c.chunks[k] = append(c.chunks[k], v)
	c.n++
}

func (c *column[T]) at(i int) T { return c.chunks[i>>chunkBits][i&chunkMask] }

// clip releases the unused capacity of the first chunk, which grew by
// doubling.
func (c *column[T]) clip() {
	if len(c.chunks) == 1 && cap(c.chunks[0]) > len(c.chunks[0])+len(c.chunks[0])/8 {
		c.chunks[0] = append([]T(nil), c.chunks[0]...)
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
