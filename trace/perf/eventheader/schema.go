package eventheader

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"

	"viewer/trace"
)

// Field is one field of an event's metadata.
type Field struct {
	Name     string // the name without ";attribute" suffixes
	Encoding uint8  // low 5 bits
	Format   uint8  // low 7 bits; for a struct, the member count
	Tag      uint16
	Array    uint8  // 0, or the CArray (0x20) or VArray (0x40) flag
	Count    uint16 // element count of a CArray
	End      int    // index of the field after this one and its members
}

// Schema is an event's parsed metadata.
type Schema struct {
	Name    string // event name without attributes
	Attribs string // ";attrib=value…" after the name, as written
	Fields  []Field
	Top     int // number of top-level fields
	big     bool
}

// ParseMetadata parses a Metadata extension. bigEndian is the event's byte
// order (tags and array lengths follow it).
func ParseMetadata(meta []byte, bigEndian bool) (*Schema, error) {
	bo := byteOrder(bigEndian)
	i := bytes.IndexByte(meta, 0)
	if i < 0 {
		return nil, ErrMetadata
	}
	s := &Schema{big: bigEndian}
	s.Name, s.Attribs = splitAttribs(string(meta[:i]))
	p := i + 1
	for p < len(meta) {
		if len(s.Fields) >= MaxItems {
			return nil, ErrLimit
		}
		j := bytes.IndexByte(meta[p:], 0)
		if j < 0 {
			return nil, ErrMetadata
		}
		var f Field
		f.Name, _ = splitAttribs(string(meta[p : p+j]))
		p += j + 1
		if p >= len(meta) {
			return nil, ErrMetadata
		}
		enc := meta[p]
		p++
		f.Encoding = enc & encValueMask
		f.Array = enc & (encCArray | encVArray)
		if f.Array == encCArray|encVArray || f.Encoding == EncInvalid || f.Encoding >= encMax {
			return nil, ErrMetadata
		}
		if enc&encChain != 0 {
			if p >= len(meta) {
				return nil, ErrMetadata
			}
			fm := meta[p]
			p++
			f.Format = fm & fmtMask
			if fm&fmtChain != 0 {
				if len(meta)-p < 2 {
					return nil, ErrMetadata
				}
				f.Tag = bo.Uint16(meta[p:])
				p += 2
			}
		}
		if f.Array == encCArray {
			if len(meta)-p < 2 {
				return nil, ErrMetadata
			}
			f.Count = bo.Uint16(meta[p:])
			p += 2
			if f.Count == 0 {
				return nil, ErrMetadata
			}
		}
		if f.Encoding == EncStruct && f.Format == 0 {
			return nil, ErrMetadata
		}
		s.Fields = append(s.Fields, f)
	}
	// Compute each field's subtree end; check depth and top-level count.
	top := 0
	for i := 0; i < len(s.Fields); top++ {
		if top >= MaxTopFields {
			return nil, ErrLimit
		}
		end, err := s.setEnd(i, 0)
		if err != nil {
			return nil, err
		}
		i = end
	}
	s.Top = top
	return s, nil
}

func (s *Schema) setEnd(i, depth int) (int, error) {
	f := &s.Fields[i]
	j := i + 1
	if f.Encoding == EncStruct {
		if depth >= MaxDepth {
			return 0, ErrLimit
		}
		for n := 0; n < int(f.Format) && j < len(s.Fields); n++ {
			var err error
			if j, err = s.setEnd(j, depth+1); err != nil {
				return 0, err
			}
		}
	}
	f.End = j
	return j, nil
}

// splitAttribs splits "name;attr=value" at the first ';' that is not
// part of an escaped ";;".
func splitAttribs(s string) (name, attribs string) {
	for i := 0; i < len(s); i++ {
		if s[i] == ';' {
			if i+1 < len(s) && s[i+1] == ';' {
				i++
				continue
			}
			return strings.ReplaceAll(s[:i], ";;", ";"), s[i:]
		}
	}
	return strings.ReplaceAll(s, ";;", ";"), ""
}

