package nettrace

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// dec is a little-endian decoding cursor over one block held in memory,
// with a sticky error in the style of debug/dwarf's buf: after the first
// underflow every method returns zero values and bad is set, so callers
// check once per record.
type dec struct {
	b    []byte
	off  int   // read position in b
	base int64 // file offset of b[0]
	bad  bool  // a read ran past the end of b or a varint was malformed
}

func (d *dec) left() int { return len(d.b) - d.off }

// pos returns the file offset of the read position.
func (d *dec) pos() int64 { return d.base + int64(d.off) }

func (d *dec) fail() {
	d.bad = true
	d.off = len(d.b)
}

func (d *dec) u8() uint8 {
	if d.off >= len(d.b) {
		d.fail()
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *dec) u16() uint16 {
	if len(d.b)-d.off < 2 {
		d.fail()
		return 0
	}
	v := binary.LittleEndian.Uint16(d.b[d.off:])
	d.off += 2
	return v
}

func (d *dec) u32() uint32 {
	if len(d.b)-d.off < 4 {
		d.fail()
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *dec) u64() uint64 {
	if len(d.b)-d.off < 8 {
		d.fail()
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

// uvarint32 reads an unsigned LEB128 value of at most 5 bytes that fits
// in 32 bits.
func (d *dec) uvarint32() uint32 {
	if d.off < len(d.b) && d.b[d.off] < 0x80 {
		v := d.b[d.off]
		d.off++
		return uint32(v)
	}
	v := d.uvarintSlow()
	if v > 1<<32-1 {
		d.fail()
		return 0
	}
	return uint32(v)
}

// uvarint64 reads an unsigned LEB128 value of at most 10 bytes.
func (d *dec) uvarint64() uint64 {
	if d.off < len(d.b) && d.b[d.off] < 0x80 {
		v := d.b[d.off]
		d.off++
		return uint64(v)
	}
	return d.uvarintSlow()
}

// uvarintSlow reads a LEB128 value of more than one byte. Up to 8 bytes
// it loads a word and gathers the 7-bit groups without a branch per byte
// (timestamp deltas take 2–4 bytes of varying length, which the loop in
// binary.Uvarint mispredicts); longer or cut values go to binary.Uvarint.
func (d *dec) uvarintSlow() uint64 {
	if len(d.b)-d.off >= 8 {
		x := binary.LittleEndian.Uint64(d.b[d.off:])
		if m := ^x & 0x8080_8080_8080_8080; m != 0 {
			p := bits.TrailingZeros64(m) // high bit of the last byte
			d.off += p>>3 + 1
			x &= (2<<p - 1) & 0x7f7f_7f7f_7f7f_7f7f // p == 63: 2<<p is 0, the mask all ones
			// pairs of groups into 14 bits, then 28, then 56
			x = x&0x007f_007f_007f_007f | x&0x7f00_7f00_7f00_7f00>>1
			x = x&0x0000_3fff_0000_3fff | x&0x3fff_0000_3fff_0000>>2
			return x&0x0fff_ffff | x&0x0fff_ffff_0000_0000>>4
		}
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.off += n
	return v
}

// varint64 reads a zig-zag signed LEB128 value (v6 VarInt).
func (d *dec) varint64() int64 {
	u := d.uvarint64()
	return int64(u>>1) ^ -int64(u&1)
}

// bytes returns the next n bytes without copying.
func (d *dec) bytes(n int) []byte {
	if n < 0 || len(d.b)-d.off < n {
		d.fail()
		return nil
	}
	v := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return v
}

func (d *dec) skip(n int) {
	if n < 0 || len(d.b)-d.off < n {
		d.fail()
		return
	}
	d.off += n
}

func (d *dec) guid() (g [16]byte) {
	copy(g[:], d.bytes(16))
	return g
}

// utf16z reads a NUL-terminated UTF-16LE string.
func (d *dec) utf16z() string {
	b := d.b[d.off:]
	for i := 0; i+1 < len(b); i += 2 {
		if b[i] == 0 && b[i+1] == 0 {
			d.off += i + 2
			return decodeUTF16(b[:i])
		}
	}
	d.fail()
	return ""
}

// str reads a v6 string: varuint32 byte length then UTF-8.
func (d *dec) str() string {
	n := d.uvarint32()
	return string(d.bytes(int(n)))
}

// decodeUTF16 converts UTF-16LE bytes to a string; an odd trailing byte is
// ignored and unpaired surrogates become U+FFFD.
func decodeUTF16(b []byte) string {
	ascii := true
	for i := 0; i+1 < len(b); i += 2 {
		if b[i] >= 0x80 || b[i+1] != 0 {
			ascii = false
			break
		}
	}
	if ascii {
		s := make([]byte, len(b)/2)
		for i := range s {
			s[i] = b[2*i]
		}
		return string(s)
	}
	var out []byte
	for i := 0; i+1 < len(b); i += 2 {
		r := rune(binary.LittleEndian.Uint16(b[i:]))
		if utf16.IsSurrogate(r) && i+3 < len(b) {
			r2 := rune(binary.LittleEndian.Uint16(b[i+2:]))
			if dr := utf16.DecodeRune(r, r2); dr != utf8.RuneError {
				out = utf8.AppendRune(out, dr)
				i += 2
				continue
			}
		}
		if utf16.IsSurrogate(r) {
			r = utf8.RuneError
		}
		out = utf8.AppendRune(out, r)
	}
	return string(out)
}
