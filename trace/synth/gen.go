// Package synth generates synthetic traces: a [trace.Reader] whose events,
// tables, stacks, labels, lost-event gaps, markers and payload fields all
// derive from a seed, for tests and for `viewer bench --generate`.
//
// Events come in time order with bursts (runs of equal times), pauses and
// skewed track and type distributions, so that per-pixel buckets see
// dense, sparse and empty stretches. Payloads are not stored anywhere:
// Details recomputes an event's fields from its header, so a trace of any
// length costs no memory.
package synth

import (
	"cmp"
	"io"
	"strconv"
	"time"

	"viewer/trace"
)

// Config describes a synthetic trace. Zero fields take the defaults.
type Config struct {
	Events  int64         // number of events
	Tracks  int           // thread tracks (default 64)
	Types   int           // event types (default 48)
	Seed    uint64        // random seed
	MeanGap time.Duration // mean time between consecutive events (default 100ns)
	// LostEvery adds a lost-event gap every LostEvery events (default
	// 100003; negative: none).
	LostEvery int64
	// MarkEvery adds a sequence-point marker every MarkEvery events
	// (default 65536; negative: none).
	MarkEvery int64
	// Truncate ends the trace with a *trace.FormatError wrapping
	// trace.ErrTruncated instead of io.EOF.
	Truncate bool
	// Stacks is the number of distinct stacks (default 37) and
	// StackDepth their frames: 0 gives the default stacks of 3 to 10
	// frames; N > 0 gives stacks of N frames that share prefixes like a
	// program's call tree (stack k's frame at depth d, counted from the
	// root, depends on k's top bits only, more of them deeper), at
	// addresses 0x400000 + depth<<20 + prefix<<6. With Stacks set, events
	// pick stacks skewed toward low ids, as a profile's hot paths are.
	Stacks     int
	StackDepth int
}

// Name of the synthetic format in Meta.Format and errors.
const Name = "synthetic"

const (
	nStacks = 37
	nLabels = 11
	header  = 16 // bytes of the pretend event header before each payload
)

// Trace is a synthetic trace reader.
type Trace struct {
	cfg    Config
	meta   trace.Meta
	rng    uint64
	n      int64
	now    trace.Time
	off    int64
	stacks [][]uint64
	labels [][]trace.Label
	// trackTypes lists four likely types per track.
	trackTypes []int32
	toMark     int64 // events until the next marker (never 0 when markers are off)
	toLose     int64 // events until the next gap
}

// New returns a reader of the synthetic trace cfg describes.
func New(cfg Config) *Trace {
	if cfg.Tracks <= 0 {
		cfg.Tracks = 64
	}
	if cfg.Types <= 0 {
		cfg.Types = 48
	}
	if cfg.MeanGap <= 0 {
		cfg.MeanGap = 100
	}
	if cfg.LostEvery == 0 {
		cfg.LostEvery = 100003
	}
	if cfg.MarkEvery == 0 {
		cfg.MarkEvery = 65536
	}
	g := &Trace{cfg: cfg, rng: cfg.Seed*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d, off: 64}
	g.meta = trace.Meta{
		Format:      Name,
		Version:     1,
		PointerSize: 8,
		Clock:       trace.Clock{TicksPerSecond: 1e9},
		Info:        []trace.KeyValue{{Key: "generator", Value: "trace/synth seed " + strconv.FormatUint(cfg.Seed, 10)}},
		Has:         trace.HasVersion | trace.HasLevel | trace.HasOpcode | trace.HasKeywords | trace.HasSeq | trace.HasCPU | trace.HasProvider,
	}
	for i := range cfg.Tracks {
		g.meta.Tracks = append(g.meta.Tracks, trace.Track{
			Kind: trace.TrackThread, Name: "thread " + strconv.Itoa(i),
			PID: 1000 + int64(i/16), TID: 2000 + int64(i), CPU: -1, Parent: trace.NoTrack, Code: int64(i),
		})
	}
	if cfg.Tracks > 1 {
		// Thread 1 was renamed twice, as a perf thread that exec'd keeps
		// its earlier comms (trace.Track.Names, oldest first).
		g.meta.Tracks[1].Names = []string{"launcher", "sh <init>"}
	}
	for i := range cfg.Types {
		g.meta.Types = append(g.meta.Types, trace.EventType{
			Provider: "Synthetic-" + strconv.Itoa(i%5),
			Name:     "Event" + strconv.Itoa(i),
			ID:       int64(i + 1),
			Version:  i % 3,
			Level:    4,
			Opcode:   i % 10,
			Keywords: 1 << (i % 64),
			Fields:   []trace.FieldSpec{{Name: "seq", Type: "uint32"}, {Name: "value", Type: "int64"}, {Name: "name", Type: "string"}, {Name: "point", Type: "struct", Fields: []trace.FieldSpec{{Name: "x", Type: "int32"}, {Name: "y", Type: "int32"}}}},
		})
	}
	g.toMark, g.toLose = 1, cfg.LostEvery
	if cfg.MarkEvery < 0 {
		g.toMark = -1
	}
	for tr := range cfg.Tracks {
		for k := range 4 {
			g.trackTypes = append(g.trackTypes, int32((tr*7+k)%cfg.Types))
		}
	}
	g.stacks = make([][]uint64, cmp.Or(cfg.Stacks, nStacks))
	bits := 0
	for 1<<bits < len(g.stacks) {
		bits++
	}
	for i := range g.stacks {
		if d := cfg.StackDepth; d > 0 {
			s := make([]uint64, d)
			for j := range s { // leaf first: depth d-1-j
				depth := d - 1 - j
				prefix := i >> (bits - bits*(depth+1)/d)
				s[j] = 0x400000 + uint64(depth)<<20 + uint64(prefix)<<6
			}
			g.stacks[i] = s
			continue
		}
		s := make([]uint64, 3+i%8)
		for j := range s {
			s[j] = 0x400000 + uint64(i*0x1000+j*0x40)
		}
		g.stacks[i] = s
	}
	g.labels = make([][]trace.Label, nLabels)
	for i := range g.labels {
		var id [16]byte
		id[0], id[15] = byte(i), 0xa5
		g.labels[i] = []trace.Label{{Key: "ActivityId", Value: trace.GUIDValue(id)}, {Key: "request", Value: trace.IntValue(int64(i * 7))}}
	}
	return g
}

