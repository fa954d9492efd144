package elog

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"viewer/trace"
	"viewer/trace/vppfmt"
)

// Format is the elog [trace.Format].
type Format struct{}

// Name returns "elog".
func (Format) Name() string { return "elog" }

// Match reports whether head starts with the elog magic.
func (Format) Match(head []byte) bool { return Match(head) }

// Open returns a reader for the elog file r of size bytes.
func (Format) Open(r io.ReaderAt, size int64) (trace.Reader, error) {
	f, err := NewFile(r, size)
	if err != nil {
		return nil, err
	}
	return NewReader(f), nil
}

func sortIndex(idx []indexEntry) {
	slices.SortStableFunc(idx, func(a, b indexEntry) int { return cmp.Compare(a.time, b.time) })
}

// argNames are the field names of arguments: arg0, arg1…
var argNames = func() (n [maxArgs]string) {
	for i := range n {
		n[i] = "arg" + strconv.Itoa(i)
	}
	return n
}()

// eventHeaderSize is the fixed part of an event: type, track, time.
const eventHeaderSize = 2 + 2 + 8

// Reader is the [trace.Reader] of an elog file.
type Reader struct {
	f       *File
	meta    trace.Meta
	printer vppfmt.Printer
	d       *decoder // the event stream, for a sorted file
	i       int      // events returned
	// extra maps track indexes the file does not define to their tracks.
	extra map[uint16]trace.TrackID
	err   error
}

// NewReader returns a reader over f's events.
func NewReader(f *File) *Reader {
	r := &Reader{f: f, printer: vppfmt.Printer{Dialect: vppfmt.VPP}}
	m := &r.meta
	m.Format = "elog"
	m.Clock = trace.Clock{TicksPerSecond: 1e9, Wall: f.InitTime.Wall()}
	m.Info = []trace.KeyValue{
		{Key: "init_time", Value: f.InitTime.Wall().Format("2006-01-02T15:04:05.999999999Z")},
		{Key: "serialize_time", Value: f.SerializeTime.Wall().Format("2006-01-02T15:04:05.999999999Z")},
		{Key: "ring_size", Value: strconv.FormatUint(uint64(f.RingSize), 10)},
		{Key: "events", Value: strconv.FormatUint(uint64(f.NumEvents), 10)},
		{Key: "string_table_bytes", Value: strconv.Itoa(len(f.StringTable))},
	}
	m.Notices = slices.Clone(f.Notices)
	for i, name := range f.Tracks {
		m.Tracks = append(m.Tracks, trace.Track{
			Kind: trace.TrackOther, Name: name, PID: -1, TID: -1, CPU: trace.NoCPU, Parent: trace.NoTrack, Code: int64(i),
		})
	}
	for i, t := range f.Types {
		et := trace.EventType{Name: typeName(t.Format), ID: int64(i) + 1, Message: t.Format}
		for j, a := range t.Args {
			et.Fields = append(et.Fields, trace.FieldSpec{Name: argNames[j], Type: a.String()})
		}
		m.Types = append(m.Types, et)
	}
	if f.sorted {
		r.d = newDecoder(f.r, f.EventsOff, f.size)
	}
	return r
}

// typeName names an event type as c2cpel does: its format up to the first
// space, '(' or '%' ("rx(%d): %d" is "rx"); the whole format when that is
// empty (NOTES.md §types).
func typeName(format string) string {
	if i := strings.IndexAny(format, " (%"); i > 0 {
		return format[:i]
	}
	return format
}

// File returns the parsed file.
func (r *Reader) File() *File { return r.f }

// Meta returns the reader's tables.
func (r *Reader) Meta() *trace.Meta { return &r.meta }

// Stack returns nil: elog events have no stacks.
func (r *Reader) Stack(trace.StackID) []uint64 { return nil }

// Labels returns nil: elog events have no labels.
func (r *Reader) Labels(trace.LabelsID) []trace.Label { return nil }

func (r *Reader) track(i uint16) trace.TrackID {
	if int(i) < len(r.f.Tracks) {
		return trace.TrackID(i)
	}
	if t, ok := r.extra[i]; ok {
		return t
	}
	if r.extra == nil {
		r.extra = map[uint16]trace.TrackID{}
	}
	t := trace.TrackID(len(r.meta.Tracks))
	r.meta.Tracks = append(r.meta.Tracks, trace.Track{
		Kind: trace.TrackOther, Name: "track " + strconv.Itoa(int(i)), PID: -1, TID: -1, CPU: trace.NoCPU, Parent: trace.NoTrack, Code: int64(i),
	})
	r.meta.Notices = append(r.meta.Notices, fmt.Sprintf("events on track %d, which the file does not define", i))
	r.extra[i] = t
	return t
}

// ReadEvent returns the next event in time order.
func (r *Reader) ReadEvent() (trace.Event, error) {
	if r.err != nil {
		return trace.Event{}, r.err
	}
	if r.i >= r.f.n {
		r.err = io.EOF
		if r.f.damage != nil {
			r.err = r.f.damage
		}
		return trace.Event{}, r.err
	}
	d := r.d
	if d == nil { // unsorted: read at the next index entry
		d = newDecoderSize(r.f.r, r.f.index[r.i].off, r.f.size, 512)
	}
	at := d.off
	h, _ := r.f.readEvent(d, false, nil)
	if d.err != nil { // the scan read this event; the file changed since
		r.err = d.err
		return trace.Event{}, r.err
	}
	r.i++
	return trace.Event{
		Time:    nsTime(h.time),
		Track:   r.track(h.track),
		Type:    trace.TypeID(h.typ),
		Capture: trace.NoTrack,
		CPU:     trace.NoCPU,
		Payload: trace.Loc{Off: at + eventHeaderSize, Len: int32(d.off - at - eventHeaderSize)},
	}, nil
}

