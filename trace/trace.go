// Package trace is the format-neutral model of a trace file that every reader
// fills and that render/ and web/ consume.
//
// # Design
//
// A trace is read once, front to back, by a [Reader] that a format package
// (trace/nettrace, trace/cpel, trace/elog, trace/perf) returns from its
// [Format].Open. ReadEvent hands out small [Event] values in time order; an
// event names its track, type, stack and labels by dense ids into tables
// that the reader grows as it goes ([Meta], [Reader.Stack], [Reader.Labels]).
// Payloads stay in the file: an event records where its payload lies
// ([Loc]) and [Reader.Details] decodes fields on demand, so a consumer can
// index millions of events without holding their payloads.
//
// Readers stream: their memory is bounded by a block (or a sequence-point
// region where events must be sorted) plus the tables, never by the file.
//
// # Security
//
// Readers are meant for untrusted input. Every size and count read from a
// file is checked against the bytes that remain before anything is
// allocated, and damaged input yields the events before the damage followed
// by a [*FormatError] naming the byte offset.
package trace

import (
	"math/bits"
	"strconv"
	"time"
)

// Time is a point on the trace's timeline in nanoseconds since the trace's
// time origin (see [Clock]). It may be negative for events before the origin.
type Time int64

// Sub returns the duration t-u.
func (t Time) Sub(u Time) time.Duration { return time.Duration(t - u) }

// Clock converts a format's raw ticks to [Time] and to wall-clock time.
type Clock struct {
	// TicksPerSecond is the frequency of the raw timestamps; never 0 in a
	// Meta returned by a reader.
	TicksPerSecond uint64
	// OriginTicks is the raw tick count that maps to Time 0 (NetTrace:
	// SyncTimeQPC; CPEL, perf: 0).
	OriginTicks int64
	// Wall is the wall-clock time at Time 0; the zero time.Time when the
	// trace does not know wall-clock time.
	Wall time.Time
}

// Time converts raw ticks to nanoseconds since the origin without
// overflowing for any tick value and frequency.
func (c Clock) Time(ticks int64) Time {
	f := c.TicksPerSecond
	if f == 0 || f == 1e9 {
		return Time(ticks - c.OriginTicks)
	}
	d := ticks - c.OriginTicks
	neg := d < 0
	u := uint64(d)
	if neg {
		u = uint64(-d)
	}
	hi, lo := bits.Mul64(u, 1e9)
	if hi >= f { // quotient would not fit in 64 bits: saturate
		if neg {
			return Time(-1 << 63)
		}
		return Time(1<<63 - 1)
	}
	q, _ := bits.Div64(hi, lo, f)
	if neg {
		return -Time(q)
	}
	return Time(q)
}

// WallTime returns the wall-clock time of t and whether the trace knows it.
func (c Clock) WallTime(t Time) (time.Time, bool) {
	if c.Wall.IsZero() {
		return time.Time{}, false
	}
	return c.Wall.Add(time.Duration(t)), true
}

// TrackID identifies a track: an index into [Meta].Tracks.
type TrackID int32

// NoTrack is the track of an event that belongs to none.
const NoTrack TrackID = -1

// TrackKind says what a track stands for. The set may grow.
type TrackKind uint8

const (
	TrackBad     TrackKind = iota
	TrackThread            // an OS thread
	TrackCPU               // a processor
	TrackProcess           // a process as a whole
	TrackOther             // a format-defined track (CPEL and elog tracks)
)

var trackKindNames = [...]string{"bad", "thread", "cpu", "process", "track"}

func (k TrackKind) String() string {
	if int(k) < len(trackKindNames) {
		return trackKindNames[k]
	}
	return "TrackKind(" + itoa(int64(k)) + ")"
}

// Track is one row of the timeline.
type Track struct {
	Kind   TrackKind
	Name   string  // display name; may be empty
	PID    int64   // OS process id, or -1
	TID    int64   // OS thread id, or -1
	CPU    int32   // processor number for TrackCPU, or -1
	Parent TrackID // the process track a thread belongs to, or NoTrack
	Code   int64   // the format's own id for this track (CPEL track number, v6 thread index)
	// Names are the track's earlier names, oldest first, when it was
	// renamed (a thread that exec'd or set a new comm); Name is the latest.
	Names []string
}