// Specs returns the schema as trace field specs.
func (s *Schema) Specs() []trace.FieldSpec {
	var specs []trace.FieldSpec
	for i := 0; i < len(s.Fields); {
		var spec trace.FieldSpec
		spec, i = s.spec(i)
		specs = append(specs, spec)
	}
	return specs
}

func (s *Schema) spec(i int) (trace.FieldSpec, int) {
	f := &s.Fields[i]
	spec := trace.FieldSpec{Name: f.Name, Type: EncodingName(f.Encoding)}
	if f.Encoding == EncStruct {
		for j := i + 1; j < f.End; {
			var m trace.FieldSpec
			m, j = s.spec(j)
			spec.Fields = append(spec.Fields, m)
		}
	}
	if f.Array != 0 {
		spec = trace.FieldSpec{Name: f.Name, Type: "array", Fields: []trace.FieldSpec{spec}}
		spec.Fields[0].Name = ""
	}
	return spec, f.End
}

// decoder walks a payload.
type decoder struct {
	s     *Schema
	b     []byte
	p     int
	bo    binary.ByteOrder
	items int
	lists *Lists // where struct members and array elements go; nil: the heap
}

// Lists hands out the member and element lists of decoded structs and
// arrays from shared chunks, so that decoding many events costs an
// allocation per chunk rather than per list. A chunk is only appended
// to: a list handed out is never written again and may be kept. The zero
// Lists is ready; it is not safe for concurrent use.
type Lists struct{ f []trace.Field }

// listsChunk is the fields per chunk; longer lists get their own.
const listsChunk = 1024

// list returns n zero fields (n > 0).
func (l *Lists) list(n int) []trace.Field {
	if l == nil || n > listsChunk/4 {
		return make([]trace.Field, n)
	}
	if cap(l.f)-len(l.f) < n {
		l.f = make([]trace.Field, 0, listsChunk)
	}
	k := len(l.f)
	l.f = l.f[:k+n]
	return l.f[k : k+n : k+n]
}

// Decode appends the fields of payload to dst. Trailing payload bytes are
// ignored (raw samples are padded). On damage it returns the fields decoded
// so far and an error.
func (s *Schema) Decode(payload []byte, bigEndian bool, dst []trace.Field) ([]trace.Field, error) {
	return s.AppendDecoded(payload, bigEndian, dst, nil)
}

// AppendDecoded is Decode taking the lists of structs and arrays from
// lists (from the heap when it is nil).
func (s *Schema) AppendDecoded(payload []byte, bigEndian bool, dst []trace.Field, lists *Lists) ([]trace.Field, error) {
	d := decoder{s: s, b: payload, bo: byteOrder(bigEndian), lists: lists}
	for i := 0; i < len(s.Fields); {
		f := &s.Fields[i]
		// Each value is decoded into its place: a returned trace.Value is
		// copied through a temporary at every level (see
		// trace.Value.SetInt).
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, max(s.Top, 1))
		}
		dst = dst[:len(dst)+1]
		last := &dst[len(dst)-1]
		last.Name = f.Name
		if err := d.field(&last.Value, i); err != nil {
			return dst[:len(dst)-1], err
		}
		i = f.End
	}
	return dst, nil
}

// field decodes field i (with its array and members) into *v.
func (d *decoder) field(v *trace.Value, i int) error {
	f := &d.s.Fields[i]
	if f.Array == 0 {
		return d.element(v, i)
	}
	n := int(f.Count)
	if f.Array == encVArray {
		if len(d.b)-d.p < 2 {
			return ErrPayload
		}
		n = int(d.bo.Uint16(d.b[d.p:]))
		d.p += 2
	}
	if size := fixedSize(f.Encoding); size > 0 && n*size > len(d.b)-d.p {
		return ErrPayload
	}
	if d.items += n; d.items > MaxItems {
		return ErrLimit
	}
	if n == 0 {
		*v = trace.ArrayOf([]trace.Field{})
		return nil
	}
	elems := d.lists.list(n) // kept by the value: one list, not ArrayValue's two
	for k := range elems {
		if err := d.element(&elems[k].Value, i); err != nil {
			return err
		}
	}
	*v = trace.ArrayOf(elems)
	return nil
}

