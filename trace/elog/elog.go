// Package elog reads VPP event logs: the files vppinfra's elog_write_file
// writes (VPP CLI "event-logger save"), which g2 reads as "clib" files and
// elog_dump prints.
//
// # Format
//
// The file is vppinfra's serialization of an elog_main_t, an unframed
// stream parsed front to back: magic "elog v0", ring size, two time stamps
// (when the file was written and when logging started), the event types
// (printf-style format, argument kinds such as "i4T4f8s20", enum strings),
// the track names, a string table, then the events: type, track, time in
// seconds since logging started (an f64) and the arguments. Integers are
// big-endian except "likely small" lengths (1, 2, 4 or 9 bytes,
// little-endian payload) and 64-bit values, written low word first.
//
// # Design
//
// [NewFile] reads everything up to the events and scans the events once to
// check that their times never decrease (the writer sorts them; a file
// that is not sorted is indexed and read in time order, within
// [MaxUnsortedEvents]). The reader then streams events through a buffer;
// [Reader.Details] decodes an event's arguments again from the file and
// renders its text as vppinfra's format_elog_event does.
//
// NOTES.md in this directory records what the files and vppinfra's source
// show that no document says; comments cite it as "NOTES.md §name".
//
// # Security
//
// Files are untrusted: every count and length is checked against the
// bytes that remain before anything is allocated, strings are capped at
// [MaxString], and damage yields the events before it followed by a
// [*trace.FormatError] naming the byte offset.
package elog

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"viewer/trace"
)

// Magic is the serialized magic: a big-endian length 7, then "elog v0".
const Magic = "\x00\x00\x00\x07elog v0"

// Limits on what a file may make the reader hold.
const (
	// MaxString caps one serialized string.
	MaxString = 1 << 20
	// MaxUnsortedEvents caps a file whose event times decrease: such a
	// file is indexed (16 bytes per event) and read in time order.
	MaxUnsortedEvents = 1 << 24
	// maxArgs caps the argument tokens of one event type; the in-memory
	// event holds 20 bytes, so real types have at most 20.
	maxArgs = 32
)

// epoch2017 is the origin of os_nsec in current vppinfra (elog.c
// elog_time_now subtracts 1490885108 seconds); older files count from the
// Unix epoch (NOTES.md §time).
const epoch2017 = 1490885108

// ArgKind is the kind of one event argument, from its format_args token.
type ArgKind byte

// Argument kinds, named by their format_args letter.
const (
	ArgInt    ArgKind = 'i' // integer of 1, 2, 4 or 8 bytes
	ArgEnum   ArgKind = 't' // integer index into the type's enum strings
	ArgStrtab ArgKind = 'T' // integer offset into the log's string table
	ArgFloat  ArgKind = 'f' // f32 or f64
	ArgString ArgKind = 's' // counted string; the width is only in memory
)

// Arg is one format_args token.
type Arg struct {
	Kind  ArgKind
	Bytes int // the in-memory width: 1, 2, 4, 8 for numbers; 0 or more for strings
}

func (a Arg) String() string { return string(a.Kind) + strconv.Itoa(a.Bytes) }

// EventType is one event type of the log.
type EventType struct {
	Format     string // e.g. "rx(%d): %d"
	FormatArgs string // e.g. "i4i4"
	Args       []Arg  // FormatArgs parsed; nil when it does not parse
	ArgsErr    string // why FormatArgs does not parse
	IndexPlus1 uint32 // type_index_plus_one as stored
	Enums      []string
}

// TimeStamp is one of the header's time stamps.
type TimeStamp struct {
	OSNsec uint64 // wall clock in ns, since 2017-03-30 14:45:08 UTC (older files: since 1970)
	CPU    uint64 // CPU time stamp counter
}

// Wall returns the wall-clock time of the stamp.
func (t TimeStamp) Wall() time.Time {
	ns := int64(min(t.OSNsec, math.MaxInt64))
	if t.OSNsec < 1e18 { // after 2048 in the 2017 epoch, after 2001 in the Unix one
		return time.Unix(epoch2017, 0).Add(time.Duration(ns)).UTC()
	}
	return time.Unix(0, ns).UTC()
}

// File is a parsed elog file header: everything before the events.
type File struct {
	RingSize      uint32
	SerializeTime TimeStamp
	InitTime      TimeStamp
	Types         []EventType
	Tracks        []string
	StringTable   []byte
	NumEvents     uint32
	// EventsOff is the offset of the first event.
	EventsOff int64
	Notices   []string

	r      io.ReaderAt
	size   int64
	sorted bool
	index  []indexEntry // events in time order when !sorted
	n      int          // complete events before damage
	damage error        // what ended the scan early
}

