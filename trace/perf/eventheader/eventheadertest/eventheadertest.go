// Package eventheadertest encodes EventHeader events (the self-describing
// user_events convention of microsoft/LinuxTracepoints, eventheader.h) for
// tests, benchmarks and fuzz seeds of the readers.
//
// The encoder writes events from the eventheader.h layout on its own: it
// does not import package eventheader, so the tests of eventheader and of
// the perf reader can use it, and a round trip checks the decoder against
// an independent writer rather than against its own constants.
//
// An event is the 8-byte header (flags, version, id, tag, opcode, level;
// id and tag in the event's byte order), extension blocks (u16 size, u16
// kind, data; kind bit 15 says another block follows) and the payload.
// The Metadata extension is the event name (NUL-terminated, ";attr=value"
// suffixes allowed) and, per field, its NUL-terminated name, an encoding
// byte (bit 7: a format byte follows; bits 5–6: CArray, VArray), the
// format byte (bit 7: a u16 tag follows), the tag and, for a CArray, its
// u16 element count.
package eventheadertest

import "encoding/binary"

// Header flags (eventheader_flags).
const (
	flagPointer64    = 0x01
	flagLittleEndian = 0x02
	flagExtension    = 0x04
)

// Extension kinds.
const (
	extMetadata   = 1
	extActivityID = 2
	extChain      = 0x8000 // another extension follows
)

// Encodings (low 5 bits of a field's encoding byte, event_field_encoding).
const (
	EncStruct          = 1 // Format holds the member count
	EncValue8          = 2
	EncValue16         = 3
	EncValue32         = 4
	EncValue64         = 5
	EncValue128        = 6
	EncZStringChar8    = 7
	EncZStringChar16   = 8
	EncZStringChar32   = 9
	EncStringLen16Ch8  = 10
	EncStringLen16Ch16 = 11
	EncStringLen16Ch32 = 12
	EncBinaryLen16Ch8  = 13
)

// Array flags of a field's encoding byte, for FieldDef.Array.
const (
	CArray = 0x20 // a constant count of elements, FieldDef.Count
	VArray = 0x40 // a u16 count before the elements in the payload
)

const (
	encChain = 0x80 // a format byte follows the encoding byte
	fmtChain = 0x80 // a tag follows the format byte
)

// Formats (low 7 bits of a field's format byte, event_field_format).
const (
	FmtDefault           = 0
	FmtUnsignedInt       = 1
	FmtSignedInt         = 2
	FmtHexInt            = 3
	FmtErrno             = 4
	FmtPid               = 5
	FmtTime              = 6
	FmtBoolean           = 7
	FmtFloat             = 8
	FmtHexBytes          = 9
	FmtString8           = 10
	FmtStringUTF         = 11
	FmtStringUTFBOM      = 12
	FmtStringXML         = 13
	FmtStringJSON        = 14
	FmtUUID              = 15
	FmtPort              = 16
	FmtIPAddress         = 17
	FmtIPAddressObsolete = 18
)

// Header is the part of the 8-byte event header a writer chooses (the
// flags follow from the byte order and the extensions).
type Header struct {
	Version uint8
	ID      uint16
	Tag     uint16
	Opcode  uint8
	Level   uint8
}

// FieldDef describes a field for [AppendEvent] and [AppendMetadata].
type FieldDef struct {
	Name     string
	Encoding uint8 // Enc…; for EncStruct, Format is the member count
	Format   uint8 // Fmt…
	Tag      uint16
	Array    uint8 // 0, CArray or VArray
	Count    uint16
}

// EventDef is an event for [AppendEvent]: header, name, fields, optional
// activity ids and the already-encoded payload.
type EventDef struct {
	Header    Header
	Name      string // may carry ";attrib=value" suffixes
	Fields    []FieldDef
	Activity  []byte // 16 bytes, or nil
	Related   []byte // 16 bytes, or nil (needs Activity)
	Payload   []byte
	BigEndian bool
}

// AppendEvent appends an EventHeader event (header, activity and metadata
// extensions, payload) to dst, as a writer following eventheader.h would
// on a 64-bit system.
func AppendEvent(dst []byte, e EventDef) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	flags := uint8(flagPointer64 | flagExtension)
	if e.BigEndian {
		bo = binary.BigEndian
	} else {
		flags |= flagLittleEndian
	}
	h := e.Header
	dst = append(dst, flags, h.Version)
	dst = bo.AppendUint16(dst, h.ID)
	dst = bo.AppendUint16(dst, h.Tag)
	dst = append(dst, h.Opcode, h.Level)
	if e.Activity != nil {
		act := append(append([]byte(nil), e.Activity...), e.Related...)
		dst = bo.AppendUint16(dst, uint16(len(act)))
		dst = bo.AppendUint16(dst, extActivityID|extChain)
		dst = append(dst, act...)
	}
	meta := AppendMetadata(nil, e.Name, e.Fields, e.BigEndian)
	dst = bo.AppendUint16(dst, uint16(len(meta)))
	dst = bo.AppendUint16(dst, extMetadata)
	dst = append(dst, meta...)
	return append(dst, e.Payload...)
}

// AppendMetadata appends the data of a Metadata extension (the event name
// and the field descriptions) to dst; tags and CArray counts use the given
// byte order.
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
		if f.Array == CArray {
			dst = bo.AppendUint16(dst, f.Count)
		}
	}
	return dst
}
