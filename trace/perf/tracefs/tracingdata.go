package tracefs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
)

// TracingData is the content of perf's TRACING_DATA blob: the ring-buffer
// description and the format files of every recorded tracepoint.
type TracingData struct {
	Version     string
	BigEndian   bool // byte order of the blob's own sizes
	LongSize    int  // word size of the traced kernel: 4 or 8
	PageSize    uint32
	HeaderPage  string
	HeaderEvent string
	Events      []*Event
	// Skipped counts format files that did not parse.
	Skipped int
}

// MaxEvents bounds the number of format files in one TRACING_DATA blob.
const MaxEvents = 1 << 16

// tracingMagic starts every TRACING_DATA blob.
const tracingMagic = "\x17\x08\x44tracing"

// dataError is a damaged TRACING_DATA blob, with the offset in the blob.
type dataError struct {
	Off int
	Msg string
}

func (e *dataError) Error() string {
	return "tracefs: tracing data: " + e.Msg + " at blob offset " + strconv.Itoa(e.Off)
}

// Offset returns the byte offset in the blob where the damage was found.
func (e *dataError) Offset() int { return e.Off }

// ErrNotTracingData is returned when a blob does not start with the magic.
var ErrNotTracingData = errors.New("tracefs: not TRACING_DATA")

// ParseTracingData parses a TRACING_DATA blob. Format files that do not
// parse are counted in Skipped; structural damage is an error.
func ParseTracingData(b []byte) (*TracingData, error) {
	if !bytes.HasPrefix(b, []byte(tracingMagic)) {
		return nil, ErrNotTracingData
	}
	c := cursor{b: b, off: len(tracingMagic)}
	td := &TracingData{}
	td.Version = c.cstring()
	flags := c.bytes(2)
	if c.err != nil {
		return nil, c.err
	}
	td.BigEndian = flags[0] != 0
	td.LongSize = int(flags[1])
	if td.BigEndian {
		c.bo = binary.BigEndian
	} else {
		c.bo = binary.LittleEndian
	}
	td.PageSize = c.u32()
	if c.cstring() != "header_page" {
		return td, c.fail("missing header_page")
	}
	td.HeaderPage = string(c.bytes(c.size(8)))
	if c.cstring() != "header_event" {
		return td, c.fail("missing header_event")
	}
	td.HeaderEvent = string(c.bytes(c.size(8)))
	add := func(system string, text []byte) error {
		if len(td.Events)+td.Skipped >= MaxEvents {
			return c.fail("more than " + strconv.Itoa(MaxEvents) + " format files")
		}
		e, err := ParseFormat(system, string(text), td.LongSize)
		if err != nil {
			td.Skipped++
			return nil
		}
		td.Events = append(td.Events, e)
		return nil
	}
	nftrace := c.u32()
	for i := uint32(0); i < nftrace && c.err == nil; i++ {
		text := c.bytes(c.size(8))
		if c.err == nil {
			if err := add("ftrace", text); err != nil {
				return td, err
			}
		}
	}
	nsys := c.u32()
	for i := uint32(0); i < nsys && c.err == nil; i++ {
		system := c.cstring()
		n := c.u32()
		for j := uint32(0); j < n && c.err == nil; j++ {
			text := c.bytes(c.size(8))
			if c.err == nil {
				if err := add(system, text); err != nil {
					return td, err
				}
			}
		}
	}
	// kallsyms, printk formats and saved cmdlines follow; the viewer does
	// not need them.
	return td, c.err
}

// cursor reads a TRACING_DATA blob with a sticky error.
type cursor struct {
	b   []byte
	off int
	bo  binary.ByteOrder
	err error
}

func (c *cursor) fail(msg string) error {
	if c.err == nil {
		c.err = &dataError{Off: c.off, Msg: msg}
	}
	return c.err
}

func (c *cursor) bytes(n int) []byte {
	if c.err != nil {
		return nil
	}
	if n < 0 || n > len(c.b)-c.off {
		c.fail("length " + strconv.Itoa(n) + " exceeds the " + strconv.Itoa(len(c.b)-c.off) + " bytes left")
		return nil
	}
	s := c.b[c.off : c.off+n]
	c.off += n
	return s
}

func (c *cursor) u32() uint32 {
	b := c.bytes(4)
	if b == nil {
		return 0
	}
	return c.bo.Uint32(b)
}

// size reads a length of w bytes, returned as int (or -1 when too large).
func (c *cursor) size(w int) int {
	b := c.bytes(w)
	if b == nil {
		return -1
	}
	var v uint64
	if w == 8 {
		v = c.bo.Uint64(b)
	} else {
		v = uint64(c.bo.Uint32(b))
	}
	if v > uint64(len(c.b)) {
		c.off -= w
		c.fail("length " + strconv.FormatUint(v, 10) + " exceeds the blob")
		return -1
	}
	return int(v)
}

func (c *cursor) cstring() string {
	if c.err != nil {
		return ""
	}
	i := bytes.IndexByte(c.b[c.off:], 0)
	if i < 0 {
		c.fail("unterminated string")
		return ""
	}
	s := string(c.b[c.off : c.off+i])
	c.off += i + 1
	return s
}
