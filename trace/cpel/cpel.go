// Package cpel reads CPEL ("Cisco Performance Event Log") files, the event
// logs of FD.io VPP's performance tools that the g2 viewer displays.
//
// # Format
//
// A CPEL file is an 8-byte header (endian bit and version, section count,
// file date) followed by sections, each an 8-byte header (type, length) and
// its data. String tables (type 1) are named by their first string; event
// definitions (3), track definitions (4), symbol tables (2) and event
// sections (5) name the string table they use. An event section holds
// 20-byte records: a 64-bit tick count as two 32-bit words (high first),
// track id, event code and a 32-bit datum whose meaning the event
// definition's printf-style format gives (%s: an offset into the section's
// string table). Real files are big-endian; bit 0x80 of the first byte
// marks a little-endian file, which this package also reads.
//
// # Design
//
// [NewFile] reads everything except the event records: tables are resolved
// by name whatever the section order, unknown section types are skipped
// with a notice, and every event section is scanned once in chunks to
// check that its times never decrease (a section that does decrease is
// loaded and sorted, within [MaxUnsortedEvents]). The [trace.Reader] then
// merges the event sections in time order, decoding records from a
// chunk-sized buffer per section, so memory stays O(chunk) plus tables
// however large the file. Every section's ticks are converted to
// nanoseconds with its own clock rate, so sections with different clocks
// share one time axis; labels (event name, formatted datum) are made only
// when [Reader.Details] asks.
//
// NOTES.md in this directory records where the reader departs from
// cpeldump and g2 and why; comments cite it as "NOTES.md §name".
//
// # Security
//
// Files are untrusted. Every length, count and string offset is checked
// against the section that holds it before use, table sections are capped
// at [MaxTableBytes], and damage yields the events before it followed by a
// [*trace.FormatError] naming the byte offset.
package cpel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"viewer/symbols"
	"viewer/trace"
)

// SectionType is a CPEL section type.
type SectionType uint32

// Section types, named as cpel.h names them.
const (
	SectionBad      SectionType = 0
	SectionStrtab   SectionType = 1
	SectionSymtab   SectionType = 2
	SectionEvtdef   SectionType = 3
	SectionTrackdef SectionType = 4
	SectionEvent    SectionType = 5
)

var sectionNames = [...]string{"bad", "strtab", "symtab", "evtdef", "trackdef", "event"}

