// Package cpeltest writes CPEL files for tests, fuzz seeds and benchmarks
// of the CPEL reader (package viewer/trace/cpel) and of the tools built on
// it: [Writer] lays out string tables, definitions, symbols and event
// sections in any order, either byte order, and raw sections of any type;
// [Generate] makes large files shaped like real ones.
//
// The package does not import the reader: the reader's own tests use it,
// and an encoder written from the format (cpel.h, trace/cpel/NOTES.md)
// rather than from the reader's constants is an independent check of the
// reader. Its input types ([EventDef], [TrackDef], [Record]) mirror the
// reader's; tests that compare the two convert explicitly.
package cpeltest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"

	"viewer/symbols"
)

// Section types, as cpel.h numbers them.
const (
	sectionStrtab   = 1
	sectionSymtab   = 2
	sectionEvtdef   = 3
	sectionTrackdef = 4
	sectionEvent    = 5
)

// Sizes and fields of the on-disk structures (cpel.h).
const (
	fileHeaderSize  = 8            // endian_version, pad, nsections, file_date
	nameSize        = 64           // char string_table_name[64]
	defHeaderSize   = nameSize + 4 // EVTDEF, TRACKDEF, SYMTAB headers: + number_of_*
	eventHeaderSize = nameSize + 8 // + number_of_events, clock_ticks_per_second
	eventDefSize    = 12           // event, event_format, datum_format
	trackDefSize    = 8            // track, track_format
	symbolSize      = 8            // value, name_offset
	recordSize      = 20           // time[2], track, event_code, event_datum
	littleEndianBit = 0x80         // in endian_version
	version         = 1            // the only version VPP writes
)

// EventDef is one event definition to write.
type EventDef struct {
	Code   uint32
	Name   string // event_format: the event's name (may hold a directive for the code)
	Format string // datum_format
}

// TrackDef is one track definition to write.
type TrackDef struct {
	ID     uint32
	Format string // track_format, applied to the track id
}

// Record is one event record to write.
type Record struct {
	Ticks uint64
	Track uint32
	Code  uint32
	Datum uint32
}

// Writer builds a CPEL file: string tables, definitions, symbols and
// event sections, written in the order they were added.
type Writer struct {
	// Little writes a little-endian file (VPP writes big-endian ones).
	Little bool
	// Date is the file_date field.
	Date     uint32
	sections []wsection
}

// wsection is one section to write: its type and a function writing its
// data (so that string tables can grow until the file is written).
type wsection struct {
	typ  uint32
	size func() int64
	data func(w *bufio.Writer, bo binary.ByteOrder) error
}

// Strtab is a string table being built.
type Strtab struct {
	name string
	data []byte
	offs map[string]uint32
}

// Name returns the table's name.
func (t *Strtab) Name() string { return t.name }

// Add adds s (once) and returns its offset.
func (t *Strtab) Add(s string) uint32 {
	if off, ok := t.offs[s]; ok {
		return off
	}
	off := uint32(len(t.data))
	t.data = append(append(t.data, s...), 0)
	t.offs[s] = off
	return off
}

// NewStrtab returns a string table named name (its offset 0 holds the
// name) that is not yet placed in a file: see [Writer.AddStrtab].
func NewStrtab(name string) *Strtab {
	t := &Strtab{name: name, offs: map[string]uint32{}}
	t.Add(name)
	return t
}

// StringTable adds a new string table named name.
func (w *Writer) StringTable(name string) *Strtab {
	t := NewStrtab(name)
	w.AddStrtab(t)
	return t
}

// AddStrtab places t's section here, which may be after the sections that
// use it. Strings added to t later are still written.
func (w *Writer) AddStrtab(t *Strtab) {
	w.sections = append(w.sections, wsection{
		typ: sectionStrtab,
		size: func() int64 {
			return int64(len(t.data)+7) &^ 7 // padded to 8 as cpel_util does
		},
		data: func(bw *bufio.Writer, _ binary.ByteOrder) error {
			bw.Write(t.data)
			for n := len(t.data); n%8 != 0; n++ {
				bw.WriteByte(0)
			}
			return nil
		},
	})
}

func putName(bw *bufio.Writer, name string) {
	var b [nameSize]byte
	copy(b[:], name)
	bw.Write(b[:])
}

func put32(bw *bufio.Writer, bo binary.ByteOrder, v uint32) {
	var b [4]byte
	bo.PutUint32(b[:], v)
	bw.Write(b[:])
}

// EventDefs adds an event definition section using t.
func (w *Writer) EventDefs(t *Strtab, defs []EventDef) {
	type def struct{ code, name, format uint32 }
	ds := make([]def, len(defs))
	for i, d := range defs {
		ds[i] = def{d.Code, t.Add(d.Name), t.Add(d.Format)}
	}
	w.sections = append(w.sections, wsection{
		typ:  sectionEvtdef,
		size: func() int64 { return defHeaderSize + eventDefSize*int64(len(ds)) },
		data: func(bw *bufio.Writer, bo binary.ByteOrder) error {
			putName(bw, t.name)
			put32(bw, bo, uint32(len(ds)))
			for _, d := range ds {
				put32(bw, bo, d.code)
				put32(bw, bo, d.name)
				put32(bw, bo, d.format)
			}
			return nil
		},
	})
}

