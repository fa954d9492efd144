package trace

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
)

// Kind is the kind of a decoded [Value]. The set may grow.
type Kind uint8

const (
	KindBad    Kind = iota
	KindInt         // signed integer
	KindUint        // unsigned integer
	KindHex         // unsigned integer shown in hex (pointers, flags)
	KindFloat       // IEEE float
	KindBool        // boolean
	KindString      // text
	KindBytes       // opaque bytes, shown in hex
	KindGUID        // 16-byte GUID in Windows layout
	KindTime        // wall-clock time
	KindStruct      // ordered fields
	KindArray       // ordered elements
)

// Value is one decoded field value. The zero Value is KindBad.
type Value struct {
	kind Kind
	num  uint64
	str  string
	list []Field
}

// Field is a named value: a payload field, a struct member or (with an
// empty name) an array element.
type Field struct {
	Name  string
	Value Value
}

// IntValue returns a signed integer value.
func IntValue(v int64) Value { return Value{kind: KindInt, num: uint64(v)} }

// UintValue returns an unsigned integer value.
func UintValue(v uint64) Value { return Value{kind: KindUint, num: v} }

// HexValue returns an unsigned integer value displayed in hex.
func HexValue(v uint64) Value { return Value{kind: KindHex, num: v} }

// FloatValue returns a float value.
func FloatValue(v float64) Value { return Value{kind: KindFloat, num: math.Float64bits(v)} }

// BoolValue returns a boolean value.
func BoolValue(v bool) Value {
	var n uint64
	if v {
		n = 1
	}
	return Value{kind: KindBool, num: n}
}

// StringValue returns a text value.
func StringValue(s string) Value { return Value{kind: KindString, str: s} }

// BytesValue returns an opaque bytes value; b is copied.
func BytesValue(b []byte) Value { return Value{kind: KindBytes, str: string(b)} }

// GUIDValue returns a GUID from its 16 bytes in Windows (mixed-endian) layout.
func GUIDValue(b [16]byte) Value { return Value{kind: KindGUID, str: string(b[:])} }

// TimeValue returns a wall-clock time value.
func TimeValue(t time.Time) Value {
	return Value{kind: KindTime, num: uint64(t.UnixNano()), str: "t"}
}

// SetInt, SetUint, SetHex and SetString overwrite v with what IntValue,
// UintValue, HexValue and StringValue return, field by field: decoders
// that fill field lists of their own use them, because assigning a
// returned Value (seven words) goes through a temporary whose copy
// stalls on store forwarding, which costs more than decoding the value.
func (v *Value) SetInt(x int64) { v.kind, v.num, v.str, v.list = KindInt, uint64(x), "", nil }

// SetUint: see SetInt.
func (v *Value) SetUint(x uint64) { v.kind, v.num, v.str, v.list = KindUint, x, "", nil }

// SetHex: see SetInt.
func (v *Value) SetHex(x uint64) { v.kind, v.num, v.str, v.list = KindHex, x, "", nil }

// SetString: see SetInt.
func (v *Value) SetString(s string) { v.kind, v.num, v.str, v.list = KindString, 0, s, nil }

// StructValue returns a struct value with the given members.
func StructValue(fields []Field) Value { return Value{kind: KindStruct, list: fields} }

// ArrayValue returns an array value; element names are ignored.
func ArrayValue(elems []Value) Value {
	l := make([]Field, len(elems))
	for i, e := range elems {
		l[i].Value = e
	}
	return Value{kind: KindArray, list: l}
}

// Kind returns the value's kind.
func (v Value) Kind() Kind { return v.kind }

// Int returns a KindInt value; other integer kinds are converted.
func (v Value) Int() int64 { return int64(v.num) }

// Uint returns a KindUint or KindHex value; other integer kinds are converted.
func (v Value) Uint() uint64 { return v.num }

// Float returns a KindFloat value.
func (v Value) Float() float64 { return math.Float64frombits(v.num) }

// Bool returns a KindBool value.
func (v Value) Bool() bool { return v.num != 0 }

// Str returns the text of a KindString value or the bytes of KindBytes and KindGUID.
func (v Value) Str() string { return v.str }

// Time returns a KindTime value.
func (v Value) Time() time.Time { return time.Unix(0, int64(v.num)).UTC() }

// Fields returns the members of a KindStruct value or the elements of a KindArray.
func (v Value) Fields() []Field { return v.list }

// Number returns the value as a float64 for numeric kinds, and whether it is numeric.
func (v Value) Number() (float64, bool) {
	switch v.kind {
	case KindInt:
		return float64(int64(v.num)), true
	case KindUint, KindHex:
		return float64(v.num), true
	case KindFloat:
		return v.Float(), true
	case KindBool:
		return float64(v.num), true
	}
	return 0, false
}

// FormatGUID renders 16 bytes in Windows layout as
// xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func FormatGUID(b []byte) string {
	if len(b) != 16 {
		return hex.EncodeToString(b)
	}
	var buf [36]byte
	hexTo := func(dst []byte, v uint64, n int) {
		for i := n - 1; i >= 0; i-- {
			dst[i] = "0123456789abcdef"[v&0xf]
			v >>= 4
		}
	}
	hexTo(buf[0:8], uint64(binary.LittleEndian.Uint32(b[0:])), 8)
	buf[8] = '-'
	hexTo(buf[9:13], uint64(binary.LittleEndian.Uint16(b[4:])), 4)
	buf[13] = '-'
	hexTo(buf[14:18], uint64(binary.LittleEndian.Uint16(b[6:])), 4)
	buf[18] = '-'
	hex.Encode(buf[19:23], b[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:36], b[10:16])
	return string(buf[:])
}

// String renders the value as one line of text.
func (v Value) String() string {
	var sb strings.Builder
	v.appendText(&sb)
	return sb.String()
}

func (v Value) appendText(sb *strings.Builder) {
	switch v.kind {
	case KindInt:
		sb.WriteString(strconv.FormatInt(int64(v.num), 10))
	case KindUint:
		sb.WriteString(strconv.FormatUint(v.num, 10))
	case KindHex:
		sb.WriteString("0x")
		sb.WriteString(strconv.FormatUint(v.num, 16))
	case KindFloat:
		sb.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case KindBool:
		sb.WriteString(strconv.FormatBool(v.num != 0))
	case KindString:
		sb.WriteString(v.str)
	case KindBytes:
		sb.WriteString(hex.EncodeToString([]byte(v.str)))
	case KindGUID:
		sb.WriteString(FormatGUID([]byte(v.str)))
	case KindTime:
		sb.WriteString(v.Time().Format(time.RFC3339Nano))
	case KindStruct:
		sb.WriteByte('{')
		for i, f := range v.list {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(f.Name)
			sb.WriteByte('=')
			f.Value.appendText(sb)
		}
		sb.WriteByte('}')
	case KindArray:
		sb.WriteByte('[')
		for i, f := range v.list {
			if i > 0 {
				sb.WriteString(", ")
			}
			f.Value.appendText(sb)
		}
		sb.WriteByte(']')
	default:
		sb.WriteString("?")
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// ArrayOf returns an array value whose elements are the values of elems
// (their names are ignored). Unlike ArrayValue it keeps elems rather than
// copying them: for decoders that hand out element lists from storage of
// their own.
func ArrayOf(elems []Field) Value { return Value{kind: KindArray, list: elems} }
