package nettrace

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"viewer/trace"
)

// TypeCode is the type of a payload field (EventPipeTypeCode). Values up to
// 26 are the file format's; the set may grow.
type TypeCode uint8

const (
	TypeBad           TypeCode = 0
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
	TypeDecimal       TypeCode = 15 // 16 bytes, shown raw
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

	// The codes below never occur in files; they serve schemas supplied
	// from elsewhere (the CLR event manifest).

	TypePointer    TypeCode = 0x80 // the trace's pointer size, shown in hex
	TypeHexInt32   TypeCode = 0x81 // 4 bytes shown in hex
	TypeHexInt64   TypeCode = 0x82 // 8 bytes shown in hex
	TypeAnsiString TypeCode = 0x83 // 8-bit characters up to a NUL
)

// typeNames are the type codes' names, indexed by code; codes from 0x80
// on are at 27 and after.
var typeNames = [...]string{
	TypeObject: "object", TypeBoolean32: "bool32", TypeUTF16CodeUnit: "char16", TypeSByte: "int8",
	TypeByte: "uint8", TypeInt16: "int16", TypeUInt16: "uint16", TypeInt32: "int32", TypeUInt32: "uint32",
	TypeInt64: "int64", TypeUInt64: "uint64", TypeSingle: "float32", TypeDouble: "float64",
	TypeDecimal: "decimal", TypeDateTime: "datetime", TypeGUID: "guid", TypeUTF16String: "string",
	TypeArray: "array", TypeVarInt: "varint", TypeVarUInt: "varuint", TypeFixedArray: "fixedarray",
	TypeUTF8CodeUnit: "char8", TypeRelLoc: "relloc", TypeDataLoc: "dataloc", TypeBoolean8: "bool8",
	27: "pointer", 28: "hexint32", 29: "hexint64", 30: "ansistring",
}

func (t TypeCode) String() string {
	i := int(t)
	if t >= TypePointer {
		i = i - int(TypePointer) + 27
	}
	if i < len(typeNames) && typeNames[i] != "" && (t <= TypeBoolean8 || t >= TypePointer) {
		return typeNames[i]
	}
	return "TypeCode(" + strconv.Itoa(int(t)) + ")"
}

// fixedSize is the size of a fixed-size scalar type, or 0.
func (t TypeCode) fixedSize(ptr int) int {
	switch t {
	case TypeSByte, TypeByte, TypeUTF8CodeUnit, TypeBoolean8:
		return 1
	case TypeUTF16CodeUnit, TypeInt16, TypeUInt16:
		return 2
	case TypeBoolean32, TypeInt32, TypeUInt32, TypeSingle, TypeHexInt32, TypeRelLoc, TypeDataLoc:
		return 4
	case TypeInt64, TypeUInt64, TypeDouble, TypeDateTime, TypeHexInt64:
		return 8
	case TypeDecimal, TypeGUID:
		return 16
	case TypePointer:
		return ptr
	}
	return 0
}

// Field describes one payload field: a schema entry. Schemas come from the
// file's metadata or, for events whose metadata has no fields, from a
// table supplied by the caller; [DecodePayload] decodes either.
type Field struct {
	Name string
	Type TypeCode
	// Elem is the element of an Array, FixedArray, RelLoc or DataLoc.
	Elem *Field
	// Count is the element count of a FixedArray.
	Count int
	// CountField, for an Array, names an earlier sibling integer field
	// that holds the element count; the uint16 count prefix is then
	// absent (manifest schemas).
	CountField string
	// Fields are the members of an Object.
	Fields []Field
}

// Spec converts a schema to the model's field descriptions.
func Spec(fields []Field) []trace.FieldSpec {
	if len(fields) == 0 {
		return nil
	}
	out := make([]trace.FieldSpec, len(fields))
	for i, f := range fields {
		out[i] = f.spec()
	}
	return out
}

func (f Field) spec() trace.FieldSpec {
	s := trace.FieldSpec{Name: f.Name, Type: f.Type.String()}
	switch {
	case f.Type == TypeObject:
		s.Fields = Spec(f.Fields)
	case f.Elem != nil:
		s.Fields = []trace.FieldSpec{f.Elem.spec()}
	}
	return s
}