// TrackDefs adds a track definition section using t.
func (w *Writer) TrackDefs(t *Strtab, defs []TrackDef) {
	type def struct{ id, format uint32 }
	ds := make([]def, len(defs))
	for i, d := range defs {
		ds[i] = def{d.ID, t.Add(d.Format)}
	}
	w.sections = append(w.sections, wsection{
		typ:  sectionTrackdef,
		size: func() int64 { return defHeaderSize + trackDefSize*int64(len(ds)) },
		data: func(bw *bufio.Writer, bo binary.ByteOrder) error {
			putName(bw, t.name)
			put32(bw, bo, uint32(len(ds)))
			for _, d := range ds {
				put32(bw, bo, d.id)
				put32(bw, bo, d.format)
			}
			return nil
		},
	})
}

// Symbols adds a symbol table section (type 2) whose names live in t.
// Values are written as given (the format wants them sorted).
func (w *Writer) Symbols(t *Strtab, syms []symbols.Symbol) {
	type sym struct{ value, name uint32 }
	ss := make([]sym, len(syms))
	for i, s := range syms {
		ss[i] = sym{uint32(s.Value), t.Add(s.Name)}
	}
	w.sections = append(w.sections, wsection{
		typ:  sectionSymtab,
		size: func() int64 { return defHeaderSize + symbolSize*int64(len(ss)) },
		data: func(bw *bufio.Writer, bo binary.ByteOrder) error {
			putName(bw, t.name)
			put32(bw, bo, uint32(len(ss)))
			for _, s := range ss {
				put32(bw, bo, s.value)
				put32(bw, bo, s.name)
			}
			return nil
		},
	})
}

// Events adds an event section bound to t with n records that gen
// returns one by one when the file is written, so that huge files can be
// generated without holding their events.
func (w *Writer) Events(t *Strtab, ticksPerSecond uint32, n int, gen func(i int) Record) {
	w.sections = append(w.sections, wsection{
		typ:  sectionEvent,
		size: func() int64 { return eventHeaderSize + recordSize*int64(n) },
		data: func(bw *bufio.Writer, bo binary.ByteOrder) error {
			putName(bw, t.name)
			put32(bw, bo, uint32(n))
			put32(bw, bo, ticksPerSecond)
			var b [recordSize]byte
			for i := range n {
				r := gen(i)
				bo.PutUint32(b[0:], uint32(r.Ticks>>32))
				bo.PutUint32(b[4:], uint32(r.Ticks))
				bo.PutUint32(b[8:], r.Track)
				bo.PutUint32(b[12:], r.Code)
				bo.PutUint32(b[16:], r.Datum)
				if _, err := bw.Write(b[:]); err != nil {
					return err
				}
			}
			return nil
		},
	})
}

// EventList adds an event section holding recs.
func (w *Writer) EventList(t *Strtab, ticksPerSecond uint32, recs []Record) {
	w.Events(t, ticksPerSecond, len(recs), func(i int) Record { return recs[i] })
}

// Raw adds a section of type typ (any number: 0 is "bad", 1 to 5 are
// strtab, symtab, evtdef, trackdef and event) holding data as given.
func (w *Writer) Raw(typ uint32, data []byte) {
	w.sections = append(w.sections, wsection{
		typ:  typ,
		size: func() int64 { return int64(len(data)) },
		data: func(bw *bufio.Writer, _ binary.ByteOrder) error {
			bw.Write(data)
			return nil
		},
	})
}

// ShuffleSections reorders the sections added so far, as shuffle (e.g. a
// math/rand/v2 Rand's Shuffle) does with the indexes it swaps: the reader
// must accept any section order.
func (w *Writer) ShuffleSections(shuffle func(n int, swap func(i, j int))) {
	shuffle(len(w.sections), func(i, j int) { w.sections[i], w.sections[j] = w.sections[j], w.sections[i] })
}

// WriteTo writes the file.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if len(w.sections) > 0xffff {
		return 0, errors.New("cpeltest: more than 65535 sections")
	}
	var bo binary.ByteOrder = binary.BigEndian
	ev := byte(version)
	if w.Little {
		bo = binary.LittleEndian
		ev |= littleEndianBit
	}
	cw := &countWriter{w: out}
	bw := bufio.NewWriterSize(cw, 1<<16)
	var hdr [fileHeaderSize]byte
	hdr[0] = ev
	bo.PutUint16(hdr[2:], uint16(len(w.sections)))
	bo.PutUint32(hdr[4:], w.Date)
	bw.Write(hdr[:])
	for _, s := range w.sections {
		size := s.size()
		if size > 0xffffffff {
			return cw.n, errors.New("cpeltest: section larger than 4 GiB")
		}
		put32(bw, bo, s.typ)
		put32(bw, bo, uint32(size))
		if err := s.data(bw, bo); err != nil {
			return cw.n, err
		}
	}
	err := bw.Flush()
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
