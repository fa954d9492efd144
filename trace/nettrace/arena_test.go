package nettrace

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"viewer/trace/clr"
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

// TestUTF16Invalid pins how bad UTF-16 decodes, whichever path takes it
// (decodeUTF16, the arena's utf16 and utf16z, payload strings with and
// without an arena): a lone or reversed surrogate is U+FFFD, a pair is
// one rune, an odd trailing byte is dropped.
func TestUTF16Invalid(t *testing.T) {
	for _, tc := range []struct {
		units []uint16
		odd   bool // a trailing odd byte
		want  string
	}{
		{[]uint16{'a', 0xd800, 'b'}, false, "a\uFFFDb"},
		{[]uint16{0xdc00}, false, "\uFFFD"},
		{[]uint16{0xd83d, 0xd83d, 0xde00}, false, "\uFFFD😀"},
		{[]uint16{'x', 0xd83d}, false, "x\uFFFD"},
		{[]uint16{'x', 0xd83d}, true, "x\uFFFD"},
		{[]uint16{0xde00, 0xd83d}, false, "\uFFFD\uFFFD"},
		{[]uint16{'a', 'b'}, true, "ab"},
		{[]uint16{0xe9, 0x20ac, 0xfffd, 0xffff, 0x7f, 0x80}, false, "é€\uFFFD\uFFFF\x7f\u0080"},
		{[]uint16{'l', 'o', 'n', 'g', 'e', 'r', ' ', 't', 'h', 'a', 'n', ' ', 'e', 'i', 'g', 'h', 't', 0xdbff, '!'}, false, "longer than eight\uFFFD!"},
		{[]uint16{'l', 'o', 'n', 'g', 'e', 'r', ' ', 't', 'h', 'a', 'n', ' ', 'e', 'i', 'g', 'h', 't', 0xdbff, 0xdfff}, false, "longer than eight\U0010FFFF"},
	} {
		var b []byte
		for _, u := range tc.units {
			b = append(b, byte(u), byte(u>>8))
		}
		if tc.odd {
			b = append(b, 'z')
		}
		a := &arena{}
		if got := decodeUTF16(b); got != tc.want {
			t.Errorf("decodeUTF16(%x) = %q, want %q", tc.units, got, tc.want)
		}
		if got := a.utf16(b); got != tc.want {
			t.Errorf("arena utf16(%x) = %q, want %q", tc.units, got, tc.want)
		}
		if got, n := a.utf16z(b); got != tc.want || n != len(b) {
			t.Errorf("arena utf16z(%x) = %q, %d, want %q, %d", tc.units, got, n, tc.want, len(b))
		}
		if tc.odd {
			continue
		}
		z := append(b[:len(b):len(b)], 0, 0, 'q', 0)
		if got, n := a.utf16z(z); got != tc.want || n != len(b)+2 {
			t.Errorf("arena utf16z(%x 0000) = %q, %d, want %q, %d", tc.units, got, n, tc.want, len(b)+2)
		}
		schema := []Field{{Name: "S", Type: TypeUTF16String}, {Name: "C", Type: TypeUTF16CodeUnit}}
		for _, arena := range []*arena{nil, a} {
			fs := appendPayload(nil, z, schema, 8, arena)
			if len(fs) != 2 || fs[0].Value.Str() != tc.want || fs[1].Value.Str() != "q" {
				t.Errorf("payload %x (arena %v): %v", z, arena != nil, fs)
			}
		}
	}
}