// TypeID identifies an event type: an index into [Meta].Types.
type TypeID int32

// EventType describes a kind of event.
type EventType struct {
	Provider string // NetTrace provider, perf tracepoint system or EventHeader provider; empty for CPEL/elog
	Name     string // event name; may be empty when the file does not say
	ID       int64  // numeric id or code (NetTrace event id, CPEL event code, tracefs id)
	Version  int
	Level    int
	Opcode   int
	Keywords uint64
	// Fields is the payload's schema as the file (or a known schema table)
	// describes it; nil when unknown.
	Fields []FieldSpec
	// Message is an optional message template or print format.
	Message string
}

// FieldSpec describes one payload field.
type FieldSpec struct {
	Name   string
	Type   string      // the format's type name, e.g. "uint32", "string", "struct"
	Fields []FieldSpec // members of a struct, or the element of an array
}

// StackID identifies a stack: an argument to [Reader.Stack]. Stacks are
// deduplicated by the reader.
type StackID int32

// NoStack is the stack of an event that has none.
const NoStack StackID = 0

// LabelsID identifies a list of labels (activity ids, key/values): an
// argument to [Reader.Labels].
type LabelsID int32

// NoLabels is the empty label list.
const NoLabels LabelsID = 0

// NoCPU is the processor of an event that does not say.
const NoCPU int32 = -1

// Loc is a byte range of the file.
type Loc struct {
	Off int64
	Len int32
}

// Event is one event of a trace. It is a small value; what it carries
// beyond its header is decoded on demand by [Reader.Details].
type Event struct {
	Time    Time
	Track   TrackID
	Type    TypeID
	Seq     uint32  // sequence number, 0 when the format has none
	Capture TrackID // the thread that wrote the event when it differs from Track (NetTrace sampler), else NoTrack
	CPU     int32   // processor number or NoCPU
	Stack   StackID
	Labels  LabelsID
	Payload Loc
}

// Label is one label of an event: an activity id, a span id, a key/value.
type Label struct {
	Key   string // "ActivityId", "RelatedActivityId", "TraceId", "SpanId", or the label's own key
	Value Value
}

// Frame is one resolved stack frame.
type Frame struct {
	Addr   uint64
	Module string // may be empty
	Func   string // may be empty when unresolved
}

// Details is what an event carries beyond its header, decoded from the
// file on demand.
type Details struct {
	Fields []Field
	// Label is the one-line text the timeline shows for the event (g2's
	// popup text).
	Label string
	// Raw is the payload as stored in the file.
	Raw []byte
}

// Gap is a run of events the trace says were lost.
type Gap struct {
	Time  Time    // where the loss was noticed
	Track TrackID // the thread or CPU that lost them, or NoTrack
	Count int64
}

// MarkerKind says what a [Marker] is. The set may grow.
type MarkerKind uint8

const (
	MarkerBad           MarkerKind = iota
	MarkerSequencePoint            // NetTrace sequence point
	MarkerRound                    // perf.data finished round
	MarkerSection                  // start of a CPEL event section
)

// Marker is a point of the file's structure on the timeline, with the file
// offset where reading could resume.
type Marker struct {
	Kind MarkerKind
	Time Time
	Off  int64
}

// KeyValue is one fact about the trace as a whole (process command line,
// host name, OS...).
type KeyValue struct {
	Key, Value string
}

// Meta is what a reader knows about the trace. Readers grow its tables while
// events are read; it is complete once ReadEvent has returned io.EOF or an
// error.
type Meta struct {
	Format      string // "nettrace", "netperf", "cpel", "elog", "perf"
	Version     int    // the format's major version
	PointerSize int    // 4 or 8; 0 when the format does not say
	Clock       Clock
	Info        []KeyValue
	Tracks      []Track     // indexed by TrackID
	Types       []EventType // indexed by TypeID
	Lost        []Gap
	Markers     []Marker
	// Notices are things the user should know that did not stop reading
	// (skipped sections, unknown block kinds).
	Notices []string
	// Has says which event-header facts the format records, so that
	// output can leave out keys the format does not know.
	Has Header
}

