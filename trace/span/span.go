// Package span is the format-neutral model of derived tracks: what a
// trace says happened over time (a request, a syscall, a thread running on
// a CPU, a thread waiting) rather than the instants its events fired at.
//
// # Design
//
// Derived tracks are computed while a trace is indexed, from the same
// events the index reads, in one pass. Knowledge of what pairs with what
// lives in the format's room: trace/perf knows sched_switch and
// sys_enter/sys_exit (perf.NewSched), trace/clr knows EventSource
// Start/Stop activities (clr.NewActivities), trace/perf/eventheader knows
// EventHeader activity opcodes. Each is a [Deriver]: it is shown every
// event in reading order (and may ask the reader for the event's details
// or, inside its own package, for raw payload bytes) and writes slices and
// counter samples into a [Builder]. Several derivers combine with
// [Join]. A deriver that needs the reader only to read what an event
// says (perf.Sched) can be a [Split]: it notes the fields on the reading
// goroutine, and a [Driver] turns the notes into slices on a second
// goroutine while the trace is read on, so that deriving adds little to
// the reading goroutine, which is the one Build waits for. Who picks the
// derivers of a trace is the assembler
// (cmd/viewer's deriver function), exactly as it picks the SymbolSource:
// render.Options.Derive takes the result, render.Build feeds it on the
// reading goroutine and keeps the finished [Set] beside the index, and
// render's interval index (render/spans.go) answers viewport queries over
// it with a level of detail. A deriver for .NET GC pauses and GC slices
// plugs in the same way: a Deriver in trace/clr, added to the list
// cmd/viewer's deriver function joins for .NET traces.
//
// The model is pointer-light so that millions of slices cost the garbage
// collector nothing to scan: a [Slice] names its track, name and
// arguments by dense ids into the [Set]'s tables, and each track keeps
// its slices in a [Column] of fixed-size chunks, 8 to 16 bytes a slice
// (what slices share, a column stores once), that is never copied as it
// grows.
//
// Slices whose end (or start) the trace does not hold are kept, flagged
// [OpenEnd] (or [OpenStart]) and bounded by the last (or first) event of
// the trace: they are shown, never dropped.
//
// # Security
//
// Derivers see untrusted traces. A [Builder] holds at most [MaxSlices]
// slices and [MaxTracks] tracks; past that it drops what comes and counts
// it ([Set].Dropped), so a hostile trace cannot grow the model without
// bound beyond what its events already cost.
package span

import (
	"strconv"

	"viewer/trace"
)

// TrackID identifies a derived track: an index into [Set].Tracks.
type TrackID int32

// NameID identifies a slice name: an index into [Set].Names.
type NameID int32

// ArgsID identifies a slice's argument list: an index into [Set].Args;
// NoArgs is the empty list.
type ArgsID int32

// NoArgs is the empty argument list.
const NoArgs ArgsID = 0

// Kind says what a derived track shows. The set may grow.
type Kind uint8

const (
	KindBad     Kind = iota
	KindSlices       // nested intervals: activities, requests, syscalls
	KindCPU          // the thread running on one processor
	KindState        // one thread's scheduling state over time
	KindCounter      // a numeric value over time
)

