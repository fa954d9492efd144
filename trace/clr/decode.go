package clr

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"

	"viewer/trace"
)

// MaxElements caps the elements of one array field; larger counts are
// also bounded by the bytes that remain.
const MaxElements = 1 << 16

// MaxString caps the bytes of one decoded string.
const MaxString = 1 << 16

// Decoded is the result of [Decode].
type Decoded struct {
	Fields []trace.Field
	// Used is how many payload bytes the fields took. A payload longer
	// than Used has fields a newer event version appended.
	Used int
	// Short is true when the payload ended before the schema did; Fields
	// then holds the fields that were complete.
	Short bool
}

// Decode decodes a payload laid out by fields. ptrSize is the trace's
// pointer size (4 or 8). It never fails: a payload shorter than the schema
// gives the complete fields and Short, a longer one leaves bytes unused.
func Decode(fields []Field, payload []byte, ptrSize int) Decoded {
	d := decoder{buf: payload, ptr: ptrSize}
	out := d.fields(fields, 0)
	return Decoded{Fields: out, Used: d.off, Short: d.short}
}

type decoder struct {
	buf   []byte
	off   int
	ptr   int
	short bool
}

func (d *decoder) fields(spec []Field, depth int) []trace.Field {
	out := make([]trace.Field, 0, len(spec))
	for i := range spec {
		f := &spec[i]
		n, isArray := d.count(f.Count, f.CountField, out)
		if d.short {
			return out
		}
		var v trace.Value
		if isArray {
			elems := make([]trace.Value, 0, min(n, 64))
			for range n {
				e, ok := d.value(f, out, depth)
				if !ok {
					break
				}
				elems = append(elems, e)
			}
			if d.short {
				return out
			}
			v = trace.ArrayValue(elems)
		} else {
			var ok bool
			if v, ok = d.value(f, out, depth); !ok {
				return out
			}
		}
		out = append(out, trace.Field{Name: f.Name, Value: v})
	}
	return out
}

// count returns the element count of a field and whether it is an array.
func (d *decoder) count(fixed int, ref string, decoded []trace.Field) (int, bool) {
	if ref == "" {
		return fixed, fixed > 0
	}
	for _, g := range decoded {
		if g.Name == ref {
			n := g.Value.Uint()
			if n > MaxElements || n > uint64(len(d.buf)-d.off) {
				// Every element takes at least one byte: a larger count
				// cannot fit the payload.
				d.short = true
				return 0, true
			}
			return int(n), true
		}
	}
	return 0, true
}

func (d *decoder) take(n int) []byte {
	if n < 0 || n > len(d.buf)-d.off {
		d.short = true
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

func (d *decoder) value(f *Field, decoded []trace.Field, depth int) (trace.Value, bool) {
	switch f.Type {
	case Struct:
		if depth > 8 {
			d.short = true
			return trace.Value{}, false
		}
		members := d.fields(f.Fields, depth+1)
		if d.short {
			return trace.Value{}, false
		}
		return trace.StructValue(members), true
	case UTF16:
		s, ok := d.utf16()
		return trace.StringValue(s), ok
	case ANSI:
		end := -1
		for i := d.off; i < len(d.buf); i++ {
			if d.buf[i] == 0 {
				end = i
				break
			}
		}
		if end < 0 {
			d.short = true
			return trace.Value{}, false
		}
		s := string(d.buf[d.off:min(end, d.off+MaxString)])
		d.off = end + 1
		return trace.StringValue(s), true
	case Binary:
		n, _ := d.count(f.Length, f.LengthField, decoded)
		b := d.take(n)
		if d.short {
			return trace.Value{}, false
		}
		return trace.BytesValue(b), true
	case GUID:
		b := d.take(16)
		if b == nil {
			return trace.Value{}, false
		}
		return trace.GUIDValue([16]byte(b)), true
	}
	size := fixedSize(f.Type, d.ptr)
	b := d.take(size)
	if b == nil {
		return trace.Value{}, false
	}
	var u uint64
	switch size {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(binary.LittleEndian.Uint16(b))
	case 4:
		u = uint64(binary.LittleEndian.Uint32(b))
	case 8:
		u = binary.LittleEndian.Uint64(b)
	}
	switch f.Type {
	case Int8:
		return trace.IntValue(int64(int8(u))), true
	case Int16:
		return trace.IntValue(int64(int16(u))), true
	case Int32:
		return trace.IntValue(int64(int32(u))), true
	case Int64:
		return trace.IntValue(int64(u)), true
	case Bool32:
		return trace.BoolValue(u != 0), true
	case Float:
		return trace.FloatValue(float64(math.Float32frombits(uint32(u)))), true
	case Double:
		return trace.FloatValue(math.Float64frombits(u)), true
	case Pointer:
		return trace.HexValue(u), true
	}
	if f.Map != nil {
		if s, ok := f.Map.Text(u); ok {
			return trace.StringValue(s), true
		}
	}
	if f.Hex {
		return trace.HexValue(u), true
	}
	return trace.UintValue(u), true
}

func fixedSize(t Type, ptr int) int {
	switch t {
	case UInt8, Int8:
		return 1
	case UInt16, Int16:
		return 2
	case UInt32, Int32, Bool32, Float:
		return 4
	case UInt64, Int64, Double:
		return 8
	case Pointer:
		if ptr == 4 {
			return 4
		}
		return 8
	}
	return -1 // unknown type: take fails
}

func (d *decoder) utf16() (string, bool) {
	var units []uint16
	for {
		b := d.take(2)
		if b == nil {
			return "", false
		}
		u := binary.LittleEndian.Uint16(b)
		if u == 0 {
			break
		}
		if len(units) < MaxString/2 {
			units = append(units, u)
		}
	}
	return string(utf16.Decode(units)), true
}

// Text returns the text for v: the entry's name for a value map, the
// names of the set bits joined by '|' for a bit map.
func (m *Map) Text(v uint64) (string, bool) {
	if !m.Bits {
		for _, e := range m.Entries {
			if e.Value == v {
				return e.Text, true
			}
		}
		return "", false
	}
	var parts []string
	rest := v
	for _, e := range m.Entries {
		if e.Value != 0 && v&e.Value == e.Value {
			parts = append(parts, e.Text)
			rest &^= e.Value
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	if rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(rest, 16))
	}
	return strings.Join(parts, "|"), true
}
