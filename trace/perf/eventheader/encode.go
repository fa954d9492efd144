package eventheader

import "encoding/binary"

// FieldDef describes a field for [AppendEvent].
type FieldDef struct {
	Name     string
	Encoding uint8 // Enc…; for EncStruct, Format is the member count
	Format   uint8
	Tag      uint16
	Array    uint8 // 0, 0x20 (CArray) or 0x40 (VArray)
	Count    uint16
}

// EventDef is an event for [AppendEvent]: header, name, fields, optional
// activity ids and the already-encoded payload.
type EventDef struct {
	Header    Header // Flags are set by AppendEvent
	Name      string // may carry ";attrib=value" suffixes
	Fields    []FieldDef
	Activity  []byte // 16 bytes, or nil
	Related   []byte // 16 bytes, or nil (needs Activity)
	Payload   []byte
	BigEndian bool
}

// AppendEvent appends an EventHeader event (header, activity and metadata
// extensions, payload) to dst, as a writer following eventheader.h would.
func AppendEvent(dst []byte, e EventDef) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	flags := uint8(FlagPointer64 | FlagExtension)
	if e.BigEndian {
		bo = binary.BigEndian
	} else {
		flags |= FlagLittleEndian
	}
	h := e.Header
	dst = append(dst, flags, h.Version)
	dst = bo.AppendUint16(dst, h.ID)
	dst = bo.AppendUint16(dst, h.Tag)
	dst = append(dst, h.Opcode, h.Level)
	if e.Activity != nil {
		act := append(append([]byte(nil), e.Activity...), e.Related...)
		dst = bo.AppendUint16(dst, uint16(len(act)))
		dst = bo.AppendUint16(dst, ExtActivityID|extChainFlag)
		dst = append(dst, act...)
	}
	meta := AppendMetadata(nil, e.Name, e.Fields, e.BigEndian)
	dst = bo.AppendUint16(dst, uint16(len(meta)))
	dst = bo.AppendUint16(dst, ExtMetadata)
	dst = append(dst, meta...)
	return append(dst, e.Payload...)
}

// AppendMetadata appends the data of a Metadata extension to dst.
func AppendMetadata(dst []byte, name string, fields []FieldDef, bigEndian bool) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	if bigEndian {
		bo = binary.BigEndian
	}
	dst = append(dst, name...)
	dst = append(dst, 0)
	for _, f := range fields {
		dst = append(dst, f.Name...)
		dst = append(dst, 0)
		enc := f.Encoding | f.Array
		if f.Format != 0 || f.Tag != 0 {
			enc |= encChain
		}
		dst = append(dst, enc)
		if enc&encChain != 0 {
			fm := f.Format
			if f.Tag != 0 {
				fm |= fmtChain
			}
			dst = append(dst, fm)
			if f.Tag != 0 {
				dst = bo.AppendUint16(dst, f.Tag)
			}
		}
		if f.Array == encCArray {
			dst = bo.AppendUint16(dst, f.Count)
		}
	}
	return dst
}
