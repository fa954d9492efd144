// Package elogtest writes VPP event logs (the files vppinfra's
// elog_write_file writes) for tests, fuzz seeds and benchmarks of the elog
// reader (package viewer/trace/elog) and of the tools built on it.
//
// The package does not import the reader: the reader's own tests use it,
// and an encoder written from vppinfra's serialization (elog.c, serialize.c)
// rather than from the reader's code is an independent check of the reader.
// Its input types ([TimeStamp], [EventType]) mirror the reader's; tests
// that compare the two convert explicitly.
package elogtest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// magic is the serialized magic: a big-endian length 7, then "elog v0".
const magic = "\x00\x00\x00\x07elog v0"

// Writer writes elog files as vppinfra serializes them.
type Writer struct {
	RingSize      uint32
	SerializeTime TimeStamp
	InitTime      TimeStamp
	Types         []EventType
	Tracks        []string
	StringTable   []byte
}

// TimeStamp is one of the header's time stamps.
type TimeStamp struct {
	OSNsec uint64 // wall clock in ns, since 2017-03-30 14:45:08 UTC (older files: since 1970)
	CPU    uint64 // CPU time stamp counter
}

// EventType is one event type to write.
type EventType struct {
	Format string // e.g. "rx(%d): %d"
	// FormatArgs gives the kinds and widths of an event's arguments, e.g.
	// "i4T4f8s20": integers (i), enum indexes (t) and string-table
	// offsets (T) of 1, 2, 4 or 8 bytes, floats (f) of 4 or 8, strings
	// (s, any width). A type whose FormatArgs do not parse is written as
	// given, but an event of that type cannot be.
	FormatArgs string
	IndexPlus1 uint32 // type_index_plus_one, written as given
	Enums      []string
}

// Value is one argument of an event to write: N for integer kinds, F for
// floats, S for strings.
type Value struct {
	N uint64
	F float64
	S string
}

// Event is one event to write.
type Event struct {
	Type  uint16
	Track uint16
	Time  float64 // seconds since logging started
	Args  []Value
}

type encoder struct {
	w   *bufio.Writer
	tmp [9]byte
}

func (e *encoder) u16(v uint16) { e.w.Write(binary.BigEndian.AppendUint16(e.tmp[:0], v)) }
func (e *encoder) u32(v uint32) { e.w.Write(binary.BigEndian.AppendUint32(e.tmp[:0], v)) }
func (e *encoder) u64(v uint64) { e.u32(uint32(v)); e.u32(uint32(v >> 32)) }

// small writes a "likely small" unsigned integer.
func (e *encoder) small(v uint64) { e.w.Write(AppendSmall(e.tmp[:0], v)) }

// AppendSmall appends v as vppinfra serializes a "likely small" unsigned
// integer (string lengths and counts): 1, 2 or 4 bytes whose low bits say
// which, or a zero byte and 8 bytes, little-endian. Tests use it for
// lengths in hand-built hostile files and to check the reader's decoding
// at every boundary.
func AppendSmall(b []byte, v uint64) []byte {
	switch r := v; {
	case r < 1<<7:
		return append(b, byte(1+2*r))
	case r-1<<7 < 1<<14:
		return binary.LittleEndian.AppendUint16(b, uint16(4*(r-1<<7)+2))
	case r-1<<7-1<<14 < 1<<29:
		return binary.LittleEndian.AppendUint32(b, uint32(8*(r-1<<7-1<<14)+4))
	default:
		return binary.LittleEndian.AppendUint64(append(b, 0), v)
	}
}

func (e *encoder) cstring(s string) {
	e.small(uint64(len(s)))
	e.w.WriteString(s)
}

// Write writes the log with events.
func (w *Writer) Write(out io.Writer, events []Event) error {
	return w.WriteFunc(out, len(events), func(i int) Event { return events[i] })
}

// WriteFunc writes the log with n events that gen returns one by one.
func (w *Writer) WriteFunc(out io.Writer, n int, gen func(i int) Event) error {
	args := make([][]arg, len(w.Types))
	argErr := make([]error, len(w.Types))
	for i, t := range w.Types {
		args[i], argErr[i] = parseArgs(t.FormatArgs)
	}
	e := &encoder{w: bufio.NewWriterSize(out, 1<<16)}
	e.w.WriteString(magic)
	e.u32(w.RingSize)
	for _, ts := range []TimeStamp{w.SerializeTime, w.InitTime} {
		e.u64(ts.OSNsec)
		e.u64(ts.CPU)
	}
	e.u32(uint32(len(w.Types)))
	for _, t := range w.Types {
		e.cstring(t.Format)
		e.cstring(t.FormatArgs)
		e.u32(t.IndexPlus1)
		e.u32(uint32(len(t.Enums)))
		for _, s := range t.Enums {
			e.cstring(s)
		}
	}
	e.u32(uint32(len(w.Tracks)))
	for _, s := range w.Tracks {
		e.cstring(s)
	}
	e.u32(uint32(len(w.StringTable)))
	e.w.Write(w.StringTable)
	e.u32(uint32(n))
	for i := range n {
		ev := gen(i)
		if int(ev.Type) < len(args) && argErr[ev.Type] != nil {
			return fmt.Errorf("elogtest: event %d: type %d: %v", i, ev.Type, argErr[ev.Type])
		}
		if int(ev.Type) >= len(args) || len(ev.Args) != len(args[ev.Type]) {
			return fmt.Errorf("elogtest: event %d: type %d with %d arguments", i, ev.Type, len(ev.Args))
		}
		e.u16(ev.Type)
		e.u16(ev.Track)
		e.u64(math.Float64bits(ev.Time))
		for j, a := range args[ev.Type] {
			v := ev.Args[j]
			switch a.kind {
			case 'i', 't', 'T':
				switch a.bytes {
				case 1:
					e.w.WriteByte(byte(v.N))
				case 2:
					e.u16(uint16(v.N))
				case 4:
					e.u32(uint32(v.N))
				case 8:
					e.u64(v.N)
				}
			case 'f':
				if a.bytes == 4 {
					e.u32(math.Float32bits(float32(v.F)))
				} else {
					e.u64(math.Float64bits(v.F))
				}
			case 's':
				e.cstring(v.S)
			}
		}
	}
	return e.w.Flush()
}

// arg is one format_args token: its kind letter and width in bytes.
type arg struct {
	kind  byte
	bytes int
}

// parseArgs parses format_args: tokens of a kind letter and a width of one
// or two digits. Unlike the reader it sets no limit on their number.
func parseArgs(s string) ([]arg, error) {
	var args []arg
	for i := 0; i < len(s); {
		k := s[i]
		j := i + 1
		n := 0
		for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '9' {
			n = n*10 + int(s[j]-'0')
			j++
		}
		if j == i+1 {
			return nil, fmt.Errorf("argument %q at %d has no width", s[i:i+1], i)
		}
		switch k {
		case 'i', 't', 'T':
			if n != 1 && n != 2 && n != 4 && n != 8 {
				return nil, fmt.Errorf("argument %q: integer width %d", s[i:j], n)
			}
		case 'f':
			if n != 4 && n != 8 {
				return nil, fmt.Errorf("argument %q: float width %d", s[i:j], n)
			}
		case 's':
		default:
			return nil, fmt.Errorf("argument %q: unknown kind", s[i:j])
		}
		args = append(args, arg{k, n})
		i = j
	}
	return args, nil
}
