package nettrace

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
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