func (t SectionType) String() string {
	if int(t) < len(sectionNames) {
		return sectionNames[t]
	}
	return "SectionType(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// Sizes of the on-disk structures.
const (
	fileHeaderSize    = 8
	sectionHeaderSize = 8
	nameSize          = 64           // char string_table_name[64]
	defHeaderSize     = nameSize + 4 // EVTDEF, TRACKDEF, SYMTAB headers
	eventHeaderSize   = nameSize + 8 // + number_of_events, clock_ticks_per_second
	eventDefSize      = 12           // event, event_format, datum_format
	trackDefSize      = 8            // track, track_format
	symbolSize        = 8            // value, name_offset
	recordSize        = 20           // time[2], track, event_code, event_datum
	littleEndianBit   = 0x80         // in endian_version
	versionMask       = 0x7f         // in endian_version
	supportedVersion  = 1            // the only version VPP writes
	datumOffInRecord  = 16           // event_datum within a record
)

// Limits on what a file may make the reader hold in memory.
const (
	// MaxTableBytes caps one string-table, definition or symbol section.
	MaxTableBytes = 64 << 20
	// MaxUnsortedEvents caps an event section whose times decrease: such
	// a section is loaded and sorted in memory.
	MaxUnsortedEvents = 1 << 24
	// MaxLabel caps an event's label (name and rendered datum; real ones
	// are under 100 bytes): a 20-byte record whose format pads to
	// thousands of bytes must not make reading a file allocate hundreds
	// of times its size. A longer label is cut, with an ellipsis.
	MaxLabel = 1 << 10
	// chunkBytes is how much of an event section is read at once.
	chunkBytes = recordSize * 8192
	// maxBufferedBytes caps the chunk buffers of all event sections
	// together when there are many sections.
	maxBufferedBytes = 16 << 20
)

// Section is one section of a CPEL file.
type Section struct {
	Type SectionType
	Off  int64 // offset of the section header
	Len  int64 // data length (after the 8-byte header)
	// Strtab is the string table a symbol, definition or event section
	// names, or a string table's own name.
	Strtab string
	// Count is the number of definitions, symbols or events.
	Count uint32
	// TicksPerSecond is an event section's clock rate.
	TicksPerSecond uint32
}

// DataOff returns the offset of the section's data.
func (s Section) DataOff() int64 { return s.Off + sectionHeaderSize }

// EventDef is one event definition.
type EventDef struct {
	Code   uint32
	Name   string // event_format: the event's name (may hold a directive for the code)
	Format string // datum_format
}

// TrackDef is one track definition.
type TrackDef struct {
	ID     uint32
	Format string // track_format, applied to the track id
}

// Record is one event as stored.
type Record struct {
	Ticks uint64
	Track uint32
	Code  uint32
	Datum uint32
}

// File is a parsed CPEL file: its tables, and where its events lie.
type File struct {
	ByteOrder binary.ByteOrder
	Version   int
	Date      uint32 // file_date, Unix seconds
	Sections  []Section
	EventDefs []EventDef // first definition of each code, in file order
	TrackDefs []TrackDef // first definition of each id, in file order
	Symbols   *symbols.Table
	// Notices are things that did not stop reading: skipped sections,
	// redefinitions, unresolved names.
	Notices []string

	r    io.ReaderAt
	size int64
	// strtabs maps a string table's name to its data, kept as a string so
	// that looking a string up does not copy it.
	strtabs map[string]string
	// damage is the error met while reading section headers; the sections
	// before it are usable.
	damage error
	// events are the event sections with what the scan found.
	events []*eventSection
}

// eventSection is an event section with what the scan found.
type eventSection struct {
	sec      Section
	index    int   // index in File.Sections
	dataOff  int64 // offset of the first record
	n        int   // complete records present in the file
	strtab   string
	hasTab   bool
	sorted   bool
	sortedAt []sortedRecord // records in time order when !sorted
	first    trace.Time
	clock    tickClock
}

// sortedRecord is a record of an unsorted section, in time order.
type sortedRecord struct {
	time  trace.Time
	index uint32
	track uint32
	code  uint32
	datum uint32
}

func formatErr(off int64, msg string, err error) *trace.FormatError {
	return &trace.FormatError{Format: "cpel", Off: off, Msg: msg, Err: err}
}

// Match reports whether head looks like a CPEL file header: version 1 in
// either byte order, a zero pad byte, at least one section.
func Match(head []byte) bool {
	if len(head) < fileHeaderSize {
		return false
	}
	if head[0]&versionMask != supportedVersion || head[1] != 0 {
		return false
	}
	bo := order(head[0])
	return bo.Uint16(head[2:]) > 0
}

func order(endianVersion byte) binary.ByteOrder {
	if endianVersion&littleEndianBit != 0 {
		return binary.LittleEndian
	}
	return binary.BigEndian
}

// NewFile parses the file header and every section except the event
// records. It fails only when the file header is unusable; damage further
// on is reported by the reader after the events before it.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	var hdr [fileHeaderSize]byte
	if size < fileHeaderSize {
		return nil, formatErr(size, "file header", trace.ErrTruncated)
	}
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, err
	}
	f := &File{r: r, size: size, strtabs: map[string]string{}}
	f.ByteOrder = order(hdr[0])
	f.Version = int(hdr[0] & versionMask)
	if f.Version != supportedVersion {
		return nil, formatErr(0, fmt.Sprintf("version %d (want %d)", f.Version, supportedVersion), trace.ErrUnsupported)
	}
	nsections := int(f.ByteOrder.Uint16(hdr[2:]))
	f.Date = f.ByteOrder.Uint32(hdr[4:])
	if hdr[1] != 0 {
		f.notice("file header pad byte is %#x, not 0", hdr[1])
	}

	// Pass 0: section headers. Sections are back to back.
	off := int64(fileHeaderSize)
	for i := range nsections {
		var sh [sectionHeaderSize]byte
		if off+sectionHeaderSize > size {
			f.damage = formatErr(off, fmt.Sprintf("section %d of %d: header", i, nsections), trace.ErrTruncated)
			break
		}
		if _, err := r.ReadAt(sh[:], off); err != nil {
			return nil, err
		}
		s := Section{Type: SectionType(f.ByteOrder.Uint32(sh[0:])), Off: off, Len: int64(f.ByteOrder.Uint32(sh[4:]))}
		end := s.DataOff() + s.Len
		if end > size {
			// Keep a cut-off event section: its complete records are usable.
			if s.Type == SectionEvent {
				f.Sections = append(f.Sections, s)
			}
			f.damage = formatErr(size, fmt.Sprintf("section %d (%v) at byte %d declares %d data bytes, file has %d", i, s.Type, off, s.Len, size-s.DataOff()), trace.ErrTruncated)
			break
		}
		f.Sections = append(f.Sections, s)
		off = end
	}
	if f.damage == nil && off < size {
		f.notice("%d bytes after the last section ignored", size-off)
	}

	// Pass 1: string tables, by name, whatever their position.
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Type != SectionStrtab {
			continue
		}
		data, err := f.table(s)
		if err != nil {
			return nil, err
		}
		if data == nil {
			continue
		}
		tab := string(data)
		name, _ := lookup(tab, 0)
		s.Strtab = name
		if _, dup := f.strtabs[name]; dup {
			f.notice("string table %q at byte %d redefined; the later one is used", name, s.Off)
		}
		f.strtabs[name] = tab
	}

	// Pass 2: definitions, symbols, and the event sections' headers.
	var syms []symbols.Symbol
	seenCode := map[uint32]bool{}
	seenTrack := map[uint32]bool{}
	for i := range f.Sections {
		s := &f.Sections[i]
		var err error
		switch s.Type {
		case SectionStrtab:
		case SectionEvtdef:
			err = f.readEventDefs(s, seenCode)
		case SectionTrackdef:
			err = f.readTrackDefs(s, seenTrack)
		case SectionSymtab:
			syms, err = f.readSymbols(s, syms)
		case SectionEvent:
			err = f.readEventHeader(s, i)
		case SectionBad:
			f.notice("section %d at byte %d has type 0 (bad); skipped", i, s.Off)
		default:
			f.notice("section %d at byte %d has unknown type %d; skipped %d bytes", i, s.Off, uint32(s.Type), s.Len)
		}
		if err != nil {
			return nil, err
		}
	}
	f.Symbols = symbols.NewTable(syms)
	return f, nil
}