func (g *Trace) next() uint64 {
	// xorshift64*
	g.rng ^= g.rng >> 12
	g.rng ^= g.rng << 25
	g.rng ^= g.rng >> 27
	return g.rng * 2685821657736338717
}

// Meta returns the trace's tables (all known from the start).
func (g *Trace) Meta() *trace.Meta { return &g.meta }

// ReadEvent returns the next event.
func (g *Trace) ReadEvent() (trace.Event, error) {
	var e trace.Event
	err := g.event(&e)
	return e, err
}

// ReadEvents fills dst with the next events, as many ReadEvent calls
// would, and returns how many it wrote; err is the error that ended the
// trace after them (io.EOF at the end), nil while events remain. It
// spares a bulk consumer (render.Build) an interface call and a copy of
// the Event per event.
func (g *Trace) ReadEvents(dst []trace.Event) (n int, err error) {
	for i := range dst {
		if err := g.event(&dst[i]); err != nil {
			return i, err
		}
	}
	return len(dst), nil
}

// event writes the next event to *e.
func (g *Trace) event(e *trace.Event) error {
	if g.n >= g.cfg.Events {
		if g.cfg.Truncate {
			return &trace.FormatError{Format: Name, Off: g.off, Msg: "synthetic end", Err: trace.ErrTruncated}
		}
		return io.EOF
	}
	r := g.next()
	mean := uint64(g.cfg.MeanGap)
	switch {
	case r&15 == 0: // a burst: same time as the previous event
	case r&0x3ff0 == 0x3ff0: // a pause
		g.now += trace.Time(mean * 200 * (1 + (r>>20)&7))
	default:
		g.now += trace.Time(1 + (r>>32)*(2*mean)>>32)
	}
	// Skewed tracks: the square of a uniform number favours low ids.
	u := (r >> 40) & 0xffff
	tr := int((u * u >> 16) * uint64(g.cfg.Tracks) >> 16)
	// Types mostly follow the track, so tracks have dominant types.
	ty := int(g.trackTypes[tr*4+int(r>>8&3)])
	if r>>4&7 == 0 {
		ty = int((r >> 16 & 0xffffffff) * uint64(g.cfg.Types) >> 32)
	}
	*e = trace.Event{
		Time:    g.now,
		Track:   trace.TrackID(tr),
		Type:    trace.TypeID(ty),
		Seq:     uint32(g.n),
		Capture: trace.NoTrack,
		CPU:     int32(r>>56) & 7,
		Payload: trace.Loc{Off: g.off + header, Len: int32(8 + ty&15)},
	}
	if r>>10&3 != 0 {
		if g.cfg.Stacks == 0 {
			e.Stack = trace.StackID(1 + int(r>>24&0xff)*nStacks>>8)
		} else { // skewed, as a profile is: the square favours low ids
			v := r >> 24 & 0xffff
			e.Stack = trace.StackID(1 + int(v*v>>16)*len(g.stacks)>>16)
		}
	}
	if r>>12&7 == 0 {
		e.Labels = trace.LabelsID(1 + int(r>>28&0xff)*nLabels>>8)
	}
	if g.toMark--; g.toMark == 0 {
		g.toMark = g.cfg.MarkEvery
		g.meta.Markers = append(g.meta.Markers, trace.Marker{Kind: trace.MarkerSequencePoint, Time: g.now, Off: g.off})
	}
	g.off += header + int64(e.Payload.Len)
	if g.toLose--; g.toLose == 0 {
		g.toLose = g.cfg.LostEvery
		g.meta.Lost = append(g.meta.Lost, trace.Gap{Time: g.now, Track: e.Track, Count: int64(1 + r>>50)})
	}
	g.n++
	return nil
}

