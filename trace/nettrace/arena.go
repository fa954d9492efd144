package nettrace

import (
	"math/bits"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"viewer/trace"
	"viewer/trace/clr"
)

// arena hands out the strings and field lists of decoded payloads from
// chunks, so that decoding costs an allocation per chunk rather than per
// value. A chunk is only ever appended to: what was handed out is never
// written again, so the strings are as immutable as any Go string and
// the lists may be kept as long as the caller likes (they keep their
// chunk alive).
type arena struct {
	b []byte        // the current chunk; b[len(b):cap(b)] is free
	f []trace.Field // the current chunk of fields
	// bits remembers the text of recent bit-map values (method flags
	// repeat from event to event), by a hash of the value
	bits [16]mapText
	// last is the string each step of a flat plan decoded last, by the
	// step's index, while it is in the current chunk: a string equal to
	// it (a method's namespace, often its signature) is handed out again
	// rather than stored again.
	last [maxFlatFields]string
}

// mapText is the text of value v of bit map m, when ok.
type mapText struct {
	m    *clr.Map
	v    uint64
	text string
	ok   bool
}

const (
	arenaBytes  = 64 << 10 // bytes per chunk; longer strings get their own
	arenaFields = 1024     // fields per chunk; longer lists get their own
)

// arenas is a pool of arenas: decoding may run on many goroutines at
// once (Details, AppendPayloadDetails), each borrowing one.
type arenas struct{ pool sync.Pool }

func (p *arenas) get() *arena {
	if a, ok := p.pool.Get().(*arena); ok {
		return a
	}
	return &arena{}
}

func (p *arenas) put(a *arena) { p.pool.Put(a) }

// reserve returns n bytes of the arena to write a string into.
func (a *arena) reserve(n int) []byte {
	if n > arenaBytes/4 {
		return make([]byte, n)
	}
	if cap(a.b)-len(a.b) < n {
		a.newChunk()
	}
	k := len(a.b)
	a.b = a.b[:k+n]
	return a.b[k : k+n : k+n]
}

// newChunk starts a new chunk of bytes, forgetting the strings of the
// old one (so that they keep no old chunk alive).
func (a *arena) newChunk() {
	a.b = make([]byte, 0, arenaBytes)
	clear(a.last[:])
}