// Header is a set of event-header facts a format may record.
type Header uint16

const (
	HasVersion  Header = 1 << iota // EventType.Version
	HasLevel                       // EventType.Level
	HasOpcode                      // EventType.Opcode
	HasKeywords                    // EventType.Keywords
	HasSeq                         // Event.Seq
	HasCPU                         // Event.CPU
	HasProvider                    // EventType.Provider
)

// Growing is implemented by an io.ReaderAt whose bytes are still arriving
// (trace/follow): its reads past Available wait for more. A reader that
// reads ahead reads no further than Available, so that it hands out the
// events it has instead of waiting for bytes it does not need yet.
type Growing interface {
	Available() int64
}

// Reader streams the events of one trace in time order.
type Reader interface {
	// Meta returns the reader's tables. The pointer stays the same; its
	// contents grow while events are read.
	Meta() *Meta
	// ReadEvent returns the next event in time order. It returns io.EOF at
	// the end of a complete trace; on damaged input it returns the events
	// that precede the damage, then a *FormatError (errors.Is ErrTruncated
	// when the file is cut short).
	ReadEvent() (Event, error)
	// Stack returns the addresses of a stack, leaf first; nil for NoStack
	// or an unknown id.
	Stack(StackID) []uint64
	// Labels returns a label list; nil for NoLabels or an unknown id.
	Labels(LabelsID) []Label
	// Details decodes an event's payload from the file. It is safe for
	// concurrent use with other Details calls once reading has finished.
	Details(Event) (Details, error)
}

// PayloadDecoder is implemented by readers whose events' details can be
// decoded from their payload bytes alone, on any goroutine, while reading
// goes on (CPEL, NetTrace, perf.data). The tables of such a reader's Meta
// only grow or are replaced: an entry that a copy of Meta may hold is
// never changed in place (a reader that renames a track copies the table
// first), so a copy of Meta taken after an event was read describes that
// event for good; the slices Stack and Labels return never change either.
// `viewer dump` uses it to format events on every core.
type PayloadDecoder interface {
	// ReadEventPayload reads the next event into *e, as ReadEvent returns
	// it, and appends its payload bytes as stored in the file to dst. (The
	// event is read into place: copying a just-built event costs more than
	// reading it.)
	ReadEventPayload(e *Event, dst []byte) ([]byte, error)
	// AppendPayloadDetails is AppendDetails for an event returned by
	// ReadEventPayload, given its payload bytes. It is safe for concurrent
	// use with itself and with ReadEventPayload.
	AppendPayloadDetails(fields []Field, label []byte, e Event, payload []byte) ([]Field, []byte, error)
}

// DetailsAppender is implemented by readers that can decode an event's
// details into storage the caller owns, without allocating: for consumers
// that format millions of events (`viewer dump`, see
// viewer/trace/export's Encoder.AppendEvent).
type DetailsAppender interface {
	// AppendDetails appends the fields and the label text that Details
	// would return for e to fields and label, and returns both.
	AppendDetails(fields []Field, label []byte, e Event) ([]Field, []byte, error)
}

// String renders a frame as PerfView does: module!function, ?!function
// when the module is unknown, or the address when the function is.
func (f Frame) String() string {
	addr := "0x" + strconv.FormatUint(f.Addr, 16)
	switch {
	case f.Func != "" && f.Module != "":
		return f.Module + "!" + f.Func
	case f.Func != "":
		return "?!" + f.Func
	case f.Module != "":
		return f.Module + "!" + addr
	}
	return addr
}

// FieldsDecoder is implemented by readers that can decode chosen payload
// fields of an event without decoding the others, so that a query naming
// one field of a type decodes that field only (render.Matcher).
type FieldsDecoder interface {
	// DecodeFields stores in vals[i] the value of the top-level payload
	// field idx[i] of e's type (an index into its EventType.Fields): the
	// value Details gives the field of that name, or the zero Value
	// (KindBad) when Details gives no such field. len(vals) must equal
	// len(idx). It returns an error when Details would, and is safe for
	// concurrent use once reading has finished.
	DecodeFields(e Event, idx []int, vals []Value) error
}
