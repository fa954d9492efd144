// Package tracefs parses the tracefs event descriptions that perf.data
// files carry: the "format" file of each tracepoint and the TRACING_DATA
// blob that bundles them, and decodes a tracepoint's raw sample bytes into
// fields.
//
// # Design
//
// A format file lists fields as C declarations with offset, size and
// signedness. [ParseFormat] turns each declaration into a [Field] that says
// how to find its bytes (fixed, fixed array, __data_loc, __rel_loc) and how
// to show them (signed, unsigned, hex, string, bytes). Rules follow
// perf's own field printing (libtraceevent): `char` arrays are text,
// pointers and unsigned types named `long` are hex, `long` takes the
// recording's word size, unknown typedefs (pid_t, gfp_t, enums) are
// integers sized by `size:` and signed as `signed:` says, and `signed:`
// overrides the signedness of integer types. The `print fmt` line is
// compiled into a [PrintFmt] that renders a sample as `perf script` does
// (printfmt.go). ../NOTES.md §tracefs and §print-fmt record the quirks of
// real format files and TRACING_DATA blobs.
//
// # Security
//
// Format text and raw sample bytes come from untrusted files: every offset
// and length is checked against the bytes present, and decoding a damaged
// sample yields null values rather than an error or a panic.
package tracefs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"

	"viewer/trace"
)

// Display says how a field's elements are shown.
type Display uint8

const (
	DisplayBad      Display = iota
	DisplaySigned           // signed decimal integer
	DisplayUnsigned         // unsigned decimal integer
	DisplayHex              // hex integer (pointers, unsigned long, unknown typedefs)
	DisplayString           // NUL-terminated text (char, char[N], __data_loc char[])
	DisplayBytes            // opaque bytes (structs)
	DisplayBool             // bool: false, true, other values as numbers
)

var displayNames = [...]string{"bad", "signed", "unsigned", "hex", "string", "bytes", "bool"}

func (d Display) String() string {
	if int(d) < len(displayNames) {
		return displayNames[d]
	}
	return "Display(" + strconv.Itoa(int(d)) + ")"
}

// Array says where a field's bytes are.
type Array uint8

const (
	ArrayNone    Array = iota // a scalar at Offset
	ArrayFixed                // Count elements at Offset
	ArrayDataLoc              // __data_loc: a u32 (len<<16 | off) at Offset, off from the start of the raw data
	ArrayRelLoc               // __rel_loc: as ArrayDataLoc, off from the end of the field
)

var arrayNames = [...]string{"none", "fixed", "data_loc", "rel_loc"}

func (a Array) String() string {
	if int(a) < len(arrayNames) {
		return arrayNames[a]
	}
	return "Array(" + strconv.Itoa(int(a)) + ")"
}

// Field is one field of a format file.
type Field struct {
	Name     string
	Decl     string // the declaration as written, e.g. "__data_loc char[] filename"
	Offset   int
	Size     int // bytes at Offset; 0 means "the rest of the event"
	Signed   int8
	Display  Display
	Array    Array
	Count    int // element count of a fixed array (0 when unknown)
	ElemSize int // 1, 2, 4 or 8
}

// Event is a parsed format file.
type Event struct {
	System   string
	Name     string
	ID       uint32
	Fields   []Field
	Common   int       // how many leading fields are common_* fields
	PrintFmt string    // the print fmt expression as written
	Print    *PrintFmt // PrintFmt compiled: what perf script prints (printfmt.go)
	// EventHeader reports that the first user field is eventheader_flags:
	// the event is an EventHeader user_event whose header starts at that
	// field's offset.
	EventHeader bool
}

// Limits on format text, far above anything the kernel writes.
const (
	MaxFormatSize = 1 << 20
	MaxFields     = 4096
)

// ErrFormat is returned for text that is not a format file.
var ErrFormat = errors.New("tracefs: not a format file")