// string returns b, written by the caller into what reserve returned, as
// a string without copying it.
func (a *arena) string(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// copyString returns a copy of b as a string.
func (a *arena) copyString(b []byte) string {
	dst := a.reserve(len(b))
	copy(dst, b)
	return a.string(dst)
}

// bitsText returns m.Text(v) for a bit map m, in the arena.
func (a *arena) bitsText(m *clr.Map, v uint64) (string, bool) {
	c := &a.bits[v*0x9e37_79b9_7f4a_7c15>>60] // Fibonacci hashing: the top four bits
	if c.m == m && c.v == v {
		return c.text, c.ok
	}
	var buf [128]byte
	text, ok := m.AppendText(buf[:0], v)
	*c = mapText{m: m, v: v, text: a.copyString(text), ok: ok}
	return c.text, ok
}

// list returns an empty field list with room for n fields.
func (a *arena) list(n int) []trace.Field {
	if n == 0 {
		return []trace.Field{} // not nil, as make's: no allocation
	}
	if n > arenaFields/4 {
		return make([]trace.Field, 0, n)
	}
	if cap(a.f)-len(a.f) < n {
		a.f = make([]trace.Field, 0, arenaFields)
	}
	k := len(a.f)
	a.f = a.f[:k+n]
	return a.f[k : k : k+n]
}

// utf16z decodes the NUL-terminated UTF-16LE string at the start of b
// (all of b when it has no terminator) as decodeUTF16 does, into the
// arena, and returns it with the bytes it took, terminator included.
// ASCII text, the common case, is copied by asciiz.
func (a *arena) utf16z(b []byte) (string, int) {
	var last string
	return a.utf16zLast(b, &last)
}

// utf16zLast is utf16z given the string the same field decoded last (or
// ""), which it returns again when the text is the same and otherwise
// sets to the new string.
func (a *arena) utf16zLast(b []byte, last *string) (string, int) {
	maxOut := len(b) / 2
	if maxOut > arenaBytes/4 {
		return a.utf16zSlow(b)
	}
	if cap(a.b)-len(a.b) < maxOut {
		a.newChunk()
	}
	dst := a.b[len(a.b) : len(a.b)+maxOut]
	n, end := asciiz(dst, b)
	if end < 0 {
		return a.utf16zSlow(b)
	}
	text := dst[:n:n]
	if len(*last) == n && *last == string(text) { // a comparison: no conversion
		return *last, end // text stays in the chunk's free room
	}
	a.b = a.b[:len(a.b)+n]
	*last = a.string(text)
	return *last, end
}

// asciizGo is asciiz in Go. It takes eight code units at a time, as two
// words of four. In a word of four units, ((x-ones)|x)&nonASCII has bits
// in exactly the units that are NUL or not ASCII, up to the first such
// unit (a borrow starts only at a NUL), so its lowest bit is in the
// first; the four low bytes of an ASCII word, gathered by two shifts,
// are the UTF-8 text. When fewer than eight units are left, the last
// eight of src are taken: the units before the new ones are text, so
// they add no bits.
func asciizGo(dst, src []byte) (n, end int) {
	units := len(src) / 2
	if len(dst) < units {
		return 0, -1
	}
	if units < 8 {
		return asciizShort(dst, src, units)
	}
	for k := 0; ; k += 8 {
		k = min(k, units-8)
		s := src[2*k : 2*k+16]
		x, y := le.Uint64(s), le.Uint64(s[8:])
		le.PutUint64(dst[k:k+8], uint64(packASCII(x))|uint64(packASCII(y))<<32)
		sx, sy := ((x-ones)|x)&nonASCII, ((y-ones)|y)&nonASCII
		if sx|sy == 0 {
			if k+8 == units {
				return units, len(src)
			}
			continue
		}
		w, z := x, bits.TrailingZeros64(sx)&^15 // the first stop unit's first bit
		if sx == 0 {
			w, z = y, bits.TrailingZeros64(sy)&^15
			k += 4
		}
		if uint16(w>>z) != 0 {
			return 0, -1 // not ASCII
		}
		k += z >> 4
		return k, 2*k + 2
	}
}

// asciizShort is asciizGo for src of fewer than eight units: a word of
// four at a time (the last four overlapping), or a unit at a time when
// there are fewer.
func asciizShort(dst, src []byte, units int) (n, end int) {
	for k := 0; k < units; {
		if units < 4 {
			lo, hi := src[2*k], src[2*k+1]
			if lo == 0 && hi == 0 {
				return k, 2*k + 2
			}
			if hi != 0 || lo >= 0x80 {
				return 0, -1
			}
			dst[k] = lo
			k++
			continue
		}
		j := min(k, units-4) // the word's first unit
		x := le.Uint64(src[2*j : 2*j+8])
		le.PutUint32(dst[j:j+4], packASCII(x))
		stop := ((x - ones) | x) & nonASCII
		if stop == 0 {
			k = j + 4
			continue
		}
		z := bits.TrailingZeros64(stop) &^ 15
		if uint16(x>>z) != 0 {
			return 0, -1
		}
		k = j + z>>4
		return k, 2*k + 2
	}
	return units, len(src)
}

// Masks over the four UTF-16 code units of a word.
const (
	ones     = 0x0001_0001_0001_0001
	nonASCII = 0xff80_ff80_ff80_ff80
)

// packASCII gathers the low bytes of a word of four ASCII UTF-16LE code
// units.
func packASCII(x uint64) uint32 {
	x = (x | x>>8) & 0x0000_ffff_0000_ffff
	return uint32(x | x>>16)
}

// utf16zSlow is utf16z for text that is not all ASCII.
func (a *arena) utf16zSlow(b []byte) (string, int) {
	for i := 0; i+1 < len(b); i += 2 {
		if b[i] == 0 && b[i+1] == 0 {
			return a.utf16(b[:i]), i + 2
		}
	}
	return a.utf16(b), len(b)
}

// utf16 decodes UTF-16LE bytes as decodeUTF16 does, into the arena.
func (a *arena) utf16(b []byte) string {
	n := len(b) / 2
	ascii := true
	for i := 0; i < n; i++ {
		if b[2*i] >= 0x80 || b[2*i+1] != 0 {
			ascii = false
			break
		}
	}
	if !ascii {
		return a.utf16Slow(b)
	}
	dst := a.reserve(n)
	for i := range dst {
		dst[i] = b[2*i]
	}
	return a.string(dst)
}

func (a *arena) utf16Slow(b []byte) string {
	size := 0 // bytes of the UTF-8 form: at most 3 per code unit
	for i := 0; i+1 < len(b); i += 2 {
		size += 3
	}
	dst := a.reserve(size)[:0]
	for i := 0; i+1 < len(b); i += 2 {
		r := rune(le.Uint16(b[i:]))
		if utf16.IsSurrogate(r) && i+3 < len(b) {
			r2 := rune(le.Uint16(b[i+2:]))
			if dr := utf16.DecodeRune(r, r2); dr != utf8.RuneError {
				dst = utf8.AppendRune(dst, dr) // 4 bytes for 2 code units: within size
				i += 2
				continue
			}
		}
		if utf16.IsSurrogate(r) {
			r = utf8.RuneError
		}
		dst = utf8.AppendRune(dst, r)
	}
	return a.string(dst)
}