var kindNames = [...]string{"bad", "slices", "cpu", "state", "counter"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Track is one derived track.
type Track struct {
	Kind Kind
	// Name is the track's display name ("CPU 1", "syscalls", "activities").
	Name string
	// Of is the trace track the derived one belongs under (the thread of
	// a state or syscall track, the process of a GC track), or
	// trace.NoTrack (CPU tracks).
	Of  trace.TrackID
	CPU int32 // the processor of a KindCPU track, else trace.NoCPU
}

// Flags say which ends of a slice the trace did not hold.
type Flags uint8

const (
	// OpenStart: the slice began before the trace says (a stop without a
	// start, the thread running on a CPU before its first switch); Start
	// is the first time the trace knows of.
	OpenStart Flags = 1 << iota
	// OpenEnd: the slice had not ended when the trace did; End is the
	// last time of the trace.
	OpenEnd
)

// Slice is one interval of a derived track.
type Slice struct {
	Start, End trace.Time
	Track      TrackID
	Name       NameID
	Args       ArgsID
	// Thread is the trace track the slice is about: the thread running
	// (CPU tracks) or the thread that started it; trace.NoTrack if none.
	Thread trace.TrackID
	Depth  uint16 // nesting depth, 0 at the top
	Flags  Flags
}

// Ends names the ends the flags say are missing, as the API and
// `viewer spans` print them: "start", "end", "both", or "" for none.
func (f Flags) Ends() string {
	switch f & (OpenStart | OpenEnd) {
	case OpenStart:
		return "start"
	case OpenEnd:
		return "end"
	case OpenStart | OpenEnd:
		return "both"
	}
	return ""
}

// Open reports whether an end of the slice is missing.
func (s Slice) Open() bool { return s.Flags != 0 }

// Sample is one value of a counter track, holding from Time until the
// track's next sample.
type Sample struct {
	Time  trace.Time
	Track TrackID
	Value float64
}

// Limits of a Builder.
const (
	MaxSlices = 1 << 28
	MaxTracks = 1 << 20
	MaxDepth  = 255 // deeper slices are drawn at MaxDepth
)

// Set is the finished result of derivation: the derived tracks, each
// with its slices sorted by start, then depth, and its counter samples
// sorted by time. A slice is named by its track and its index there.
type Set struct {
	Tracks  []Track
	Names   []string
	Args    [][]trace.Field // Args[NoArgs] is nil
	Dropped int64           // slices, samples or tracks past the limits
	slices  []Column        // by track
	samples [][]Sample      // by track
	nslices int
}

// Name returns a slice's name.
func (s *Set) Name(id NameID) string {
	if id < 0 || int(id) >= len(s.Names) {
		return ""
	}
	return s.Names[id]
}

// ArgList returns an argument list (nil for NoArgs or an unknown id).
func (s *Set) ArgList(id ArgsID) []trace.Field {
	if id <= 0 || int(id) >= len(s.Args) {
		return nil
	}
	return s.Args[id]
}

// Column returns the slices of one track, in start order; nil for an
// unknown track.
func (s *Set) Column(t TrackID) *Column {
	if t < 0 || int(t) >= len(s.slices) {
		return nil
	}
	return &s.slices[t]
}

// TrackSlices returns a copy of the slices of one track, in start order
// (Column reads them without copying).
func (s *Set) TrackSlices(t TrackID) []Slice {
	if t < 0 || int(t) >= len(s.slices) {
		return nil
	}
	return s.slices[t].appendTo(nil)
}

// TrackSamples returns the counter samples of one track, in time order.
func (s *Set) TrackSamples(t TrackID) []Sample {
	if t < 0 || int(t) >= len(s.samples) {
		return nil
	}
	return s.samples[t]
}

// Bytes returns the memory the slices take.
func (s *Set) Bytes() int64 {
	var n int64
	for i := range s.slices {
		n += s.slices[i].bytes()
	}
	return n
}

// Len returns the number of slices of all tracks.
func (s *Set) Len() int { return s.nslices }

// All returns the slices of every track, by track then start (a copy).
func (s *Set) All() []Slice {
	all := make([]Slice, 0, s.nslices)
	for i := range s.slices {
		all = s.slices[i].appendTo(all)
	}
	return all
}

// Deriver derives tracks from a trace's events.
type Deriver interface {
	// Observe is called with every event in reading order, on the
	// goroutine that reads the trace (r may be asked for details).
	Observe(r trace.Reader, e trace.Event, b *Builder)
	// Finish is called once after the last event: it closes what is
	// still open (as OpenEnd slices ending at b.Last()).
	Finish(r trace.Reader, b *Builder)
}

// Selective is a Deriver that needs the events of some types only: Join
// shows it no others, which spares a call per event for each deriver a
// trace's busiest types do not concern. Wants is asked once per type, at
// its first event (for a type outside r.Meta().Types, at every event);
// the answer must not change.
type Selective interface {
	Deriver
	Wants(r trace.Reader, t trace.TypeID) bool
}

// Split is a Deriver whose work on an event divides in two: Note, on
// the goroutine that reads the trace, keeps what the deriver needs of the
// event (from its payload, from the reader's tables); the function Take
// then returns derives from the events noted since the previous Take, in
// order, on another goroutine while the trace is read on, so it must not
// use the reader. Note (and later Takes) may run while functions earlier
// Takes returned run, so Take hands the notes over to its function, and
// the two halves share nothing either changes; the functions run one at
// a time, in the order of their Takes. Observe does both, on the reading
// goroutine. A function that runs on another goroutine may find the
// Builder's Last behind the events it derives from (First is right).
type Split interface {
	Selective
	Note(r trace.Reader, e trace.Event)
	Take() func(b *Builder)
}

// BatchSplit is a Split that notes a run of events in one call: a
// Driver hands it the runs of events between those another kind of
// deriver wants, sparing a call per event. NoteEvents notes, in order,
// the events of evs it wants (Wants) as Note would one by one, and
// skips the others; it must not keep evs.
type BatchSplit interface {
	Split
	NoteEvents(r trace.Reader, evs []trace.Event)
}

// Only returns a Selective that shows d the events of the types want
// accepts.
func Only(want func(trace.TypeID) bool, d Deriver) Selective { return only{d, want} }

type only struct {
	d    Deriver
	want func(trace.TypeID) bool
}

func (o only) Wants(_ trace.Reader, t trace.TypeID) bool { return o.want(t) }

func (o only) Observe(r trace.Reader, e trace.Event, b *Builder) {
	if o.want(e.Type) {
		o.d.Observe(r, e, b)
	}
}

func (o only) Finish(r trace.Reader, b *Builder) { o.d.Finish(r, b) }

// Join returns a Deriver that shows every event to each of ds in turn
// (a Selective one only the events it wants); nil derivers are left out,
// and Join of none is nil.
func Join(ds ...Deriver) Deriver {
	var j joined
	for _, d := range ds {
		if d != nil {
			j.ds = append(j.ds, d)
		}
	}
	switch len(j.ds) {
	case 0:
		return nil
	case 1:
		return j.ds[0]
	}
	return &j
}

type joined struct{ router }

func (j *joined) Observe(r trace.Reader, e trace.Event, b *Builder) {
	for _, d := range j.derivers(r, e.Type).ds {
		d.Observe(r, e, b)
	}
}

func (j *joined) Finish(r trace.Reader, b *Builder) {
	for _, d := range j.ds {
		d.Finish(r, b)
	}
}

// router finds the derivers that want an event: a Driver shows each
// event straight to them rather than through a joined Deriver's Observe.
type router struct {
	ds []Deriver
	// route lists by type id the derivers that want its events (of a
	// Selective Only made, the Deriver it wraps); ds nil where not asked
	// yet.
	route []routed
}

type routed struct {
	ds    []Deriver
	split []Split // ds as Splits when all of them are (not nil then)
}

// newRouter returns the router of d's derivers (those d joins).
func newRouter(d Deriver) router {
	switch d := d.(type) {
	case nil:
		return router{}
	case *joined:
		return router{ds: d.ds}
	}
	return router{ds: []Deriver{d}}
}

// derivers returns the derivers that want events of type t.
func (j *router) derivers(r trace.Reader, t trace.TypeID) *routed {
	if rt := j.known(t); rt != nil {
		return rt
	}
	return j.ask(r, t)
}

// known returns the derivers known to want events of type t; nil when
// not asked yet.
func (j *router) known(t trace.TypeID) *routed {
	if uint(t) < uint(len(j.route)) && j.route[t].ds != nil {
		return &j.route[t]
	}
	return nil
}

// ask finds the derivers that want events of type t, and keeps the
// answer when t is one of r's types.
func (j *router) ask(r trace.Reader, t trace.TypeID) *routed {
	ds := make([]Deriver, 0, len(j.ds))
	for _, d := range j.ds {
		switch d := d.(type) {
		case only:
			if d.want(t) {
				ds = append(ds, d.d)
			}
		case Selective:
			if d.Wants(r, t) {
				ds = append(ds, d)
			}
		default:
			ds = append(ds, d)
		}
	}
	rt := routed{ds: ds, split: make([]Split, 0, len(ds))}
	for _, d := range ds {
		s, ok := d.(Split)
		if !ok {
			rt.split = nil
			break
		}
		rt.split = append(rt.split, s)
	}
	if t >= 0 && r != nil && int(t) < len(r.Meta().Types) {
		if int(t) >= len(j.route) {
			j.route = append(j.route, make([]routed, int(t)+1-len(j.route))...)
		}
		j.route[t] = rt
	}
	return &rt
}