// indexEntry locates one event of an unsorted file.
type indexEntry struct {
	time trace.Time
	off  int64
}

func formatErr(off int64, msg string, err error) *trace.FormatError {
	return &trace.FormatError{Format: "elog", Off: off, Msg: msg, Err: err}
}

// decoder reads the serialized stream with a sticky error, through a
// window of the file that it refills with ReadAt.
type decoder struct {
	r      io.ReaderAt // nil for a decoder over bytes already in memory
	buf    []byte      // the window: file bytes [bufOff, bufOff+len(buf))
	bufOff int64
	pos    int   // read position in buf
	off    int64 // bufOff+pos
	size   int64 // end of the readable data
	chunk  int   // bytes per refill
	err    error
}

func newDecoder(r io.ReaderAt, off, size int64) *decoder {
	return newDecoderSize(r, off, size, 1<<16)
}

func newDecoderSize(r io.ReaderAt, off, size int64, chunk int) *decoder {
	return &decoder{r: r, bufOff: off, off: off, size: size, chunk: chunk}
}

// memDecoder decodes b, which holds the file's bytes from off.
func memDecoder(b []byte, off int64) decoder {
	return decoder{buf: b, bufOff: off, off: off, size: off + int64(len(b))}
}

func (d *decoder) fail(msg string, err error) {
	if d.err == nil {
		d.err = formatErr(d.off, msg, err)
	}
}

// need makes n bytes available at pos, or fails with a truncation error.
func (d *decoder) need(n int, what string) bool {
	if d.err != nil {
		return false
	}
	if d.pos+n <= len(d.buf) {
		return true
	}
	if d.r == nil || int64(n) > d.size-d.off {
		d.fail(what, trace.ErrTruncated)
		return false
	}
	keep := len(d.buf) - d.pos
	want := max(d.chunk, n)
	nb := d.buf[:0]
	if cap(nb) < want {
		nb = make([]byte, 0, want)
	}
	nb = nb[:keep]
	copy(nb, d.buf[d.pos:])
	k := int(min(int64(want-keep), d.size-d.off-int64(keep)))
	nb = nb[:keep+k]
	if _, err := d.r.ReadAt(nb[keep:], d.off+int64(keep)); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			d.fail(what, trace.ErrTruncated)
		} else {
			d.err = err
		}
		return false
	}
	d.buf, d.bufOff, d.pos = nb, d.off, 0
	return true
}

// take returns the next n bytes (valid until the next read).
func (d *decoder) take(n int, what string) []byte {
	if !d.need(n, what) {
		return nil
	}
	b := d.buf[d.pos : d.pos+n]
	d.pos += n
	d.off += int64(n)
	return b
}

func (d *decoder) u8(what string) uint8 {
	b := d.take(1, what)
	if b == nil {
		return 0
	}
	return b[0]
}

func (d *decoder) u16(what string) uint16 {
	b := d.take(2, what)
	if b == nil {
		return 0
	}
	return uint16(b[0])<<8 | uint16(b[1])
}