// Limits on payload decoding.
const (
	// MaxValues caps the values decoded from one payload, so that nested
	// arrays of empty elements cannot make decoding take unbounded time;
	// a payload also gets no more than 64 + 4 values per byte.
	MaxValues = 1 << 16
	// MaxDepth caps the nesting of objects and arrays in a schema.
	MaxDepth = 16
	// MaxLabel caps the length of an event's one-line label.
	MaxLabel = 200
)

// DecodePayload decodes payload by the schema fields. pointerSize is the
// trace's pointer size (for TypePointer). It tolerates payloads shorter
// or longer than the schema: fields the payload does not hold are left
// out, and trailing bytes are ignored. It returns the decoded fields and
// the number of payload bytes they used.
func DecodePayload(payload []byte, fields []Field, pointerSize int) ([]trace.Field, int) {
	p := newPayloadDec(payload, pointerSize, nil)
	out := p.fields(make([]trace.Field, 0, len(fields)), fields, 0)
	return out, p.off
}

// appendPayload is DecodePayload appending the fields to dst, with the
// strings and nested lists taken from a (or allocated when a is nil).
func appendPayload(dst []trace.Field, payload []byte, fields []Field, pointerSize int, a *arena) []trace.Field {
	p := newPayloadDec(payload, pointerSize, a)
	return p.fields(dst, fields, 0)
}

func newPayloadDec(payload []byte, pointerSize int, a *arena) payloadDec {
	return payloadDec{dec: dec{b: payload}, ptr: pointerSize, payload: payload, budget: min(MaxValues, 64+4*len(payload)), a: a}
}

type payloadDec struct {
	dec
	ptr     int
	payload []byte
	budget  int
	a       *arena // where strings and lists go; nil: the heap
}

// list returns an empty field list with room for n.
func (p *payloadDec) list(n int) []trace.Field {
	if p.a == nil {
		return make([]trace.Field, 0, n)
	}
	return p.a.list(n)
}

// grow returns l with room for one more field, moved to a list of twice
// the room when it is full.
func (p *payloadDec) grow(l []trace.Field) []trace.Field {
	if len(l) < cap(l) {
		return l
	}
	return append(p.list(max(2*cap(l), 4)), l...)
}

// str16 decodes UTF-16LE text.
func (p *payloadDec) str16(b []byte) string {
	if p.a == nil {
		return decodeUTF16(b)
	}
	return p.a.utf16(b)
}