// element decodes one element of field i (a struct with its members, or
// one value) into *v.
func (d *decoder) element(v *trace.Value, i int) error {
	f := &d.s.Fields[i]
	if d.items++; d.items > MaxItems {
		return ErrLimit
	}
	if f.Encoding == EncStruct {
		n := 0 // the members: Format says how many, End where they end
		for j := i + 1; j < f.End; j = d.s.Fields[j].End {
			n++
		}
		if n == 0 {
			*v = trace.StructValue([]trace.Field{})
			return nil
		}
		members := d.lists.list(n)
		for j, k := i+1, 0; j < f.End; k++ {
			m := &d.s.Fields[j]
			members[k].Name = m.Name
			if err := d.field(&members[k].Value, j); err != nil {
				return err
			}
			j = m.End
		}
		*v = trace.StructValue(members)
		return nil
	}
	b, err := d.bytes(f.Encoding)
	if err != nil {
		return err
	}
	switch f.Encoding {
	case EncValue8, EncValue16, EncValue32, EncValue64:
		switch f.Format {
		case FmtDefault, FmtUnsignedInt, FmtSignedInt, FmtHexInt: // the commonest, set in place
			setInt(v, f.Encoding, f.Format, b, d.bo)
			return nil
		}
	}
	*v = Render(f.Encoding, f.Format, b, d.bo == binary.BigEndian)
	return nil
}

// setInt sets *v to what Render returns for an integer encoding in the
// default, unsigned, signed or hex format.
func setInt(v *trace.Value, enc, format uint8, b []byte, bo binary.ByteOrder) {
	u, s := intBits(enc, b, bo)
	switch format {
	case FmtSignedInt:
		v.SetInt(s)
	case FmtHexInt:
		v.SetHex(u)
	default:
		v.SetUint(u)
	}
}

func fixedSize(enc uint8) int {
	switch enc {
	case EncValue8:
		return 1
	case EncValue16:
		return 2
	case EncValue32:
		return 4
	case EncValue64:
		return 8
	case EncValue128:
		return 16
	}
	return 0
}

// bytes consumes the bytes of one value of an encoding.
func (d *decoder) bytes(enc uint8) ([]byte, error) {
	rest := d.b[d.p:]
	n := fixedSize(enc)
	switch enc {
	case EncZStringChar8, EncZStringChar16, EncZStringChar32:
		w := 1 << (enc - EncZStringChar8)
		end := -1
		for k := 0; k+w <= len(rest); k += w {
			zero := true
			for _, c := range rest[k : k+w] {
				if c != 0 {
					zero = false
					break
				}
			}
			if zero {
				end = k
				break
			}
		}
		if end < 0 {
			return nil, ErrPayload
		}
		d.p += end + w
		return rest[:end], nil
	case EncStringLen16Ch8, EncStringLen16Ch16, EncStringLen16Ch32, EncBinaryLen16Ch8:
		if len(rest) < 2 {
			return nil, ErrPayload
		}
		w := 1
		switch enc {
		case EncStringLen16Ch16:
			w = 2
		case EncStringLen16Ch32:
			w = 4
		}
		n = int(d.bo.Uint16(rest)) * w
		if len(rest)-2 < n {
			return nil, ErrPayload
		}
		d.p += 2 + n
		return rest[2 : 2+n], nil
	}
	if len(rest) < n {
		return nil, ErrPayload
	}
	d.p += n
	return rest[:n], nil
}