func (d *decoder) u32(what string) uint32 {
	b := d.take(4, what)
	if b == nil {
		return 0
	}
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// u64 reads serialize_64: the low word, then the high word
// (NOTES.md §encoding).
func (d *decoder) u64(what string) uint64 {
	lo := d.u32(what)
	hi := d.u32(what)
	return uint64(hi)<<32 | uint64(lo)
}

// small reads a "likely small" unsigned integer (NOTES.md §encoding).
func (d *decoder) small(what string) uint64 {
	b0 := d.u8(what)
	switch {
	case d.err != nil:
		return 0
	case b0&1 != 0:
		return uint64(b0 >> 1)
	case b0&2 != 0:
		b1 := d.u8(what)
		return 1<<7 + uint64(b0>>2) + uint64(b1)<<6
	case b0&4 != 0:
		b := d.take(3, what)
		if b == nil {
			return 0
		}
		return 1<<7 + 1<<14 + uint64(b0>>3) + uint64(b[0])<<5 + uint64(b[1])<<13 + uint64(b[2])<<21
	}
	b := d.take(8, what)
	if b == nil {
		return 0
	}
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// remaining returns the bytes left in the file.
func (d *decoder) remaining() int64 { return d.size - d.off }

// bytes reads n bytes, checking n against what remains first.
func (d *decoder) bytes(n uint64, limit int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(limit) {
		d.fail(fmt.Sprintf("%s of %d bytes, more than the %d this reader accepts", what, n, limit), nil)
		return nil
	}
	if int64(n) > d.remaining() {
		d.fail(fmt.Sprintf("%s of %d bytes, %d left", what, n, d.remaining()), trace.ErrTruncated)
		return nil
	}
	b := make([]byte, n)
	for done := 0; done < len(b); { // in chunks: n may exceed the window
		k := min(len(b)-done, max(d.chunk, 1))
		c := d.take(k, what)
		if c == nil {
			return nil
		}
		done += copy(b[done:], c)
	}
	return b
}

// skip skips n bytes.
func (d *decoder) skip(n uint64, what string) {
	if int64(n) > d.remaining() {
		d.fail(what, trace.ErrTruncated)
		return
	}
	for n > 0 && d.err == nil {
		k := int(min(n, uint64(max(d.chunk, 1))))
		d.take(k, what)
		n -= uint64(k)
	}
}

// cstring reads a counted string (no NUL in the file).
func (d *decoder) cstring(what string) string {
	n := d.small(what)
	if d.err != nil || n == 0 {
		return ""
	}
	return string(d.bytes(n, MaxString, what))
}

// count reads a vector length and checks that count elements of at least
// minSize bytes each fit in what remains.
func (d *decoder) count(minSize int64, what string) int {
	at := d.off
	n := d.u32(what)
	if d.err != nil {
		return 0
	}
	if int64(n)*minSize > d.remaining() {
		d.err = formatErr(at, fmt.Sprintf("%s count %d does not fit in the %d bytes left", what, n, d.remaining()), trace.ErrTruncated)
		return 0
	}
	return int(n)
}

// parseArgs parses format_args: tokens of a letter and one or two digits.
func parseArgs(s string) ([]Arg, error) {
	var args []Arg
	for i := 0; i < len(s); {
		k := ArgKind(s[i])
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
		case ArgInt, ArgEnum, ArgStrtab:
			if n != 1 && n != 2 && n != 4 && n != 8 {
				return nil, fmt.Errorf("argument %q: integer width %d", s[i:j], n)
			}
		case ArgFloat:
			if n != 4 && n != 8 {
				return nil, fmt.Errorf("argument %q: float width %d", s[i:j], n)
			}
		case ArgString:
		default:
			return nil, fmt.Errorf("argument %q: unknown kind", s[i:j])
		}
		if len(args) == maxArgs {
			return nil, fmt.Errorf("more than %d arguments", maxArgs)
		}
		args = append(args, Arg{Kind: k, Bytes: n})
		i = j
	}
	return args, nil
}

// Match reports whether head starts with the elog magic.
func Match(head []byte) bool { return len(head) >= len(Magic) && string(head[:len(Magic)]) == Magic }

// NewFile parses everything before the events and scans the events. It
// fails when the header cannot be read; damage among the events is
// reported by the reader after the events before it.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	f := &File{r: r, size: size}
	d := newDecoder(r, 0, size)
	magic := d.bytes(uint64(len(Magic)), len(Magic), "magic")
	if d.err != nil {
		return nil, d.err
	}
	if string(magic) != Magic {
		return nil, formatErr(0, fmt.Sprintf("magic %q", magic), nil)
	}
	f.RingSize = d.u32("ring size")
	f.SerializeTime = TimeStamp{d.u64("serialize time"), d.u64("serialize time")}
	f.InitTime = TimeStamp{d.u64("init time"), d.u64("init time")}
	n := d.count(10, "event types") // two strings, two u32s
	for range n {
		var t EventType
		t.Format = d.cstring("event type format")
		t.FormatArgs = d.cstring("event type format_args")
		t.IndexPlus1 = d.u32("type_index_plus_one")
		ne := d.count(1, "enum strings")
		for range ne {
			t.Enums = append(t.Enums, d.cstring("enum string"))
		}
		if d.err != nil {
			return nil, d.err
		}
		args, err := parseArgs(t.FormatArgs)
		if err != nil {
			t.ArgsErr = err.Error()
		}
		t.Args = args
		f.Types = append(f.Types, t)
	}
	n = d.count(1, "tracks")
	for range n {
		f.Tracks = append(f.Tracks, d.cstring("track name"))
	}
	n = d.count(1, "string table")
	f.StringTable = d.bytes(uint64(n), math.MaxInt32, "string table")
	f.NumEvents = d.u32("event count")
	if d.err != nil {
		return nil, d.err
	}
	f.EventsOff = d.off
	if err := f.scan(d); err != nil {
		return nil, err
	}
	return f, nil
}