// ParseFormat parses the text of a tracefs format file. longSize is the
// recording's word size (4 or 8) for `long` and pointers.
func ParseFormat(system, text string, longSize int) (*Event, error) {
	if len(text) > MaxFormatSize {
		return nil, errors.New("tracefs: format file of " + strconv.Itoa(len(text)) + " bytes exceeds the limit")
	}
	if longSize != 4 {
		longSize = 8
	}
	e := &Event{System: system}
	foundID, inFormat, common := false, false, true
	off := 0 // of the line in text
	for line := range strings.Lines(text) {
		lineOff := off
		off += len(line)
		line = strings.TrimRight(line, "\r\n")
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed == "" {
			if inFormat && len(e.Fields) > 0 {
				common = false
			}
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, "name:"):
			e.Name = strings.TrimSpace(trimmed[len("name:"):])
		case strings.HasPrefix(trimmed, "ID:"):
			v, err := strconv.ParseUint(strings.TrimSpace(trimmed[len("ID:"):]), 10, 32)
			if err == nil {
				e.ID, foundID = uint32(v), true
			}
		case strings.HasPrefix(trimmed, "format:"):
			inFormat = true
		case strings.HasPrefix(trimmed, "print fmt:"):
			// The format runs to the end of the file: its strings may
			// hold newlines.
			at := lineOff + strings.Index(text[lineOff:], "print fmt:") + len("print fmt:")
			e.PrintFmt = strings.TrimSpace(text[at:])
			inFormat = false
		case inFormat && (strings.HasPrefix(trimmed, "field:") || strings.HasPrefix(trimmed, "field special:")):
			f, ok := parseField(trimmed, longSize)
			if !ok {
				continue
			}
			if len(e.Fields) >= MaxFields {
				return nil, errors.New("tracefs: more than " + strconv.Itoa(MaxFields) + " fields")
			}
			if common && !strings.HasPrefix(f.Name, "common_") {
				common = false
			}
			if common {
				e.Common++
			}
			e.Fields = append(e.Fields, f)
		}
	}
	if e.Name == "" || !foundID {
		return nil, ErrFormat
	}
	if e.Common < len(e.Fields) && e.Fields[e.Common].Name == "eventheader_flags" {
		e.EventHeader = true
	}
	e.Print = compilePrintFmt(e, longSize)
	return e, nil
}

// parseField parses "field:DECL;\toffset:N;\tsize:N;\tsigned:N;".
func parseField(line string, longSize int) (Field, bool) {
	var f Field
	f.Signed = -1
	foundOff, foundSize := false, false
	for part := range strings.SplitSeq(line, ";") {
		part = strings.TrimLeft(part, " \t")
		name, value, ok := strings.Cut(part, ":")
		if !ok {
			continue
		}
		value = strings.TrimLeft(value, " \t")
		switch name {
		case "field", "field special":
			f.Decl = value
		case "offset":
			v, err := strconv.ParseUint(value, 0, 16)
			f.Offset, foundOff = int(v), err == nil
		case "size":
			v, err := strconv.ParseUint(value, 0, 16)
			f.Size, foundSize = int(v), err == nil
		case "signed":
			if v, err := strconv.ParseUint(value, 0, 16); err == nil {
				f.Signed = 0
				if v != 0 {
					f.Signed = 1
				}
			}
		}
	}
	if f.Decl == "" || !foundOff || !foundSize {
		return f, false
	}
	f.deduce(longSize)
	return f, true
}

// typeSizes maps fixed-width kernel and C99 integer type names to their
// display and element size.
var typeSizes = map[string]struct {
	d    Display
	size int
}{
	"u8": {DisplayUnsigned, 1}, "__u8": {DisplayUnsigned, 1}, "uint8_t": {DisplayUnsigned, 1},
	"s8": {DisplaySigned, 1}, "__s8": {DisplaySigned, 1}, "int8_t": {DisplaySigned, 1},
	"u16": {DisplayUnsigned, 2}, "__u16": {DisplayUnsigned, 2}, "uint16_t": {DisplayUnsigned, 2},
	"s16": {DisplaySigned, 2}, "__s16": {DisplaySigned, 2}, "int16_t": {DisplaySigned, 2},
	"u32": {DisplayUnsigned, 4}, "__u32": {DisplayUnsigned, 4}, "uint32_t": {DisplayUnsigned, 4},
	"s32": {DisplaySigned, 4}, "__s32": {DisplaySigned, 4}, "int32_t": {DisplaySigned, 4},
	"u64": {DisplayUnsigned, 8}, "__u64": {DisplayUnsigned, 8}, "uint64_t": {DisplayUnsigned, 8},
	"s64": {DisplaySigned, 8}, "__s64": {DisplaySigned, 8}, "int64_t": {DisplaySigned, 8},
}

