package nettracetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf16"

	"viewer/trace"
)

// TypeCode is the type of a payload field as v6 metadata writes it
// (EventPipeTypeCode, §metadata).
type TypeCode uint8

// Type codes of the file format (§metadata); the ones marked v6 are new in v6.
const (
	TypeObject        TypeCode = 1  // nested fields, concatenated
	TypeBoolean32     TypeCode = 3  // 4 bytes, 0 or 1
	TypeUTF16CodeUnit TypeCode = 4  // 2 bytes
	TypeSByte         TypeCode = 5  // 1 byte
	TypeByte          TypeCode = 6  // 1 byte
	TypeInt16         TypeCode = 7  // 2 bytes
	TypeUInt16        TypeCode = 8  // 2 bytes
	TypeInt32         TypeCode = 9  // 4 bytes
	TypeUInt32        TypeCode = 10 // 4 bytes
	TypeInt64         TypeCode = 11 // 8 bytes
	TypeUInt64        TypeCode = 12 // 8 bytes
	TypeSingle        TypeCode = 13 // IEEE float32
	TypeDouble        TypeCode = 14 // IEEE float64
	TypeDecimal       TypeCode = 15 // 16 bytes
	TypeDateTime      TypeCode = 16 // 8-byte FILETIME
	TypeGUID          TypeCode = 17 // 16 bytes
	TypeUTF16String   TypeCode = 18 // UTF-16LE up to a 2-byte NUL
	TypeArray         TypeCode = 19 // uint16 count, then elements
	TypeVarInt        TypeCode = 20 // zig-zag LEB128 (v6)
	TypeVarUInt       TypeCode = 21 // LEB128 (v6)
	TypeFixedArray    TypeCode = 22 // Count elements (v6)
	TypeUTF8CodeUnit  TypeCode = 23 // 1 byte (v6)
	TypeRelLoc        TypeCode = 24 // u32 size<<16 | offset from the end of the field (v6)
	TypeDataLoc       TypeCode = 25 // u32 size<<16 | offset from the start of the payload (v6)
	TypeBoolean8      TypeCode = 26 // 1 byte (v6)
)

// Field describes one payload field as a v6 metadata row writes it
// (§metadata-v6), and as EncodePayload encodes its value.
type Field struct {
	Name string
	Type TypeCode
	// Elem is the element of an Array, FixedArray, RelLoc or DataLoc.
	Elem *Field
	// Count is the element count of a FixedArray.
	Count int
	// Fields are the members of an Object.
	Fields []Field
}

// EncodePayload encodes field values by a schema, as the runtime lays out
// an event's payload (§metadata). values[i] is the value of fields[i]; a value's
// kind must suit its field's type (arrays of characters are strings,
// arrays of bytes are bytes, objects are structs). RelLoc and DataLoc data
// go after the fixed part. No wire type is pointer-sized, so the encoding
// does not depend on the trace's pointer size.
func EncodePayload(fields []Field, values []trace.Value) ([]byte, error) {
	var e encoder
	if err := e.fields(fields, values); err != nil {
		return nil, err
	}
	// RelLoc/DataLoc data follow the body in order.
	b := e.body
	for _, fx := range e.fix {
		off := len(b)
		b = append(b, fx.data...)
		if fx.rel {
			off -= fx.at + 4
		}
		if off > 0xffff || len(fx.data) > 0xffff {
			return nil, errors.New("nettracetest: payload too large for a RelLoc/DataLoc")
		}
		le.PutUint32(b[fx.at:], uint32(len(fx.data))<<16|uint32(off))
	}
	return b, nil
}

type encoder struct {
	body []byte
	fix  []locFix
}

type locFix struct {
	at   int
	rel  bool
	data []byte
}

func (e *encoder) fields(fs []Field, vs []trace.Value) error {
	if len(fs) != len(vs) {
		return fmt.Errorf("nettracetest: %d values for %d fields", len(vs), len(fs))
	}
	for i := range fs {
		if err := e.value(&fs[i], vs[i]); err != nil {
			return fmt.Errorf("%s: %w", fs[i].Name, err)
		}
	}
	return nil
}

func (e *encoder) value(f *Field, v trace.Value) error {
	b := e.body
	switch f.Type {
	case TypeObject:
		ms := v.Fields()
		vals := make([]trace.Value, len(ms))
		for i, m := range ms {
			vals[i] = m.Value
		}
		return e.fields(f.Fields, vals)
	case TypeBoolean32:
		b = le.AppendUint32(b, uint32(v.Uint()))
	case TypeBoolean8, TypeByte, TypeSByte:
		b = append(b, byte(v.Uint()))
	case TypeUTF16CodeUnit:
		b = appendUTF16(b, v.Str())
	case TypeUTF8CodeUnit:
		b = append(b, v.Str()...)
	case TypeInt16, TypeUInt16:
		b = le.AppendUint16(b, uint16(v.Uint()))
	case TypeInt32, TypeUInt32:
		b = le.AppendUint32(b, uint32(v.Uint()))
	case TypeInt64, TypeUInt64:
		b = le.AppendUint64(b, v.Uint())
	case TypeSingle:
		b = le.AppendUint32(b, math.Float32bits(float32(v.Float())))
	case TypeDouble:
		b = le.AppendUint64(b, math.Float64bits(v.Float()))
	case TypeDecimal, TypeGUID:
		b = append(b, v.Str()...)
	case TypeDateTime:
		ft := v.Uint()
		if v.Kind() == trace.KindTime {
			ft = uint64(v.Time().UnixNano()/100 + 11644473600*1e7)
		}
		b = le.AppendUint64(b, ft)
	case TypeUTF16String:
		b = append(appendUTF16(b, v.Str()), 0, 0)
	case TypeVarInt:
		b = binary.AppendUvarint(b, uint64(v.Int()<<1^(v.Int()>>63)))
	case TypeVarUInt:
		b = binary.AppendUvarint(b, v.Uint())
	case TypeArray, TypeFixedArray:
		n := elemCount(f.Elem, v)
		if f.Type == TypeArray {
			b = le.AppendUint16(b, uint16(n))
		} else if n != f.Count {
			return fmt.Errorf("%d elements for a fixed array of %d", n, f.Count)
		}
		e.body = b
		return e.elems(f.Elem, v)
	case TypeRelLoc, TypeDataLoc:
		var sub encoder
		if err := sub.elems(f.Elem, v); err != nil {
			return err
		}
		e.fix = append(e.fix, locFix{at: len(b), rel: f.Type == TypeRelLoc, data: sub.body})
		b = append(b, 0, 0, 0, 0)
	default:
		return fmt.Errorf("cannot encode type code %d", f.Type)
	}
	e.body = b
	return nil
}

func elemCount(el *Field, v trace.Value) int {
	switch el.Type {
	case TypeUTF16CodeUnit:
		return len(utf16.Encode([]rune(v.Str())))
	case TypeUTF8CodeUnit, TypeByte:
		return len(v.Str())
	}
	return len(v.Fields())
}

func (e *encoder) elems(el *Field, v trace.Value) error {
	switch el.Type {
	case TypeUTF16CodeUnit:
		e.body = appendUTF16(e.body, v.Str())
		return nil
	case TypeUTF8CodeUnit, TypeByte:
		e.body = append(e.body, v.Str()...)
		return nil
	}
	for _, x := range v.Fields() {
		if err := e.value(el, x.Value); err != nil {
			return err
		}
	}
	return nil
}

func appendUTF16(b []byte, s string) []byte {
	for _, u := range utf16.Encode([]rune(s)) {
		b = le.AppendUint16(b, u)
	}
	return b
}