// str8 decodes UTF-8 text, invalid bytes replaced by U+FFFD.
func (p *payloadDec) str8(b []byte) string {
	if p.a != nil && utf8.Valid(b) {
		return p.a.copyString(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// fields appends the fields of schema fs to dst.
func (p *payloadDec) fields(dst []trace.Field, fs []Field, depth int) []trace.Field {
	first := len(dst)
	for i := range fs {
		f := &fs[i]
		if p.left() == 0 && f.Type != TypeObject && !(f.Type == TypeFixedArray && f.Count == 0) {
			break
		}
		start := p.off
		n := -1
		if f.Type == TypeArray && f.CountField != "" {
			for _, prev := range dst[first:] {
				if prev.Name == f.CountField {
					if x, ok := prev.Value.Number(); ok && x >= 0 && x <= math.MaxUint16 {
						n = int(x)
					}
				}
			}
			if n < 0 {
				break
			}
		}
		// The value is decoded into its place in dst: a value returned
		// into a variable and copied there costs a store-forwarding stall
		// per word, more than most values cost to decode.
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, len(fs)-i)
		}
		dst = dst[:len(dst)+1] // both words of the field set below: no zeroed temporary copied in
		dst[len(dst)-1].Name = f.Name
		v := &dst[len(dst)-1].Value
		if n >= 0 {
			*v = p.elems(f.Elem, n, depth)
		} else {
			p.valueTo(v, f, depth)
		}
		if p.bad {
			if p.off = start; v.Kind() == trace.KindBad {
				dst = dst[:len(dst)-1]
			}
			break
		}
	}
	return dst
}

// valueTo sets *v to value(f, depth), the commonest scalars and
// strings in place (see trace.Value.SetInt).
func (p *payloadDec) valueTo(v *trace.Value, f *Field, depth int) {
	switch f.Type {
	case TypeUInt16, TypeUInt32, TypeUInt64, TypeInt32, TypeInt64, TypeHexInt32, TypeHexInt64, TypePointer, TypeUTF16String:
	default:
		*v = p.value(f, depth)
		return
	}
	if p.budget--; p.budget < 0 || depth > MaxDepth {
		p.fail()
		*v = trace.Value{}
		return
	}
	switch f.Type {
	case TypeUInt16:
		v.SetUint(uint64(p.u16()))
	case TypeUInt32:
		v.SetUint(uint64(p.u32()))
	case TypeUInt64:
		v.SetUint(p.u64())
	case TypeInt32:
		v.SetInt(int64(int32(p.u32())))
	case TypeInt64:
		v.SetInt(int64(p.u64()))
	case TypeHexInt32:
		v.SetHex(uint64(p.u32()))
	case TypeHexInt64:
		v.SetHex(p.u64())
	case TypePointer:
		if p.ptr == 4 {
			v.SetHex(uint64(p.u32()))
		} else {
			v.SetHex(p.u64())
		}
	case TypeUTF16String:
		v.SetString(p.utf16zTolerant())
	}
}

func (p *payloadDec) value(f *Field, depth int) trace.Value {
	if p.budget--; p.budget < 0 || depth > MaxDepth {
		p.fail()
		return trace.Value{}
	}
	switch f.Type {
	case TypeObject:
		return trace.StructValue(p.fields(p.list(len(f.Fields)), f.Fields, depth+1))
	case TypeBoolean32:
		return trace.BoolValue(p.u32() != 0)
	case TypeBoolean8:
		return trace.BoolValue(p.u8() != 0)
	case TypeUTF16CodeUnit:
		return trace.StringValue(p.str16(p.bytes(2)))
	case TypeUTF8CodeUnit:
		return trace.StringValue(p.str8(p.bytes(1)))
	case TypeSByte:
		return trace.IntValue(int64(int8(p.u8())))
	case TypeByte:
		return trace.UintValue(uint64(p.u8()))
	case TypeInt16:
		return trace.IntValue(int64(int16(p.u16())))
	case TypeUInt16:
		return trace.UintValue(uint64(p.u16()))
	case TypeInt32:
		return trace.IntValue(int64(int32(p.u32())))
	case TypeUInt32:
		return trace.UintValue(uint64(p.u32()))
	case TypeInt64:
		return trace.IntValue(int64(p.u64()))
	case TypeUInt64:
		return trace.UintValue(p.u64())
	case TypeHexInt32:
		return trace.HexValue(uint64(p.u32()))
	case TypeHexInt64:
		return trace.HexValue(p.u64())
	case TypePointer:
		if p.ptr == 4 {
			return trace.HexValue(uint64(p.u32()))
		}
		return trace.HexValue(p.u64())
	case TypeSingle:
		return trace.FloatValue(float64(math.Float32frombits(p.u32())))
	case TypeDouble:
		return trace.FloatValue(math.Float64frombits(p.u64()))
	case TypeDecimal:
		return trace.BytesValue(p.bytes(16))
	case TypeDateTime:
		return fileTime(p.u64())
	case TypeGUID:
		return trace.GUIDValue(p.guid())
	case TypeUTF16String:
		return trace.StringValue(p.utf16zTolerant())
	case TypeAnsiString:
		b := p.b[p.off:]
		n := len(b)
		for i, c := range b {
			if c == 0 {
				n = i
				break
			}
		}
		p.off += min(n+1, len(b))
		return trace.StringValue(p.str8(b[:n]))
	case TypeVarInt:
		return trace.IntValue(p.varint64())
	case TypeVarUInt:
		return trace.UintValue(p.uvarint64())
	case TypeArray:
		n := int(p.u16())
		if p.bad || f.Elem == nil {
			p.fail()
			return trace.Value{}
		}
		return p.elems(f.Elem, n, depth)
	case TypeFixedArray:
		if f.Elem == nil {
			p.fail()
			return trace.Value{}
		}
		return p.elems(f.Elem, f.Count, depth)
	case TypeRelLoc, TypeDataLoc:
		loc := p.u32()
		if p.bad || f.Elem == nil {
			p.fail()
			return trace.Value{}
		}
		size, off := int(loc>>16), int(loc&0xffff)
		if f.Type == TypeRelLoc {
			off += p.off
		}
		if off+size > len(p.payload) {
			p.fail()
			return trace.Value{}
		}
		data := p.payload[off : off+size]
		switch f.Elem.Type {
		case TypeUTF16CodeUnit, TypeUTF8CodeUnit, TypeByte:
			sub := payloadDec{dec: dec{b: data}, a: p.a}
			return sub.elems(f.Elem, len(data)/max(f.Elem.Type.fixedSize(p.ptr), 1), depth)
		}
		sub := payloadDec{dec: dec{b: data}, ptr: p.ptr, payload: p.payload, budget: p.budget, a: p.a}
		var elems []trace.Field
		for sub.left() > 0 && !sub.bad {
			v := sub.value(f.Elem, depth+1)
			if sub.bad {
				break
			}
			elems = append(p.grow(elems), trace.Field{Value: v})
		}
		p.budget = sub.budget
		return trace.ArrayOf(elems)
	}
	p.fail()
	return trace.Value{}
}

// elems decodes n elements of type e. Arrays of characters become strings.
func (p *payloadDec) elems(e *Field, n int, depth int) trace.Value {
	switch e.Type {
	case TypeUTF16CodeUnit:
		b := p.bytes(2 * n)
		return trace.StringValue(p.str16(b))
	case TypeUTF8CodeUnit:
		b := p.bytes(n)
		return trace.StringValue(p.str8(b))
	case TypeByte:
		return trace.BytesValue(p.bytes(n))
	}
	c := min(n, 256)
	if sz := e.Type.fixedSize(p.ptr); sz > 0 && n*sz > p.left() {
		p.fail()
		return trace.Value{}
	} else if sz > 0 {
		c = n // fits in what is left, so bounded by the payload
	} else {
		// Variable-size elements: grow with what decodes, not with the
		// count claimed, which nested arrays multiply.
		c = min(n, 4)
	}
	elems := p.list(c)
	for range n {
		v := p.value(e, depth+1)
		if p.bad {
			return trace.Value{}
		}
		elems = append(p.grow(elems), trace.Field{Value: v})
	}
	return trace.ArrayOf(elems)
}

// utf16zTolerant reads a NUL-terminated UTF-16 string, or the rest of the
// payload when the terminator is missing.
func (p *payloadDec) utf16zTolerant() string {
	b := p.b[p.off:]
	if p.a != nil {
		s, n := p.a.utf16z(b)
		p.off += n
		return s
	}
	for i := 0; i+1 < len(b); i += 2 {
		if b[i] == 0 && b[i+1] == 0 {
			p.off += i + 2
			return p.str16(b[:i])
		}
	}
	p.off = len(p.b)
	return p.str16(b)
}

// fileTime converts a Windows FILETIME (100 ns units since 1601) to a time
// value, or to a plain integer when it is out of the representable range.
func fileTime(ft uint64) trace.Value {
	const epochDiff = 11644473600 // seconds from 1601 to 1970
	sec := int64(ft/1e7) - epochDiff
	if ft == 0 || ft > math.MaxInt64 || sec > 9e9 || sec < -9e9 {
		return trace.UintValue(ft)
	}
	return trace.TimeValue(time.Unix(sec, int64(ft%1e7)*100))
}

// appendLabel appends the one-line text of an event: its name then
// name=value pairs, capped at MaxLabel bytes (plus an ellipsis). keys,
// when not nil, are the fields' " name=" texts (see labelKeys).
func appendLabel(b []byte, name string, fields []trace.Field, keys []string) []byte {
	start := len(b) // the label's own length is len(b)-start
	b = append(b, name...)
	for i := range fields {
		f := &fields[i] // not a copy: a field is nine words
		if len(b)-start >= MaxLabel {
			break
		}
		if i < len(keys) {
			b = append(b, keys[i]...)
		} else {
			b = append(b, ' ')
			if f.Name != "" {
				b = append(b, f.Name...)
				b = append(b, '=')
			}
		}
		b = appendLabelValue(b, start, &f.Value)
	}
	return endLabel(b, start)
}

// appendLabelValue appends a value's text to a label that starts at
// b[start], a string cut a little past MaxLabel.
func appendLabelValue(b []byte, start int, v *trace.Value) []byte {
	switch v.Kind() {
	case trace.KindInt:
		return strconv.AppendInt(b, v.Int(), 10)
	case trace.KindUint:
		return strconv.AppendUint(b, v.Uint(), 10)
	case trace.KindHex:
		return appendHex(b, v.Uint())
	case trace.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case trace.KindFloat:
		return strconv.AppendFloat(b, v.Float(), 'g', -1, 64)
	case trace.KindString:
		return append(b, truncUTF8(v.Str(), max(MaxLabel-(len(b)-start), 0)+4)...)
	}
	return append(b, truncUTF8(v.String(), max(MaxLabel-(len(b)-start), 0)+4)...)
}

// endLabel cuts a label that starts at b[start] to MaxLabel bytes and an
// ellipsis when it is longer.
func endLabel(b []byte, start int) []byte {
	if len(b)-start > MaxLabel {
		b = append(b[:start+len(truncUTF8(b[start:], MaxLabel))], "…"...)
	}
	return b
}

// labelKeys returns the text a label puts before each field's value of
// a payload decoded by schema fs: " name=", or " " for a field without
// a name (slices of one string).
func labelKeys(fs []Field) []string {
	size := 0
	for _, f := range fs {
		size += keyLen(f.Name)
	}
	var all strings.Builder
	all.Grow(size)
	for _, f := range fs {
		all.WriteByte(' ')
		if f.Name != "" {
			all.WriteString(f.Name)
			all.WriteByte('=')
		}
	}
	text := all.String()
	keys := make([]string, len(fs))
	for i, f := range fs {
		n := keyLen(f.Name)
		keys[i], text = text[:n], text[n:]
	}
	return keys
}

// keyLen is the length of a label key for a field of this name.
func keyLen(name string) int {
	if name == "" {
		return 1
	}
	return len(name) + 2
}

// appendHex appends "0x" and v in lower-case hex, as
// strconv.AppendUint(b, v, 16) writes it, eight digits at a time (see
// hexDigits).
func appendHex(b []byte, v uint64) []byte {
	if cap(b)-len(b) < 18 {
		b = slices.Grow(b, 18)
	}
	k := len(b)
	return b[:k+putHex((*[18]byte)(b[k:k+18]), v)]
}

// putHex writes what appendHex appends to the start of d and returns its
// length; it may write all of d.
func putHex(d *[18]byte, v uint64) int {
	n := max((bits.Len64(v)+3)/4, 1) // digits
	d[0], d[1] = '0', 'x'
	if n > 8 {
		binary.BigEndian.PutUint64(d[2:], hexDigits(uint32(v>>32))<<(8*(16-n)))
		binary.BigEndian.PutUint64(d[n-6:], hexDigits(uint32(v)))
	} else {
		binary.BigEndian.PutUint64(d[2:], hexDigits(uint32(v))<<(8*(8-n)))
	}
	return 2 + n
}

// putDec writes x in decimal, as strconv.AppendUint(nil, x, 10) does,
// to the start of d and returns its length: two digits at a time from
// the end, the number of digits known beforehand (no copy from a
// scratch buffer).
func putDec(d *[20]byte, x uint64) int {
	if x < 10 {
		d[0] = '0' + byte(x)
		return 1
	}
	t := bits.Len64(x) * 1233 >> 12 // log10(x), or one more (1233/4096 ≈ log10(2))
	n := t + 1
	if x < pow10[t] {
		n--
	}
	i := n
	for x >= 100 {
		q := x / 100
		r := x - q*100
		i -= 2
		d[i], d[i+1] = decPairs[2*r], decPairs[2*r+1]
		x = q
	}
	if x >= 10 {
		d[0], d[1] = decPairs[2*x], decPairs[2*x+1]
	} else {
		d[0] = '0' + byte(x)
	}
	return n
}

// decPairs are the two-digit numbers 00 to 99.
const decPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// pow10 are the powers of ten that fit in a uint64.
var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// hexDigits returns the eight hex digits of x, the least significant in
// the low byte: each nibble is spread into a byte by three shifts, then
// 0–9 become '0'–'9' and 10–15 'a'–'f' in every byte at once (adding 6
// carries into bit 4 of the bytes that need 'a'-'0'-10 more).
func hexDigits(x uint32) uint64 {
	y := uint64(x)
	y = (y | y<<16) & 0x0000_ffff_0000_ffff
	y = (y | y<<8) & 0x00ff_00ff_00ff_00ff
	y = (y | y<<4) & 0x0f0f_0f0f_0f0f_0f0f
	letters := (y + 0x0606_0606_0606_0606) >> 4 & 0x0101_0101_0101_0101
	return y + 0x3030_3030_3030_3030 + letters*('a'-'0'-10)
}

func truncUTF8[S string | []byte](s S, n int) S {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// le is the byte order of every NetTrace structure.
var le = binary.LittleEndian