// deduce fills Name, Display, Array, Count and ElemSize from Decl, Size
// and Signed.
func (f *Field) deduce(longSize int) {
	var longs int
	var short, unsigned, signed, isStruct, dataLoc, relLoc, array, pointer bool
	var name, base string
	s := f.Decl
tokens:
	for {
		tok, kind, rest := nextToken(s)
		s = rest
		switch kind {
		case tokNone:
			break tokens
		case tokIdent:
			switch tok {
			case "long":
				longs++
			case "short":
				short = true
			case "unsigned":
				unsigned = true
			case "signed":
				signed = true
			case "struct":
				isStruct = true
			case "__data_loc":
				dataLoc = true
			case "__rel_loc":
				relLoc = true
			case "__attribute__", "const", "volatile":
			default:
				base, name = name, tok
			}
		case tokBrackets:
			array = true
			if n, err := strconv.ParseUint(strings.TrimSpace(tok[1:len(tok)-1]), 0, 16); err == nil {
				f.Count = int(n)
			}
			if t, k, _ := nextToken(s); k == tokIdent {
				base, name = name, t
			}
			break tokens
		case tokPunct:
			if tok == "*" {
				pointer = true
			}
		}
	}
	if name == "" {
		name = "noname"
	}
	f.Name = name
	fixup, typedef := false, false
	switch {
	case pointer:
		f.Display, f.ElemSize = DisplayHex, longSize
	case isStruct:
		f.Display, f.ElemSize = DisplayBytes, 1
	case base == "" || base == "int":
		f.Display = DisplaySigned
		if unsigned {
			f.Display = DisplayUnsigned
		}
		switch {
		case longs >= 1:
			f.ElemSize = longSize
			if longs >= 2 {
				f.ElemSize = 8
			}
			if unsigned { // as perf prints unsigned longs: addresses
				f.Display = DisplayHex
			}
		case short:
			f.ElemSize = 2
		default:
			f.ElemSize = 4
		}
	case base == "bool" || base == "_Bool":
		f.Display, f.ElemSize = DisplayBool, 1
	case base == "char":
		f.Display, f.ElemSize = DisplayString, 1
		switch {
		case unsigned:
			f.Display = DisplayUnsigned
		case signed || !array && !dataLoc && !relLoc: // a char scalar is a number
			f.Display = DisplaySigned
		}
	default:
		if t, ok := typeSizes[base]; ok {
			f.Display, f.ElemSize = t.d, t.size
		} else {
			// pid_t, gfp_t, enums: an integer of `size:` bytes, signed as
			// `signed:` says (hex when a format has no `signed:`).
			f.Display, fixup, typedef = DisplayHex, true, true
		}
	}
	if typedef {
		switch f.Signed {
		case 0:
			f.Display = DisplayUnsigned
		case 1:
			f.Display = DisplaySigned
		}
	}
	if f.Display == DisplaySigned || f.Display == DisplayUnsigned {
		switch f.Signed {
		case 0:
			f.Display = DisplayUnsigned
		case 1:
			f.Display = DisplaySigned
		}
	}
	switch {
	case relLoc:
		f.Array, f.Count = ArrayRelLoc, 0
	case dataLoc:
		f.Array, f.Count = ArrayDataLoc, 0
	case array:
		f.Array = ArrayFixed
		if fixup && f.Count != 0 && f.Size%f.Count == 0 {
			if es := f.Size / f.Count; es == 1 || es == 2 || es == 4 || es == 8 {
				f.ElemSize, fixup = es, false
			}
		}
	default:
		f.Array, f.Count = ArrayNone, 0
		if f.Size == 1 || f.Size == 2 || f.Size == 4 || f.Size == 8 {
			f.ElemSize, fixup = f.Size, false
		}
	}
	if fixup { // a typedef of no integer size: its bytes
		f.Display, f.ElemSize = DisplayBytes, 1
	}
}

type tokKind uint8

const (
	tokNone tokKind = iota
	tokIdent
	tokBrackets
	tokParens
	tokString
	tokPunct
)

// nextToken splits one C token off s: an identifier, a bracketed or
// parenthesized group (nesting allowed), a quoted string or one character.
func nextToken(s string) (tok string, kind tokKind, rest string) {
	i := 0
	for i < len(s) && s[i] <= ' ' {
		i++
	}
	s = s[i:]
	if s == "" {
		return "", tokNone, ""
	}
	isIdent := func(c byte, first bool) bool {
		l := c | 0x20
		return 'a' <= l && l <= 'z' || c == '_' || !first && '0' <= c && c <= '9'
	}
	c := s[0]
	switch {
	case isIdent(c, true):
		j := 1
		for j < len(s) && isIdent(s[j], false) {
			j++
		}
		return s[:j], tokIdent, s[j:]
	case c == '"' || c == '\'':
		j := 1
		for j < len(s) {
			if s[j] == '\\' {
				j += 2
				continue
			}
			j++
			if s[j-1] == c {
				break
			}
		}
		j = min(j, len(s))
		return s[:j], tokString, s[j:]
	case c == '(' || c == '[':
		closing := byte(')')
		kind := tokParens
		if c == '[' {
			closing, kind = ']', tokBrackets
		}
		depth, j := 1, 1
		for j < len(s) && depth > 0 {
			switch s[j] {
			case c:
				depth++
			case closing:
				depth--
			}
			j++
		}
		if depth > 0 && kind == tokBrackets { // unterminated: give "[" + rest + "]" shape
			return s[:j] + "]", kind, ""
		}
		return s[:j], kind, s[j:]
	}
	return s[:1], tokPunct, s[1:]
}