func (f *File) notice(format string, args ...any) {
	f.Notices = append(f.Notices, fmt.Sprintf(format, args...))
}

// table reads a table section's data, or returns nil with a notice when
// it is larger than MaxTableBytes.
func (f *File) table(s *Section) ([]byte, error) {
	if s.Len > MaxTableBytes {
		f.notice("%v section at byte %d has %d bytes, more than the %d this reader loads; skipped", s.Type, s.Off, s.Len, MaxTableBytes)
		return nil, nil
	}
	data := make([]byte, s.Len)
	if _, err := f.r.ReadAt(data, s.DataOff()); err != nil {
		return nil, err
	}
	return data, nil
}

// cstring returns the NUL-terminated string at the start of b (all of b
// when it has no NUL).
func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// lookup returns the string at off in a string table, without copying.
func lookup(tab string, off uint32) (string, bool) {
	if uint64(off) >= uint64(len(tab)) {
		return "", false
	}
	s := tab[off:]
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s, true
}

// defHeader reads the table name and count of a definition or symbol
// section and checks that count entries of size fit.
func (f *File) defHeader(s *Section, data []byte, size int) (tab string, n int, ok bool) {
	if len(data) < defHeaderSize {
		f.notice("%v section at byte %d: %d bytes, too short for its header; skipped", s.Type, s.Off, len(data))
		return "", 0, false
	}
	s.Strtab = cstring(data[:nameSize])
	s.Count = f.ByteOrder.Uint32(data[nameSize:])
	if uint64(s.Count)*uint64(size) > uint64(len(data)-defHeaderSize) {
		f.notice("%v section at byte %d: %d entries do not fit in %d bytes; skipped", s.Type, s.Off, s.Count, len(data))
		return "", 0, false
	}
	tab, found := f.strtabs[s.Strtab]
	if !found {
		f.notice("%v section at byte %d names string table %q, which the file lacks; skipped", s.Type, s.Off, s.Strtab)
		return "", 0, false
	}
	return tab, int(s.Count), true
}

func (f *File) readEventDefs(s *Section, seen map[uint32]bool) error {
	data, err := f.table(s)
	if err != nil || data == nil {
		return err
	}
	tab, n, ok := f.defHeader(s, data, eventDefSize)
	if !ok {
		return nil
	}
	dups, bad := 0, 0
	for i := range n {
		e := data[defHeaderSize+i*eventDefSize:]
		code := f.ByteOrder.Uint32(e)
		if seen[code] {
			dups++
			continue
		}
		name, ok1 := lookup(tab, f.ByteOrder.Uint32(e[4:]))
		format, ok2 := lookup(tab, f.ByteOrder.Uint32(e[8:]))
		if !ok1 || !ok2 {
			bad++
			continue
		}
		seen[code] = true
		f.EventDefs = append(f.EventDefs, EventDef{Code: code, Name: name, Format: format})
	}
	if dups > 0 {
		f.notice("event definitions at byte %d: %d codes redefined; the first definitions are kept", s.Off, dups)
	}
	if bad > 0 {
		f.notice("event definitions at byte %d: %d with string offsets outside table %q; skipped", s.Off, bad, s.Strtab)
	}
	return nil
}