// TotalEvents returns how many events the trace holds, for progress:
// its payload offsets are not positions in the file, whose few bytes only
// name the parameters.
func (g *Trace) TotalEvents() int64 { return g.cfg.Events }

// Stack returns a stack's addresses.
func (g *Trace) Stack(id trace.StackID) []uint64 {
	if id <= 0 || int(id) > len(g.stacks) {
		return nil
	}
	return g.stacks[id-1]
}

// Labels returns a label list.
func (g *Trace) Labels(id trace.LabelsID) []trace.Label {
	if id <= 0 || int(id) > len(g.labels) {
		return nil
	}
	return g.labels[id-1]
}

// Value returns the "value" field of an event: a pseudo-random number in
// 0..999 derived from its payload offset, so tests can predict searches.
func Value(e trace.Event) int64 {
	h := uint64(e.Payload.Off) * 0x9e3779b97f4a7c15
	return int64((h >> 33) % 1000)
}

// DecodeFields decodes the chosen fields of an event's pretend payload
// (see [trace.FieldsDecoder]): what Details gives, computing only those.
func (g *Trace) DecodeFields(e trace.Event, idx []int, vals []trace.Value) error {
	if e.Payload.Off < header || e.Payload.Len < 8 {
		return &trace.FormatError{Format: Name, Off: e.Payload.Off, Msg: "not an event payload"}
	}
	v := Value(e)
	for i, k := range idx {
		switch k {
		case 0:
			vals[i] = trace.UintValue(uint64(e.Seq))
		case 1:
			vals[i] = trace.IntValue(v)
		case 2:
			vals[i] = trace.StringValue(itemNames[v%37])
		case 3:
			vals[i] = trace.StructValue([]trace.Field{{Name: "x", Value: trace.IntValue(v % 10)}, {Name: "y", Value: trace.IntValue(v / 10)}})
		default:
			vals[i] = trace.Value{}
		}
	}
	return nil
}

// AppendDetails appends the fields and label Details gives (see
// [trace.DetailsAppender]), allocating only the "point" struct's members.
func (g *Trace) AppendDetails(fields []trace.Field, label []byte, e trace.Event) ([]trace.Field, []byte, error) {
	if e.Payload.Off < header || e.Payload.Len < 8 {
		return fields, label, &trace.FormatError{Format: Name, Off: e.Payload.Off, Msg: "not an event payload"}
	}
	v := Value(e)
	name := itemNames[v%37]
	fields = append(fields,
		trace.Field{Name: "seq", Value: trace.UintValue(uint64(e.Seq))},
		trace.Field{Name: "value", Value: trace.IntValue(v)},
		trace.Field{Name: "name", Value: trace.StringValue(name)},
		trace.Field{Name: "point", Value: trace.StructValue([]trace.Field{{Name: "x", Value: trace.IntValue(v % 10)}, {Name: "y", Value: trace.IntValue(v / 10)}})},
	)
	label = append(append(label, name...), " value="...)
	return fields, strconv.AppendInt(label, v, 10), nil
}

// itemNames are the values of the "name" field.
var itemNames = func() (names [37]string) {
	for i := range names {
		names[i] = "item-" + strconv.Itoa(i)
	}
	return names
}()

// Details decodes an event's pretend payload. It is safe for concurrent use.
func (g *Trace) Details(e trace.Event) (trace.Details, error) {
	if e.Payload.Off < header || e.Payload.Len < 8 {
		return trace.Details{}, &trace.FormatError{Format: Name, Off: e.Payload.Off, Msg: "not an event payload"}
	}
	v := Value(e)
	name := itemNames[v%37]
	d := trace.Details{
		Fields: []trace.Field{
			{Name: "seq", Value: trace.UintValue(uint64(e.Seq))},
			{Name: "value", Value: trace.IntValue(v)},
			{Name: "name", Value: trace.StringValue(name)},
			{Name: "point", Value: trace.StructValue([]trace.Field{{Name: "x", Value: trace.IntValue(v % 10)}, {Name: "y", Value: trace.IntValue(v / 10)}})},
		},
		Label: name + " value=" + strconv.FormatInt(v, 10),
	}
	d.Raw = make([]byte, e.Payload.Len)
	for i := range d.Raw {
		d.Raw[i] = byte(v + int64(i))
	}
	return d, nil
}