// Bytes returns the bytes of f in the raw data of a sample, or nil when
// they are not all present.
func (f *Field) Bytes(raw []byte, bo binary.ByteOrder) []byte {
	end := f.Offset + f.Size
	if end > len(raw) {
		return nil
	}
	if f.Size == 0 {
		return raw[f.Offset:]
	}
	switch f.Array {
	case ArrayDataLoc, ArrayRelLoc:
		base := 0
		if f.Array == ArrayRelLoc {
			base = end
		}
		switch f.Size {
		case 4:
			v := bo.Uint32(raw[f.Offset:])
			off, n := base+int(v&0xFFFF), int(v>>16)
			if off+n > len(raw) {
				return nil
			}
			return raw[off : off+n]
		case 2:
			off := base + int(bo.Uint16(raw[f.Offset:]))
			if off >= len(raw) {
				return nil
			}
			n := bytes.IndexByte(raw[off:], 0)
			if n < 0 {
				return nil
			}
			return raw[off : off+n]
		}
		return nil
	}
	return raw[f.Offset:end]
}

// Value decodes f from the raw data of a sample. Missing bytes decode to
// the null Value (KindBad).
func (f *Field) Value(raw []byte, bo binary.ByteOrder) trace.Value {
	b := f.Bytes(raw, bo)
	if b == nil && !(f.Array == ArrayDataLoc || f.Array == ArrayRelLoc) {
		return trace.Value{}
	}
	switch f.Display {
	case DisplayString:
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		return trace.StringValue(string(b))
	case DisplayBytes, DisplayBad:
		if f.Array == ArrayNone || f.ElemSize == 1 {
			return trace.BytesValue(b)
		}
	}
	if f.Array == ArrayNone {
		if len(b) < f.ElemSize {
			return trace.Value{}
		}
		return f.element(b, bo)
	}
	n := len(b) / f.ElemSize
	elems := make([]trace.Value, n)
	for i := range elems {
		elems[i] = f.element(b[i*f.ElemSize:], bo)
	}
	return trace.ArrayValue(elems)
}

func (f *Field) element(b []byte, bo binary.ByteOrder) trace.Value {
	var u uint64
	var s int64
	switch f.ElemSize {
	case 1:
		u, s = uint64(b[0]), int64(int8(b[0]))
	case 2:
		v := bo.Uint16(b)
		u, s = uint64(v), int64(int16(v))
	case 4:
		v := bo.Uint32(b)
		u, s = uint64(v), int64(int32(v))
	default:
		u = bo.Uint64(b)
		s = int64(u)
	}
	switch f.Display {
	case DisplaySigned:
		return trace.IntValue(s)
	case DisplayUnsigned:
		return trace.UintValue(u)
	case DisplayBool:
		if u <= 1 {
			return trace.BoolValue(u == 1)
		}
		return trace.UintValue(u)
	}
	return trace.HexValue(u)
}

// TypeName returns a short type name for f's elements, for schemas.
func (f *Field) TypeName() string {
	var t string
	switch f.Display {
	case DisplaySigned:
		t = "int" + strconv.Itoa(8*f.ElemSize)
	case DisplayUnsigned:
		t = "uint" + strconv.Itoa(8*f.ElemSize)
	case DisplayHex:
		t = "hex" + strconv.Itoa(8*f.ElemSize)
	case DisplayString:
		return "string"
	case DisplayBool:
		t = "bool"
	default:
		return "bytes"
	}
	if f.Array != ArrayNone {
		t += "[]"
	}
	return t
}

// Decode appends the event's fields after the common ones, decoded from a
// sample's raw data, to dst.
func (e *Event) Decode(raw []byte, bo binary.ByteOrder, dst []trace.Field) []trace.Field {
	for i := e.Common; i < len(e.Fields); i++ {
		f := &e.Fields[i]
		dst = append(dst, trace.Field{Name: f.Name, Value: f.Value(raw, bo)})
	}
	return dst
}

// Specs returns the schema of the event's user fields.
func (e *Event) Specs() []trace.FieldSpec {
	specs := make([]trace.FieldSpec, 0, len(e.Fields)-e.Common)
	for _, f := range e.Fields[e.Common:] {
		specs = append(specs, trace.FieldSpec{Name: f.Name, Type: f.TypeName()})
	}
	return specs
}