// Details decodes an event's arguments (fields arg0, arg1…: integers,
// floats, strings; enum and string-table arguments as their strings) and
// its text as elog_dump and g2 show it.
func (r *Reader) Details(e trace.Event) (trace.Details, error) {
	if e.Type < 0 || int(e.Type) >= len(r.f.Types) || e.Payload.Len < 0 || e.Payload.Off < eventHeaderSize {
		return trace.Details{}, fmt.Errorf("elog: event %+v is not from this reader", e)
	}
	// Read the event again, header included, so that the type is checked:
	// from the reader's window when it holds it, else from the file.
	start, end := e.Payload.Off-eventHeaderSize, e.Payload.Off+int64(e.Payload.Len)
	var d decoder
	if w := r.d; w != nil && start >= w.bufOff && end <= w.bufOff+int64(len(w.buf)) {
		d = memDecoder(w.buf[start-w.bufOff:end-w.bufOff], start)
	} else {
		b := make([]byte, end-start)
		if _, err := r.f.r.ReadAt(b, start); err != nil {
			return trace.Details{}, err
		}
		d = memDecoder(b, start)
	}
	var argBuf [8]argValue
	h, args := r.f.readEvent(&d, true, argBuf[:0])
	if d.err != nil {
		return trace.Details{}, d.err
	}
	if int(h.typ) != int(e.Type) {
		return trace.Details{}, fmt.Errorf("elog: event at byte %d has type %d, not %d", e.Payload.Off-eventHeaderSize, h.typ, e.Type)
	}
	t := &r.f.Types[h.typ]
	fields := make([]trace.Field, len(args))
	for i, a := range args {
		fields[i] = trace.Field{Name: argNames[i], Value: r.value(t, t.Args[i], a)}
	}
	return trace.Details{Fields: fields, Label: string(r.appendText(nil, t, args))}, nil
}

// value returns an argument as a field value.
func (r *Reader) value(t *EventType, a Arg, v argValue) trace.Value {
	switch a.Kind {
	case ArgFloat:
		return trace.FloatValue(v.f)
	case ArgString:
		return trace.StringValue(v.s)
	case ArgEnum:
		if v.n < uint64(len(t.Enums)) {
			return trace.StringValue(t.Enums[v.n])
		}
	case ArgStrtab:
		if s, ok := r.strtab(v.n); ok {
			return trace.StringValue(s)
		}
	}
	return trace.UintValue(v.n)
}

func (r *Reader) strtab(off uint64) (string, bool) {
	st := r.f.StringTable
	if off >= uint64(len(st)) {
		return "", false
	}
	s := st[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s), true
}

// arg converts an argument for the formatter as format_elog_event passes
// it: integers as u32 (u64 for 8-byte ones), enum and string-table
// arguments as strings, a string argument cut to its in-memory width.
func (r *Reader) arg(t *EventType, a Arg, v argValue) vppfmt.Arg {
	switch a.Kind {
	case ArgFloat:
		return vppfmt.Float(v.f)
	case ArgString:
		s := v.s
		if a.Bytes > 0 && len(s) > a.Bytes {
			s = s[:a.Bytes]
		}
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		return vppfmt.String(s)
	case ArgEnum:
		if v.n < uint64(len(t.Enums)) {
			return vppfmt.String(t.Enums[v.n])
		}
	case ArgStrtab:
		if s, ok := r.strtab(v.n); ok {
			return vppfmt.String(s)
		}
	}
	if a.Bytes == 8 {
		return vppfmt.Uint(v.n, 64)
	}
	return vppfmt.Uint(v.n, 32)
}

// appendText appends an event's text as vppinfra's format_elog_event
// makes it: the format is cut into literal text and one directive per
// argument; each directive is rendered with its argument. Text after the
// last argument's directive is kept up to the next directive. "%%" stays
// "%%", as vppinfra leaves it (NOTES.md §text).
func (r *Reader) appendText(dst []byte, t *EventType, args []argValue) []byte {
	f := t.Format
	start := len(dst)
	for ai := 0; ; ai++ {
		lit, dir, rest := splitDirective(f)
		dst = append(dst, lit...)
		if ai >= len(args) || ai >= len(t.Args) || dir == "" {
			break
		}
		dst = r.printer.Append(dst, dir, r.arg(t, t.Args[ai], args[ai]))
		f = rest
		if len(dst)-start > vppfmt.MaxOutput {
			return dst[:start+vppfmt.MaxOutput]
		}
	}
	return dst
}

// splitDirective splits f as vppinfra's fixed_format does: literal text
// up to the first '%' not followed by '%', the directive ('%', one of
// "+-=", digits and dots, one of "wlL", one letter), and the rest.
func splitDirective(f string) (lit, dir, rest string) {
	i := 0
	for i < len(f) && !(f[i] == '%' && (i+1 >= len(f) || f[i+1] != '%')) {
		if f[i] == '%' {
			i++ // "%%" is literal, both characters
		}
		i++
	}
	i = min(i, len(f))
	lit = f[:i]
	if i >= len(f) {
		return lit, "", ""
	}
	j := i + 1
	if j < len(f) && strings.IndexByte("+-=", f[j]) >= 0 {
		j++
	}
	for j < len(f) && (f[j] >= '0' && f[j] <= '9' || f[j] == '.') {
		j++
	}
	if j < len(f) && strings.IndexByte("wlL", f[j]) >= 0 {
		j++
	}
	if j < len(f) {
		j++
	}
	return lit, f[i:j], f[j:]
}
