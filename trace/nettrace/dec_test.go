package nettrace

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"viewer/trace"
)

// TestUvarint checks dec's varint readers against binary.Uvarint on
// encodings of every length, non-canonical ones, overlong ones and cut
// ones, at every distance from the end of the buffer.
func TestUvarint(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 200_000 {
		var b []byte
		switch iter % 3 {
		case 0: // canonical
			b = binary.AppendUvarint(nil, rng.Uint64()>>rng.IntN(64))
		case 1: // random bytes, mostly with the high bit set
			for range rng.IntN(13) {
				c := byte(rng.Uint32())
				if rng.IntN(4) != 0 {
					c |= 0x80
				}
				b = append(b, c)
			}
		case 2: // non-canonical: padded with 0x80 groups
			b = binary.AppendUvarint(nil, rng.Uint64()>>rng.IntN(64))
			for range rng.IntN(4) {
				b[len(b)-1] |= 0x80
				b = append(b, 0)
			}
		}
		b = append(b, make([]byte, rng.IntN(10))...) // room after the value
		if rng.IntN(4) == 0 && len(b) > 0 {
			b = b[:rng.IntN(len(b))] // cut
		}
		want, n := binary.Uvarint(b)
		d := dec{b: b}
		got := d.uvarint64()
		if n <= 0 {
			if !d.bad {
				t.Fatalf("% x: read %d, want a failure", b, got)
			}
			continue
		}
		if d.bad || got != want || d.off != n {
			t.Fatalf("% x: got %d (%d bytes, bad %v), want %d (%d bytes)", b, got, d.off, d.bad, want, n)
		}
		d = dec{b: b}
		got32 := d.uvarint32()
		if want > 1<<32-1 {
			if !d.bad {
				t.Fatalf("% x: uvarint32 read %d, want a failure", b, got32)
			}
		} else if d.bad || uint64(got32) != want || d.off != n {
			t.Fatalf("% x: uvarint32 got %d, want %d", b, got32, want)
		}
	}
}

// TestClock checks the multiply fast path of clock against trace.Clock's
// exact conversion near every limit.
func TestClock(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	edges := []int64{0, 1, -1, 1<<63 - 1, -1 << 63, 1<<63 - 2, -1<<63 + 1}
	for _, f := range []uint64{1, 3, 1000, 10_000_000, 1e9, 1e9 + 1, 2_441_406, 1 << 40} {
		for range 20_000 {
			c := trace.Clock{TicksPerSecond: f, OriginTicks: pick(rng, edges)}
			k := newClock(c)
			ticks := pick(rng, edges)
			if f <= 1e9 && 1e9%f == 0 && rng.IntN(2) == 0 {
				lim := (1<<63 - 1) / int64(1e9/f) // around the fast path's limit (may wrap)
				ticks = c.OriginTicks + []int64{lim, -lim, lim - 1, -lim + 1, lim + 1, -lim - 1}[rng.IntN(6)]
			}
			if got, want := k.time(ticks), c.Time(ticks); got != want {
				t.Fatalf("%d ticks/s, origin %d: time(%d) = %d, want %d", f, c.OriginTicks, ticks, got, want)
			}
		}
	}
}

// pick returns an edge value, one near it, or a random value.
func pick(rng *rand.Rand, edges []int64) int64 {
	switch rng.IntN(3) {
	case 0:
		return edges[rng.IntN(len(edges))]
	case 1:
		return edges[rng.IntN(len(edges))] + rng.Int64N(2001) - 1000
	}
	return int64(rng.Uint64())
}
