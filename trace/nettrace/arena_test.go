package nettrace

import (
	"math/rand/v2"
	"testing"
)

// TestArenaUTF16 checks the arena's UTF-16 decoding against decodeUTF16
// and utf16zTolerant's terminator search on random strings mixing ASCII,
// NULs, non-ASCII code units and surrogates, of every length up to 40
// bytes at every alignment, and long ASCII runs (the eight-unit path)
// ended by a NUL or another unit anywhere up to 100 bytes.
func TestArenaUTF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	units := []uint16{'a', 'Z', ' ', 0, 0x7f, 0x80, 0xe9, 0x20ac, 0xd83d, 0xde00, 0xdc00, 0x100}
	a := &arena{}
	for range 20000 {
		b := make([]byte, rng.IntN(41))
		ascii := rng.IntN(4) == 0 // mostly ASCII letters, rarely anything else
		if ascii {
			b = make([]byte, rng.IntN(101))
		}
		for i := 0; i+1 < len(b); i += 2 {
			u := units[rng.IntN(len(units))]
			if k := rng.IntN(60); !ascii && k%3 > 0 || ascii && k > 0 {
				u = uint16('a' + rng.IntN(26))
			}
			b[i], b[i+1] = byte(u), byte(u>>8)
		}
		if len(b)%2 == 1 {
			b[len(b)-1] = byte(rng.IntN(256))
		}
		want, wantN := decodeUTF16(b), len(b)
		for i := 0; i+1 < len(b); i += 2 {
			if b[i] == 0 && b[i+1] == 0 {
				want, wantN = decodeUTF16(b[:i]), i+2
				break
			}
		}
		got, n := a.utf16z(b)
		if got != want || n != wantN {
			t.Fatalf("utf16z(% x) = %q, %d; want %q, %d", b, got, n, want, wantN)
		}
		if got := a.utf16(b); got != decodeUTF16(b) {
			t.Fatalf("utf16(% x) = %q; want %q", b, got, decodeUTF16(b))
		}
	}
}
