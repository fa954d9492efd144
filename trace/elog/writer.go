package elog

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Writer writes elog files as vppinfra serializes them. It is for test
// fixtures, fuzz seeds and benchmarks.
type Writer struct {
	RingSize      uint32
	SerializeTime TimeStamp
	InitTime      TimeStamp
	// Types need Format, FormatArgs and Enums; IndexPlus1 is written as
	// given.
	Types       []EventType
	Tracks      []string
	StringTable []byte
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
func (e *encoder) small(v uint64) {
	switch r := v; {
	case r < 1<<7:
		e.w.WriteByte(byte(1 + 2*r))
	case r-1<<7 < 1<<14:
		e.w.Write(binary.LittleEndian.AppendUint16(e.tmp[:0], uint16(4*(r-1<<7)+2)))
	case r-1<<7-1<<14 < 1<<29:
		e.w.Write(binary.LittleEndian.AppendUint32(e.tmp[:0], uint32(8*(r-1<<7-1<<14)+4)))
	default:
		e.w.WriteByte(0)
		e.w.Write(binary.LittleEndian.AppendUint64(e.tmp[:0], v))
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
	args := make([][]Arg, len(w.Types))
	argErr := make([]error, len(w.Types))
	for i, t := range w.Types {
		args[i], argErr[i] = ParseArgs(t.FormatArgs)
	}
	e := &encoder{w: newBufioWriter(out)}
	e.w.WriteString(Magic)
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
			return fmt.Errorf("elog: event %d: type %d: %v", i, ev.Type, argErr[ev.Type])
		}
		if int(ev.Type) >= len(args) || len(ev.Args) != len(args[ev.Type]) {
			return fmt.Errorf("elog: event %d: type %d with %d arguments", i, ev.Type, len(ev.Args))
		}
		e.u16(ev.Type)
		e.u16(ev.Track)
		e.u64(math.Float64bits(ev.Time))
		for j, a := range args[ev.Type] {
			v := ev.Args[j]
			switch a.Kind {
			case ArgInt, ArgEnum, ArgStrtab:
				switch a.Bytes {
				case 1:
					e.w.WriteByte(byte(v.N))
				case 2:
					e.u16(uint16(v.N))
				case 4:
					e.u32(uint32(v.N))
				case 8:
					e.u64(v.N)
				}
			case ArgFloat:
				if a.Bytes == 4 {
					e.u32(math.Float32bits(float32(v.F)))
				} else {
					e.u64(math.Float64bits(v.F))
				}
			case ArgString:
				e.cstring(v.S)
			}
		}
	}
	return e.w.Flush()
}

func newBufioWriter(w io.Writer) *bufio.Writer { return bufio.NewWriterSize(w, 1<<16) }
