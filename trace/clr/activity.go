package clr

import (
	"strings"

	"viewer/trace"
	"viewer/trace/span"
)

// Activities derives EventSource activities from a .NET trace: events
// with opcode Start (1) and Stop (2) pair by their task (the event name
// without its "Start"/"Stop" suffix, as TraceEvent's
// StartStopActivityComputer pairs them) and ActivityId, and nest by the
// Start's RelatedActivityId, as slices on the thread that started them
// (a "activities" track under the thread). The runtime's own providers
// are left out: their opcodes 1 and 2 are per task (GC/Start is a GC,
// which has its own deriver).
type Activities struct {
	// Only, when not nil, says which event types may be activities (in
	// a perf.data file: the EventSource ones); nil means all.
	Only func(trace.TypeID) bool
	acts span.Activities
}

// NewActivities returns an EventSource activity deriver.
func NewActivities() *Activities { return &Activities{} }

// Opcodes of EventSource Start and Stop events (EventOpcode in
// System.Diagnostics.Tracing).
const (
	OpcodeStart = 1
	OpcodeStop  = 2
)

// runtimeProvider reports whether a provider is the runtime's, whose
// opcodes are not EventSource activities.
func runtimeProvider(p string) bool {
	return strings.HasPrefix(p, "Microsoft-Windows-DotNETRuntime")
}

// Observe implements span.Deriver.
func (a *Activities) Observe(r trace.Reader, e trace.Event, b *span.Builder) {
	m := r.Meta()
	if e.Type < 0 || int(e.Type) >= len(m.Types) || e.Labels == trace.NoLabels {
		return
	}
	if a.Only != nil && !a.Only(e.Type) {
		return
	}
	t := &m.Types[e.Type]
	if (t.Opcode != OpcodeStart && t.Opcode != OpcodeStop) || runtimeProvider(t.Provider) {
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
	task := TaskName(t.Name, t.Opcode)
	track := b.Track(span.Track{Kind: span.KindSlices, Name: "activities", Of: e.Track, CPU: trace.NoCPU})
	var args []trace.Field
	if d, err := r.Details(e); err == nil {
		args = d.Fields
	}
	name := task
	if t.Provider != "" {
		name = t.Provider + "/" + task
	}
	if t.Opcode == OpcodeStart {
		a.acts.Start(b, track, e.Track, e.Time, t.Provider+"/"+task, name, id, related, args)
	} else {
		a.acts.Stop(b, track, e.Track, e.Time, t.Provider+"/"+task, name, id, args)
	}
}

// Finish implements span.Deriver.
func (a *Activities) Finish(r trace.Reader, b *span.Builder) { a.acts.Finish(b) }

// TaskName returns the task an EventSource Start or Stop event belongs
// to: its name without the "Start" or "Stop" suffix (and without a "/"
// separator before it, as in "Request/Start").
func TaskName(name string, opcode int) string {
	suffix := "Start"
	if opcode == OpcodeStop {
		suffix = "Stop"
	}
	if n, ok := strings.CutSuffix(name, suffix); ok && n != "" {
		return strings.TrimSuffix(n, "/")
	}
	return name
}
