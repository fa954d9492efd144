// Package eventheader decodes EventHeader events: the self-describing
// user_events convention of microsoft/LinuxTracepoints (eventheader.h).
//
// # Design
//
// An EventHeader event is an 8-byte [Header], optional extensions (the
// Metadata extension describing the fields, an activity id) and a tightly
// packed payload. [Parse] splits an event cheaply without decoding fields,
// so a reader can index millions of events; [ParseMetadata] turns the
// metadata into a [Schema] once per distinct event; [Schema.Decode] decodes
// a payload into [trace.Field]s rendered the way the reference decoders
// (the C++ EventFormatter) render them: hex integers as 0x…, errno names,
// dates, IP addresses, UUIDs, hex bytes "48 6f 77", strings with BOM
// detection and invalid UTF-8 shown as Latin-1. ../NOTES.md §eventheader
// records the naming and decoding rules the reference decoders share.
//
// # Security
//
// Events come from untrusted files. Every count and length is checked
// against the bytes present; nesting depth, field count and items per event
// are bounded by named limits.
package eventheader

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
)

// Header flags.
const (
	FlagPointer64    = 0x01
	FlagLittleEndian = 0x02
	FlagExtension    = 0x04
	flagsKnown       = 0x07
)

// Extension kinds.
const (
	ExtMetadata   = 1
	ExtActivityID = 2
	extChainFlag  = 0x8000
	extKindMask   = 0x7FFF
)

// Limits, as in the reference decoders.
const (
	MaxDepth     = 8       // struct nesting
	MaxTopFields = 255     // top-level fields of one event (the reference's limit)
	MaxItems     = 1 << 16 // decoded values per event
	MaxNameLen   = 255     // tracepoint name length
	HeaderSize   = 8
)

// Header is the 8-byte header of an EventHeader event.
type Header struct {
	Flags   uint8
	Version uint8
	ID      uint16
	Tag     uint16
	Opcode  uint8
	Level   uint8
}

// Event is an EventHeader event split into its parts.
type Event struct {
	Header   Header
	Metadata []byte // the Metadata extension's data; nil when absent
	Activity []byte // 16 bytes, RFC 4122 order; nil when absent
	Related  []byte // 16 bytes; nil when absent
	Payload  []byte
}

// BigEndian reports whether the event's values are big-endian.
func (e *Event) BigEndian() bool { return e.Header.Flags&FlagLittleEndian == 0 }

// Errors of [Parse] and [ParseMetadata].
var (
	ErrShort    = errors.New("eventheader: event shorter than its header or extensions")
	ErrFlags    = errors.New("eventheader: unknown header flags")
	ErrExtKind  = errors.New("eventheader: extension of kind 0")
	ErrActivity = errors.New("eventheader: activity id extension of size other than 16 or 32")
	ErrMetadata = errors.New("eventheader: damaged metadata")
	ErrPayload  = errors.New("eventheader: payload shorter than its metadata says")
	ErrLimit    = errors.New("eventheader: event exceeds a decoder limit")
)

func byteOrder(big bool) binary.ByteOrder {
	if big {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// Parse splits an EventHeader event (the bytes from eventheader_flags on).
func Parse(b []byte) (Event, error) {
	var e Event
	if len(b) < HeaderSize {
		return e, ErrShort
	}
	h := &e.Header
	h.Flags = b[0]
	if h.Flags&^flagsKnown != 0 {
		return e, ErrFlags
	}
	bo := byteOrder(h.Flags&FlagLittleEndian == 0)
	h.Version = b[1]
	h.ID = bo.Uint16(b[2:])
	h.Tag = bo.Uint16(b[4:])
	h.Opcode = b[6]
	h.Level = b[7]
	p := HeaderSize
	if h.Flags&FlagExtension != 0 {
		for {
			if len(b)-p < 4 {
				return e, ErrShort
			}
			size := int(bo.Uint16(b[p:]))
			kind := bo.Uint16(b[p+2:])
			p += 4
			if len(b)-p < size {
				return e, ErrShort
			}
			data := b[p : p+size]
			p += size
			switch kind & extKindMask {
			case 0:
				return e, ErrExtKind
			case ExtMetadata:
				if e.Metadata == nil {
					e.Metadata = data
				}
			case ExtActivityID:
				switch size {
				case 16:
					e.Activity = data
				case 32:
					e.Activity, e.Related = data[:16], data[16:]
				default:
					return e, ErrActivity
				}
			}
			if kind&extChainFlag == 0 {
				break
			}
		}
	}
	e.Payload = b[p:]
	return e, nil
}

// TracepointName is a parsed EventHeader tracepoint name
// "Provider_L<level>K<keyword><options>".
type TracepointName struct {
	Provider string
	Level    uint8
	Keyword  uint64
	Options  string // e.g. "Gmsft"
}

// ParseTracepointName parses an EventHeader tracepoint name. It reports
// false for names that do not follow the convention (as the reference
// decoders do: the provider ends at the last '_', level and keyword are
// lowercase hex, options are [A-Z][0-9a-z]*).
func ParseTracepointName(name string) (TracepointName, bool) {
	var tn TracepointName
	if len(name) > MaxNameLen || strings.IndexByte(name, 0) >= 0 {
		return tn, false
	}
	i := strings.LastIndexByte(name, '_')
	if i < 0 {
		return tn, false
	}
	tn.Provider = name[:i]
	s := name[i+1:]
	hex := func(s string) (uint64, string, bool) {
		n := 0
		var v uint64
		for n < len(s) && n < 16 && isLowerHex(s[n]) {
			v = v<<4 | uint64(hexVal(s[n]))
			n++
		}
		if n == 0 {
			return 0, s, false
		}
		return v, s[n:], true
	}
	if s == "" || s[0] != 'L' {
		return tn, false
	}
	lv, s, ok := hex(s[1:])
	if !ok || lv > 0xFF {
		return tn, false
	}
	tn.Level = uint8(lv)
	if s == "" || s[0] != 'K' {
		return tn, false
	}
	tn.Keyword, s, ok = hex(s[1:])
	if !ok {
		return tn, false
	}
	tn.Options = s
	for len(s) > 0 {
		if s[0] < 'A' || s[0] > 'Z' {
			return tn, false
		}
		j := 1
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'z') {
			j++
		}
		s = s[j:]
	}
	return tn, true
}

// Group returns the provider group (the value of the "G" option), or "".
func (tn TracepointName) Group() string {
	s := tn.Options
	for len(s) > 0 {
		j := 1
		for j < len(s) && !(s[j] >= 'A' && s[j] <= 'Z') {
			j++
		}
		if s[0] == 'G' {
			return s[1:j]
		}
		s = s[j:]
	}
	return ""
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func hexVal(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// Encodings (low 5 bits of a field's encoding byte).
const (
	EncInvalid         = 0
	EncStruct          = 1
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
	encMax             = 14

	encCArray    = 0x20
	encVArray    = 0x40
	encChain     = 0x80
	encValueMask = 0x1F
)

// Formats (low 7 bits of a field's format byte).
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

	fmtChain = 0x80
	fmtMask  = 0x7F
)

var encNames = [...]string{"invalid", "struct", "value8", "value16", "value32", "value64", "value128",
	"zstring_char8", "zstring_char16", "zstring_char32", "string_length16_char8",
	"string_length16_char16", "string_length16_char32", "binary_length16_char8"}

// EncodingName returns the eventheader.h name of an encoding.
func EncodingName(enc uint8) string {
	if int(enc) < len(encNames) {
		return encNames[enc]
	}
	return "encoding" + strconv.Itoa(int(enc))
}