// BenchmarkUTF16z decodes NUL-terminated ASCII strings of the lengths
// method rundown events carry (namespaces, names, signatures).
func BenchmarkUTF16z(b *testing.B) {
	var buf []byte
	var chars int
	for i := range 1000 {
		n := 5 + i*37%120
		for k := range n {
			buf = append(buf, byte('a'+(i+k)%26), 0)
		}
		buf = append(buf, 0, 0)
		chars += n
	}
	b.SetBytes(int64(len(buf)))
	a := &arena{}
	for b.Loop() {
		for p := buf; len(p) > 0; {
			_, n := a.utf16z(p[:min(len(p), 300)]) // a payload's rest
			p = p[n:]
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(chars), "ns/char")
}

// TestArenaLast checks that utf16zLast hands out the last string again
// for the same text, storing nothing, and stores a new one for another
// text of the same length or after a new chunk.
func TestArenaLast(t *testing.T) {
	enc := func(s string) []byte {
		var b []byte
		for _, c := range s {
			b = append(b, byte(c), 0)
		}
		return append(b, 0, 0, 'x', 0)
	}
	a := &arena{}
	var last string
	s1, _ := a.utf16zLast(enc("System.Text"), &last)
	used := len(a.b)
	s2, n := a.utf16zLast(enc("System.Text"), &last)
	if s2 != "System.Text" || n != 24 || unsafe.StringData(s2) != unsafe.StringData(s1) || len(a.b) != used {
		t.Fatalf("same text: %q (%d bytes taken), shared %v, arena %d -> %d bytes", s2, n, unsafe.StringData(s2) == unsafe.StringData(s1), used, len(a.b))
	}
	s3, _ := a.utf16zLast(enc("System.Texu"), &last)
	if s3 != "System.Texu" || last != s3 || s1 != "System.Text" || len(a.b) != used+len(s3) {
		t.Fatalf("other text: %q, last %q, first %q, arena %d bytes", s3, last, s1, len(a.b))
	}
	a.b = a.b[:cap(a.b)-4] // the next string needs a new chunk, which forgets a.last
	a.last[0] = s3
	if s4, _ := a.utf16zLast(enc("System.Texu"), &a.last[0]); s4 != s3 || unsafe.StringData(s4) == unsafe.StringData(s3) {
		t.Fatalf("after a new chunk: %q, shared %v", s4, unsafe.StringData(s4) == unsafe.StringData(s3))
	}
}

// TestArenaBitsText checks the arena's remembered bit-map texts against
// clr.Map.Text over values that share cache slots, for two maps.
func TestArenaBitsText(t *testing.T) {
	m1 := &clr.Map{Bits: true, Entries: []clr.MapEntry{{Value: 1, Text: "A"}, {Value: 4, Text: "C"}, {Value: 0x100, Text: "Big"}}}
	m2 := &clr.Map{Bits: true, Entries: []clr.MapEntry{{Value: 1, Text: "X"}, {Value: 2, Text: "Y"}}}
	rng := rand.New(rand.NewPCG(9, 10))
	a := &arena{}
	for range 20000 {
		m := m1
		if rng.IntN(2) == 0 {
			m = m2
		}
		v := uint64(rng.IntN(40)) << (rng.IntN(3) * 4)
		want, wantOK := m.Text(v)
		if got, ok := a.bitsText(m, v); got != want || ok != wantOK {
			t.Fatalf("bitsText(%v, %#x) = %q, %v; want %q, %v", m.Entries[0].Text, v, got, ok, want, wantOK)
		}
	}
}

// TestASCIIZ checks asciiz (assembly where there is some) and asciizGo
// against a unit-at-a-time reading, on ASCII runs of every length up to
// 80 units stopped by a NUL, by units just outside ASCII or by the end,
// with odd trailing bytes and short destinations.
func TestASCIIZ(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	stops := []uint16{0, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xd800, 0xff00, 0xffff, 0x0080, 0x7f}
	want := func(dst, src []byte) (int, int) {
		if len(dst) < len(src)/2 {
			return 0, -1
		}
		for i := 0; i+1 < len(src); i += 2 {
			switch u := uint16(src[i]) | uint16(src[i+1])<<8; {
			case u == 0:
				return i / 2, i + 2
			case u >= 0x80:
				return 0, -1
			}
		}
		return len(src) / 2, len(src)
	}
	for range 50000 {
		src := make([]byte, 0, 200)
		for range rng.IntN(81) {
			src = append(src, byte(1+rng.IntN(0x7f)), 0)
		}
		if rng.IntN(5) > 0 {
			u := stops[rng.IntN(len(stops))]
			src = append(src, byte(u), byte(u>>8))
			for range rng.IntN(20) {
				u := uint16(rng.Uint32())
				src = append(src, byte(u), byte(u>>8))
			}
		}
		if rng.IntN(4) == 0 {
			src = append(src, byte(rng.Uint32()))
		}
		dlen := len(src) / 2
		if rng.IntN(10) == 0 {
			dlen = rng.IntN(dlen + 1)
		}
		wn, wend := want(make([]byte, dlen), src)
		for name, f := range map[string]func(dst, src []byte) (int, int){"asciiz": asciiz, "asciizGo": asciizGo} {
			dst := make([]byte, dlen)
			n, end := f(dst, src)
			if end != wend || end >= 0 && (n != wn || string(dst[:n]) != string(want16(src[:2*n]))) {
				t.Fatalf("%s(%d bytes, % x) = %d, %d; want %d, %d", name, dlen, src, n, end, wn, wend)
			}
		}
	}
}

// want16 returns the low bytes of UTF-16LE code units.
func want16(b []byte) []byte {
	out := make([]byte, len(b)/2)
	for i := range out {
		out[i] = b[2*i]
	}
	return out
}
