package clr

import (
	"cmp"
	"slices"

	"viewer/trace"
)

// Exception is one thrown exception: an Exception/Start event.
type Exception struct {
	Time    trace.Time
	Track   trace.TrackID // the thread that threw it
	PID     int64         // the thread's process, or -1
	TID     int64         // the thread's id, or -1
	Type    string        // ExceptionType: the exception's class
	Message string        // ExceptionMessage
	Stack   trace.StackID // the event's stack (symbolize it with the trace's method map)
}

// ExceptionGroup counts the exceptions of one type.
type ExceptionGroup struct {
	Type  string
	Count int64
}

// MaxExceptions bounds the rows an [Exceptions] keeps; later ones are
// counted in their group and in Dropped.
const MaxExceptions = 1 << 20

// Exceptions builds the exception table of a trace from its events, fed
// in time order to Observe, which decodes only Exception/Start payloads.
type Exceptions struct {
	rows    []Exception
	counts  map[string]int64
	Dropped int64
}

// NewExceptions returns an empty exception table.
func NewExceptions() *Exceptions { return &Exceptions{counts: map[string]int64{}} }

// Observe reads one event of r.
func (x *Exceptions) Observe(r trace.Reader, e trace.Event) {
	m := r.Meta()
	if e.Type < 0 || int(e.Type) >= len(m.Types) {
		return
	}
	if et := &m.Types[e.Type]; et.Name != "Exception/Start" || et.Provider != Runtime {
		return
	}
	d, err := r.Details(e)
	if err != nil {
		return
	}
	row := Exception{Time: e.Time, Track: e.Track, PID: -1, TID: -1, Stack: e.Stack,
		Type: fieldText(d.Fields, "ExceptionType"), Message: fieldText(d.Fields, "ExceptionMessage")}
	if e.Track >= 0 && int(e.Track) < len(m.Tracks) {
		row.PID, row.TID = m.Tracks[e.Track].PID, m.Tracks[e.Track].TID
	}
	if len(x.counts) < MaxExceptions || x.counts[row.Type] > 0 {
		x.counts[row.Type]++
	}
	if len(x.rows) >= MaxExceptions {
		x.Dropped++
		return
	}
	x.rows = append(x.rows, row)
}

// Rows returns the exceptions in time order (the table's own slice).
func (x *Exceptions) Rows() []Exception { return x.rows }

// ByType returns the exception types with their counts, most frequent
// first (then by name).
func (x *Exceptions) ByType() []ExceptionGroup {
	var gs []ExceptionGroup
	for t, n := range x.counts {
		gs = append(gs, ExceptionGroup{Type: t, Count: n})
	}
	slices.SortFunc(gs, func(a, b ExceptionGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Type, b.Type))
	})
	return gs
}