func (f *File) readTrackDefs(s *Section, seen map[uint32]bool) error {
	data, err := f.table(s)
	if err != nil || data == nil {
		return err
	}
	tab, n, ok := f.defHeader(s, data, trackDefSize)
	if !ok {
		return nil
	}
	dups, bad := 0, 0
	for i := range n {
		e := data[defHeaderSize+i*trackDefSize:]
		id := f.ByteOrder.Uint32(e)
		if seen[id] {
			dups++
			continue
		}
		format, ok := lookup(tab, f.ByteOrder.Uint32(e[4:]))
		if !ok {
			bad++
			continue
		}
		seen[id] = true
		f.TrackDefs = append(f.TrackDefs, TrackDef{ID: id, Format: format})
	}
	if dups > 0 {
		f.notice("track definitions at byte %d: %d ids redefined; the first definitions are kept", s.Off, dups)
	}
	if bad > 0 {
		f.notice("track definitions at byte %d: %d with string offsets outside table %q; skipped", s.Off, bad, s.Strtab)
	}
	return nil
}

func (f *File) readSymbols(s *Section, syms []symbols.Symbol) ([]symbols.Symbol, error) {
	data, err := f.table(s)
	if err != nil || data == nil {
		return syms, err
	}
	tab, n, ok := f.defHeader(s, data, symbolSize)
	if !ok {
		return syms, nil
	}
	bad := 0
	for i := range n {
		e := data[defHeaderSize+i*symbolSize:]
		name, ok := lookup(tab, f.ByteOrder.Uint32(e[4:]))
		if !ok {
			bad++
			continue
		}
		syms = append(syms, symbols.Symbol{Value: uint64(f.ByteOrder.Uint32(e)), Name: name})
	}
	if bad > 0 {
		f.notice("symbol table at byte %d: %d names outside table %q; skipped", s.Off, bad, s.Strtab)
	}
	return syms, nil
}

// readEventHeader reads an event section's header and scans its records.
func (f *File) readEventHeader(s *Section, index int) error {
	avail := min(s.Len, f.size-s.DataOff()) // a cut-off last section
	if avail < eventHeaderSize {
		if f.damage == nil || s.DataOff()+s.Len <= f.size {
			f.notice("event section at byte %d: %d bytes, too short for its header; skipped", s.Off, s.Len)
		}
		return nil
	}
	var hdr [eventHeaderSize]byte
	if _, err := f.r.ReadAt(hdr[:], s.DataOff()); err != nil {
		return err
	}
	s.Strtab = cstring(hdr[:nameSize])
	s.Count = f.ByteOrder.Uint32(hdr[nameSize:])
	s.TicksPerSecond = f.ByteOrder.Uint32(hdr[nameSize+4:])
	es := &eventSection{sec: *s, index: index, dataOff: s.DataOff() + eventHeaderSize}
	room := (s.Len - eventHeaderSize) / recordSize
	if int64(s.Count) > room {
		f.notice("event section at byte %d declares %d events, its %d bytes hold %d; reading %d", s.Off, s.Count, s.Len, room, room)
	} else {
		room = int64(s.Count)
	}
	present := (avail - eventHeaderSize) / recordSize
	es.n = int(min(room, present))
	if s.TicksPerSecond == 0 {
		f.notice("event section at byte %d has clock_ticks_per_second 0; assuming 1e9", s.Off)
		es.clock = newTickClock(1e9)
	} else {
		es.clock = newTickClock(uint64(s.TicksPerSecond))
	}
	es.strtab, es.hasTab = f.strtabs[s.Strtab]
	if !es.hasTab {
		f.notice("event section at byte %d names string table %q, which the file lacks; its %%s datums are shown as numbers", s.Off, s.Strtab)
	}
	if err := f.scan(es); err != nil {
		return err
	}
	f.events = append(f.events, es)
	return nil
}