// header is an event's fixed part.
type header struct {
	typ, track uint16
	time       float64
}

// readEvent reads one event: its header and arguments. With decode, the
// arguments are appended to args (strings copied); without, skipped.
func (f *File) readEvent(d *decoder, decode bool, args []argValue) (header, []argValue) {
	var h header
	h.typ = d.u16("event type")
	h.track = d.u16("event track")
	h.time = math.Float64frombits(d.u64("event time"))
	if d.err != nil {
		return h, args
	}
	if int(h.typ) >= len(f.Types) {
		d.fail(fmt.Sprintf("event type %d of %d", h.typ, len(f.Types)), nil)
		return h, args
	}
	t := &f.Types[h.typ]
	if t.ArgsErr != "" {
		d.fail(fmt.Sprintf("event of type %d, whose format_args %q do not parse: %s", h.typ, t.FormatArgs, t.ArgsErr), trace.ErrUnsupported)
		return h, args
	}
	if math.IsNaN(h.time) {
		d.fail("event time is NaN", nil)
		return h, args
	}
	for _, a := range t.Args {
		var v argValue
		switch a.Kind {
		case ArgInt, ArgEnum, ArgStrtab:
			switch a.Bytes {
			case 1:
				v.n = uint64(d.u8("argument"))
			case 2:
				v.n = uint64(d.u16("argument"))
			case 4:
				v.n = uint64(d.u32("argument"))
			case 8:
				v.n = d.u64("argument")
			}
		case ArgFloat:
			if a.Bytes == 4 {
				v.f = float64(math.Float32frombits(d.u32("argument")))
			} else {
				v.f = math.Float64frombits(d.u64("argument"))
			}
		case ArgString:
			if decode {
				v.s = d.cstring("string argument")
			} else {
				n := d.small("string argument")
				if n > MaxString {
					d.fail(fmt.Sprintf("string argument of %d bytes, more than %d", n, MaxString), nil)
				} else {
					d.skip(n, "string argument")
				}
			}
		}
		if decode {
			args = append(args, v)
		}
	}
	return h, args
}

// argValue is one decoded argument.
type argValue struct {
	n uint64
	f float64
	s string
}

// nsTime converts an event's seconds to nanoseconds since logging began.
func nsTime(sec float64) trace.Time {
	ns := math.Round(sec * 1e9)
	switch {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	}
	return trace.Time(ns)
}

// scan reads every event once: it counts the complete events, notes
// damage, and checks the order of their times (NOTES.md §order).
func (f *File) scan(d *decoder) error {
	f.sorted = true
	prev := trace.Time(math.MinInt64)
	var idx []indexEntry
	for i := 0; i < int(f.NumEvents); i++ {
		at := d.off
		h, _ := f.readEvent(d, false, nil)
		if d.err != nil {
			if _, ok := errors.AsType[*trace.FormatError](d.err); !ok {
				return d.err
			}
			f.damage = d.err
			break
		}
		t := nsTime(h.time)
		if t < prev && f.sorted {
			f.sorted = false
			if f.NumEvents > MaxUnsortedEvents {
				return formatErr(at, fmt.Sprintf("%d events not in time order; this reader sorts at most %d", f.NumEvents, MaxUnsortedEvents), trace.ErrUnsupported)
			}
			f.Notices = append(f.Notices, fmt.Sprintf("events are not in time order (event %d at byte %d); sorted by time", i, at))
		}
		prev = max(prev, t)
		if idx != nil || !f.sorted {
			if idx == nil {
				// Index what was read so far: rescan those events.
				var err error
				if idx, err = f.indexPrefix(i); err != nil {
					return err
				}
			}
			idx = append(idx, indexEntry{t, at})
		}
		f.n++
	}
	if d.err == nil && d.off < f.size {
		f.Notices = append(f.Notices, fmt.Sprintf("%d bytes after the last event ignored", f.size-d.off))
	}
	if !f.sorted {
		sortIndex(idx)
		f.index = idx
	}
	return nil
}

// indexPrefix returns the index entries of the first n events.
func (f *File) indexPrefix(n int) ([]indexEntry, error) {
	d := newDecoderSize(f.r, f.EventsOff, f.size, 4096)
	idx := make([]indexEntry, 0, n+1)
	for range n {
		at := d.off
		h, _ := f.readEvent(d, false, nil)
		if d.err != nil {
			return nil, d.err
		}
		idx = append(idx, indexEntry{nsTime(h.time), at})
	}
	return idx, nil
}
