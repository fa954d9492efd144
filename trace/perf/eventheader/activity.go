package eventheader

import (
	"viewer/trace"
	"viewer/trace/span"
)

// Opcodes of EventHeader activity events (event_opcode in
// eventheader.h, the values of ETW's opcodes).
const (
	OpcodeActivityStart = 1
	OpcodeActivityStop  = 2
)

// Activities derives EventHeader activities: an ActivityStart event
// opens a slice for its activity id, nested under the related activity
// id it carries; the ActivityStop with the same provider and activity id
// closes it. The Start's and Stop's names may differ (TraceLogging names
// both after the activity, LinuxTracepoints' samples do not), so the
// pair is matched by provider and id alone and named after the Start.
type Activities struct {
	// Only, when not nil, says which event types may be activities (in
	// a perf.data file: the EventHeader ones); nil means all.
	Only func(trace.TypeID) bool
	acts span.Activities
}

// NewActivities returns an EventHeader activity deriver.
func NewActivities() *Activities { return &Activities{} }

// Observe implements span.Deriver. Only events whose type carries an
// EventHeader activity opcode and whose labels carry an ActivityId count.
func (a *Activities) Observe(r trace.Reader, e trace.Event, b *span.Builder) {
	m := r.Meta()
	if e.Type < 0 || int(e.Type) >= len(m.Types) || e.Labels == trace.NoLabels {
		return
	}
	if a.Only != nil && !a.Only(e.Type) {
		return
	}
	t := &m.Types[e.Type]
	if t.Opcode != OpcodeActivityStart && t.Opcode != OpcodeActivityStop {
		return
	}
	var id, related []byte
	for _, l := range r.Labels(e.Labels) {
		switch l.Key {
		case "ActivityId":
			id = []byte(l.Value.Str())
		case "RelatedActivityId":
			related = []byte(l.Value.Str())
		}
	}
	if len(id) == 0 {
		return
	}
	track := b.Track(span.Track{Kind: span.KindSlices, Name: "activities", Of: e.Track, CPU: trace.NoCPU})
	var args []trace.Field
	if d, err := r.Details(e); err == nil {
		args = d.Fields
	}
	name := t.Provider + ":" + t.Name
	if t.Opcode == OpcodeActivityStart {
		a.acts.Start(b, track, e.Track, e.Time, t.Provider, name, id, related, args)
	} else {
		a.acts.Stop(b, track, e.Track, e.Time, t.Provider, name, id, args)
	}
}

// Finish implements span.Deriver.
func (a *Activities) Finish(r trace.Reader, b *span.Builder) { a.acts.Finish(b) }
