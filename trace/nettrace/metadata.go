package nettrace

import (
	"viewer/trace"
)

// MaxFields caps the fields of one metadata field list.
const MaxFields = 1 << 12

// metadata is one decoded metadata definition.
type metadata struct {
	id     uint32
	typ    trace.EventType
	fields []Field
	// tagged says the record carries v5 metadata tags.
	tagged bool
	// opcodeSet says the metadata gives the opcode explicitly.
	opcodeSet bool
}

// parseMetadataV5 decodes the payload of a MetadataId-0 record (netperf
// v3, nettrace v4/v5): NOTES.md §metadata. It returns ok=false when the
// record is too short for its fixed part.
func parseMetadataV5(b []byte) (m metadata, ok bool) {
	d := dec{b: b}
	m.id = d.u32()
	m.typ.Provider = d.utf16z()
	m.typ.ID = int64(int32(d.u32()))
	m.typ.Name = d.utf16z()
	m.typ.Keywords = d.u64()
	m.typ.Version = int(int32(d.u32()))
	m.typ.Level = int(int32(d.u32()))
	if d.bad {
		return m, false
	}
	if d.left() == 0 {
		return m, true
	}
	// V1 field list. TraceEvent drops a list it cannot parse and keeps
	// the event; so do we.
	fields, fok := v1Fields(&d, 0)
	if fok && !d.bad {
		m.fields = fields
	} else {
		return m, true
	}
	// v5 tags until the end of the record.
	for d.left() >= 5 {
		n := int(int32(d.u32()))
		kind := d.u8()
		if n < 0 || n > d.left() {
			break
		}
		tag := dec{b: d.bytes(n)}
		m.tagged = true
		switch kind {
		case 1: // OpCode
			m.typ.Opcode = int(tag.u8())
			m.opcodeSet = true
		case 2: // V2Params
			if fs, ok := v2Fields(&tag, 0); ok && !tag.bad {
				m.fields = fs
			}
		}
	}
	return m, true
}

func v1Fields(d *dec, depth int) ([]Field, bool) {
	n := int(int32(d.u32()))
	if d.bad || n < 0 || n > MaxFields || n*6 > d.left() || depth > MaxDepth {
		return nil, false
	}
	fs := make([]Field, 0, n)
	for range n {
		var f Field
		f.Type = TypeCode(d.u32())
		if f.Type == TypeObject {
			sub, ok := v1Fields(d, depth+1)
			if !ok {
				return nil, false
			}
			f.Fields = sub
		}
		f.Name = d.utf16z()
		if d.bad || !validType(f.Type) {
			return nil, false
		}
		fs = append(fs, f)
	}
	return fs, true
}

func v2Fields(d *dec, depth int) ([]Field, bool) {
	n := int(int32(d.u32()))
	if d.bad || n < 0 || n > MaxFields || n*10 > d.left() || depth > MaxDepth {
		return nil, false
	}
	fs := make([]Field, 0, n)
	for range n {
		start := d.off
		size := int(int32(d.u32()))
		if size < 4 || size > d.left()+4 {
			return nil, false
		}
		fd := dec{b: d.b[:start+size], off: d.off}
		var f Field
		f.Name = fd.utf16z()
		f.Type = TypeCode(fd.u32())
		t := &f
		if f.Type == TypeArray {
			f.Elem = &Field{Type: TypeCode(fd.u32())}
			t = f.Elem
		}
		if t.Type == TypeObject {
			sub, ok := v2Fields(&fd, depth+1)
			if !ok {
				return nil, false
			}
			t.Fields = sub
		}
		if fd.bad || !validType(f.Type) || (f.Elem != nil && !validType(f.Elem.Type)) {
			return nil, false
		}
		d.off = start + size
		fs = append(fs, f)
	}
	return fs, true
}

func validType(t TypeCode) bool {
	return t >= TypeObject && t <= TypeBoolean8 && t != 2
}

// parseMetadataV6 decodes one v6 metadata row (without its uint16 size):
// NOTES.md §metadata-v6.
func parseMetadataV6(d *dec) (m metadata, ok bool) {
	m.id = d.uvarint32()
	m.typ.Provider = d.str()
	m.typ.ID = int64(d.uvarint32())
	m.typ.Name = d.str()
	fs, fok := v6Fields(d, 0)
	if !fok || d.bad {
		return m, false
	}
	m.fields = fs
	if d.left() == 0 {
		return m, true
	}
	n := int(d.u16())
	if d.bad || n > d.left() {
		return m, false
	}
	o := dec{b: d.bytes(n)}
	for o.left() > 0 && !o.bad {
		switch kind := o.u8(); kind {
		case 1:
			m.typ.Opcode = int(o.u8())
			m.opcodeSet = true
		case 3:
			m.typ.Keywords = o.u64()
		case 4:
			m.typ.Message = o.str()
		case 5:
			o.str() // description
		case 6:
			o.str()
			o.str()
		case 7:
			o.skip(16) // provider GUID
		case 8:
			m.typ.Level = int(o.u8())
		case 9:
			m.typ.Version = int(o.u8())
		default:
			return m, false
		}
	}
	return m, !o.bad
}

func v6Fields(d *dec, depth int) ([]Field, bool) {
	n := int(d.u16())
	if d.bad || n > MaxFields || n*3 > d.left() || depth > MaxDepth {
		return nil, false
	}
	fs := make([]Field, 0, n)
	for range n {
		size := int(d.u16())
		if d.bad || size > d.left() {
			return nil, false
		}
		fd := dec{b: d.bytes(size)}
		var f Field
		f.Name = fd.str()
		if !v6Type(&fd, &f, depth) || fd.bad {
			return nil, false
		}
		fs = append(fs, f)
	}
	return fs, true
}

func v6Type(d *dec, f *Field, depth int) bool {
	if depth > MaxDepth {
		return false
	}
	f.Type = TypeCode(d.u8())
	if !validType(f.Type) {
		return false
	}
	switch f.Type {
	case TypeArray, TypeFixedArray, TypeRelLoc, TypeDataLoc:
		f.Elem = &Field{}
		if !v6Type(d, f.Elem, depth+1) {
			return false
		}
		if f.Type == TypeFixedArray {
			f.Count = int(d.u16())
		}
	case TypeObject:
		sub, ok := v6Fields(d, depth+1)
		if !ok {
			return false
		}
		f.Fields = sub
	}
	return !d.bad
}