// scan reads an event section once to find its first time and whether
// its times ever decrease; an unsorted section is loaded and sorted.
func (f *File) scan(es *eventSection) error {
	buf := make([]byte, min(chunkBytes, es.n*recordSize))
	big := f.ByteOrder == binary.ByteOrder(binary.BigEndian)
	var prev uint64
	es.sorted = true
	// Ticks convert to times monotonically, so comparing ticks suffices.
	for i := 0; i < es.n && es.sorted; {
		k := min(len(buf)/recordSize, es.n-i)
		b := buf[:k*recordSize]
		if _, err := f.r.ReadAt(b, es.dataOff+int64(i)*recordSize); err != nil {
			return err
		}
		if i == 0 {
			prev = recordTicks(b, big)
			es.first = es.clock.time(prev)
		}
		// Four records a step, with one test of their order (the loop's
		// cost is the compares: the bytes are the read's, in the cache);
		// the records after the last four, or from four out of order on,
		// one by one.
		j := 0
		for ; j+4*recordSize <= len(b); j += 4 * recordSize {
			r := b[j : j+4*recordSize]
			t0, t1 := recordTicks(r, big), recordTicks(r[recordSize:], big)
			t2, t3 := recordTicks(r[2*recordSize:], big), recordTicks(r[3*recordSize:], big)
			if t0 < prev || t1 < t0 || t2 < t1 || t3 < t2 {
				break
			}
			prev = t3
		}
		for ; j+8 <= len(b); j += recordSize {
			t := recordTicks(b[j:], big)
			if t < prev {
				es.sorted = false
				break
			}
			prev = t
		}
		i += k
	}
	if es.sorted {
		return nil
	}
	if es.n > MaxUnsortedEvents {
		return formatErr(es.sec.Off, fmt.Sprintf("event section with %d events is not in time order; this reader sorts at most %d", es.n, MaxUnsortedEvents), trace.ErrUnsupported)
	}
	f.notice("event section at byte %d is not in time order; sorted by time", es.sec.Off)
	recs := make([]sortedRecord, 0, es.n)
	for i := 0; i < es.n; {
		k := min(len(buf)/recordSize, es.n-i)
		b := buf[:k*recordSize]
		if _, err := f.r.ReadAt(b, es.dataOff+int64(i)*recordSize); err != nil {
			return err
		}
		for j := 0; j < len(b); j += recordSize {
			rec := f.record(b[j:])
			recs = append(recs, sortedRecord{time: es.clock.time(rec.Ticks), index: uint32(i + j/recordSize), track: rec.Track, code: rec.Code, datum: rec.Datum})
		}
		i += k
	}
	sortRecords(recs)
	es.sortedAt = recs
	es.first = recs[0].time
	return nil
}

// recordTicks returns the ticks of the record at b's start, in a
// big-endian file or a little-endian one (whose two 32-bit halves are
// each little-endian, the high one first).
func recordTicks(b []byte, big bool) uint64 {
	if big {
		return binary.BigEndian.Uint64(b)
	}
	return uint64(binary.LittleEndian.Uint32(b))<<32 | uint64(binary.LittleEndian.Uint32(b[4:]))
}

func (f *File) record(b []byte) Record {
	_ = b[recordSize-1]
	bo := f.ByteOrder
	return Record{
		Ticks: uint64(bo.Uint32(b))<<32 | uint64(bo.Uint32(b[4:])),
		Track: bo.Uint32(b[8:]),
		Code:  bo.Uint32(b[12:]),
		Datum: bo.Uint32(b[16:]),
	}
}

// Events returns the records of event section i (an index into the
// event sections, in file order) in file order. It reads the whole
// section; it is meant for tests and tools on small files.
func (f *File) Events(i int) ([]Record, error) {
	es := f.events[i]
	buf := make([]byte, es.n*recordSize)
	if _, err := f.r.ReadAt(buf, es.dataOff); err != nil {
		return nil, err
	}
	recs := make([]Record, es.n)
	for j := range recs {
		recs[j] = f.record(buf[j*recordSize:])
	}
	return recs, nil
}

// EventSections returns the event sections in file order.
func (f *File) EventSections() []Section {
	s := make([]Section, len(f.events))
	for i, es := range f.events {
		s[i] = es.sec
	}
	return s
}

// String returns the string at off in the named string table.
func (f *File) String(table string, off uint32) (string, bool) {
	tab, ok := f.strtabs[table]
	if !ok {
		return "", false
	}
	return lookup(tab, off)
}

// DateTime returns file_date as a time.
func (f *File) DateTime() time.Time { return time.Unix(int64(f.Date), 0).UTC() }
