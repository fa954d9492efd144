package export

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"viewer/trace"
)

// AppendValue appends the JSON encoding of v to b: integers and floats as
// JSON numbers; hex integers, GUIDs, bytes and times as strings; a struct
// as an ordered array of {"name","value"} objects ([AppendFields]) and an
// array as a JSON array. Non-finite floats become the strings "NaN",
// "+Inf" and "-Inf"; invalid UTF-8 is replaced.
func AppendValue(b []byte, v trace.Value) []byte { return appendValue(b, &v) }

// appendValue is AppendValue by pointer, for encoders that walk fields in
// place: copying a value just written costs more than encoding it.
func appendValue(b []byte, v *trace.Value) []byte {
	switch v.Kind() {
	case trace.KindInt:
		return appendInt(b, v.Int())
	case trace.KindUint:
		return appendUint(b, v.Uint())
	case trace.KindFloat:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return AppendString(b, v.String())
		}
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	case trace.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case trace.KindString:
		return AppendString(b, v.Str())
	case trace.KindStruct:
		return AppendFields(b, v.Fields())
	case trace.KindArray:
		b = append(b, '[')
		elems := v.Fields()
		for i := range elems {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, &elems[i].Value)
		}
		return append(b, ']')
	case trace.KindBad:
		return append(b, "null"...)
	case trace.KindHex: // as v.String(), which needs no escaping, without allocating
		b = appendHexUint(append(b, `"0x`...), v.Uint())
		return append(b, '"')
	case trace.KindTime:
		b = v.Time().AppendFormat(append(b, '"'), time.RFC3339Nano)
		return append(b, '"')
	case trace.KindBytes:
		return append(appendHex(append(b, '"'), v.Str()), '"')
	case trace.KindGUID:
		if g := v.Str(); len(g) == 16 {
			return append(appendGUID(append(b, '"'), g), '"')
		}
	}
	return AppendString(b, v.String())
}

// appendHex appends s in lower-case hex.
func appendHex(b []byte, s string) []byte {
	const digits = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		b = append(b, digits[s[i]>>4], digits[s[i]&15])
	}
	return b
}

// appendGUID appends 16 bytes in Windows layout as trace.FormatGUID
// does: xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, the first three groups
// little-endian.
func appendGUID(b []byte, g string) []byte {
	for _, i := range [...]int{3, 2, 1, 0} {
		b = appendHex(b, g[i:i+1])
	}
	b = append(b, '-')
	b = appendHex(appendHex(b, g[5:6]), g[4:5])
	b = append(b, '-')
	b = appendHex(appendHex(b, g[7:8]), g[6:7])
	b = append(b, '-')
	b = appendHex(b, g[8:10])
	b = append(b, '-')
	return appendHex(b, g[10:16])
}

// AppendFields appends fields as an ordered JSON array of
// {"name":…,"value":…} objects.
func AppendFields(b []byte, fields []trace.Field) []byte {
	b = append(b, '[')
	for i := range fields {
		f := &fields[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = AppendString(b, f.Name)
		b = append(b, `,"value":`...)
		b = appendValue(b, &f.Value)
		b = append(b, '}')
	}
	return append(b, ']')
}

// AppendString appends s as a JSON string, escaping what JSON and HTML
// need and replacing invalid UTF-8 with U+FFFD.
func AppendString(b []byte, s string) []byte { return appendString(b, s) }

func appendString[S string | []byte](b []byte, s S) []byte {
	if !jsonPlain(s) {
		return appendEscaped(b, s)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendEscaped appends s as a JSON string, byte for byte what
// json.Marshal(strings.ToValidUTF8(s, "\uFFFD")) writes (HTML characters
// escaped, each run of invalid UTF-8 one U+FFFD), without allocating.
func appendEscaped[S string | []byte](b []byte, s S) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) && plainWord(word(s, i)) { // long plain runs between what needs escaping
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		var r rune
		var size int
		if str, ok := any(s).(string); ok {
			r, size = utf8.DecodeRuneInString(str[i:])
		} else {
			r, size = utf8.DecodeRune([]byte(s[i:]))
		}
		switch {
		case r == utf8.RuneError && size == 1: // a run of invalid bytes: one U+FFFD
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...)
			for i < len(s) {
				if s[i] < utf8.RuneSelf {
					break
				}
				var r rune
				var n int
				if str, ok := any(s).(string); ok {
					r, n = utf8.DecodeRuneInString(str[i:])
				} else {
					r, n = utf8.DecodeRune([]byte(s[i:]))
				}
				if r != utf8.RuneError || n != 1 {
					break
				}
				i++
			}
			start = i
			continue
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonPlain reports whether s needs no escaping in a JSON string: no
// control bytes, no non-ASCII, no '"', '\\', '<', '>' or '&'. It tests
// sixteen bytes at a time.
func jsonPlain[S string | []byte](s S) bool {
	i := 0
	for ; i+16 <= len(s); i += 16 {
		if escapes(word(s, i))|escapes(word(s, i+8)) != 0 {
			return false
		}
	}
	for ; i+8 <= len(s); i += 8 {
		if escapes(word(s, i)) != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// word returns the eight bytes of s at i as a little-endian word.
func word[S string | []byte](s S, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// plainWord reports whether none of the eight bytes of x needs escaping
// in a JSON string (see jsonPlain).
func plainWord(x uint64) bool { return escapes(x) == 0 }

// escapes returns x's bytes that need escaping in a JSON string as their
// top bits (0 when none does). A word with a byte from 0x80 up is
// reported by that byte; in a word of ASCII bytes no sum below carries
// out of its byte: c+0x60 reaches 0x80 when c >= 0x20, and y+0x7f when
// y != 0, so each test leaves a top bit for a byte that passes.
func escapes(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		nz    = 0x7f * ones // plus nz: top bit set when the byte is not zero
	)
	ok := (x + 0x60*ones) & // not a control byte
		((x ^ '"'*ones) + nz) &
		((x ^ '\\'*ones) + nz) &
		((x ^ '&'*ones) + nz) &
		((x | 2*ones) ^ '>'*ones + nz) // neither '<' (0x3c) nor '>' (0x3e)
	return (x | ^ok) & highs
}
