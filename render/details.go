package render

import (
	"fmt"
	"time"

	"viewer/trace"
)

// Symbolizer resolves a stack address of process pid at time t; ok is
// false when it does not know the address.
type Symbolizer func(pid int64, t trace.Time, addr uint64) (f trace.Frame, ok bool)

// EventDetails is everything known about one event, decoded on demand.
type EventDetails struct {
	ID      EventID
	Event   trace.Event
	Type    trace.EventType // zero when the type id does not resolve
	Details trace.Details   // decoded payload; DetailsErr says why it is partial
	// DetailsErr is the reader's error decoding the payload, if any: the
	// rest of EventDetails is still valid.
	DetailsErr error
	Stack      []trace.Frame // leaf first; Func empty when not symbolized
	Labels     []trace.Label
}

// Event returns the full header of an event.
func (x *Index) Event(id EventID) (trace.Event, error) {
	rr := runReader{s: x.spill}
	return x.event(&rr, id)
}

func (x *Index) event(rr *runReader, id EventID) (trace.Event, error) {
	t := x.track(id.Track)
	if t == nil || id.Index < 0 || int(id.Index) >= t.times.len() {
		return trace.Event{}, fmt.Errorf("render: no event %d on track %d", id.Index, id.Track)
	}
	e, err := rr.event(t, int(id.Index))
	if err != nil {
		return trace.Event{}, err
	}
	e.Time = t.times.at(int(id.Index))
	e.Track = id.Track
	return e, nil
}

// Details decodes an event: its payload fields from the trace file, its
// stack (each address resolved by sym when sym is not nil and knows it,
// else by the index's Options.Symbols) and its labels. It is safe for concurrent use: the reader's Details,
// Stack and Labels are only called after reading has finished.
func (x *Index) Details(id EventID, sym Symbolizer) (EventDetails, error) {
	e, err := x.Event(id)
	if err != nil {
		return EventDetails{}, err
	}
	r, err := x.reader()
	if err != nil {
		return EventDetails{}, err
	}
	d := EventDetails{ID: id, Event: e}
	if e.Type >= 0 && int(e.Type) < len(x.meta.Types) {
		d.Type = x.meta.Types[e.Type]
	}
	d.Details, d.DetailsErr = r.Details(e)
	if src := x.symbolSource(); sym == nil && src != nil {
		sym = src.Symbolize
	}
	pid := int64(-1)
	if e.Track >= 0 && int(e.Track) < len(x.meta.Tracks) {
		pid = x.meta.Tracks[e.Track].PID
	}
	if addrs := r.Stack(e.Stack); addrs != nil {
		d.Stack = make([]trace.Frame, len(addrs))
		for i, a := range addrs {
			d.Stack[i] = trace.Frame{Addr: a}
			if sym != nil {
				if f, ok := sym(pid, e.Time, a); ok {
					f.Addr = a
					d.Stack[i] = f
				}
			}
		}
	}
	d.Labels = r.Labels(e.Labels)
	return d, nil
}

// distance returns a−b for a ≥ b without overflowing.
func distance(a, b trace.Time) uint64 { return uint64(a) - uint64(b) }

// HitTest returns the event of a track nearest to t, if one lies within
// tol of it (the caller converts its pixel tolerance with the viewport's
// nanoseconds per pixel). Of events at equal distance the earlier wins;
// of events at the same time the first in track order.
func (x *Index) HitTest(id trace.TrackID, t trace.Time, tol time.Duration) (EventID, bool) {
	tr := x.track(id)
	if tr == nil || tr.times.len() == 0 || tol < 0 {
		return EventID{}, false
	}
	i := tr.lowerBound(t, 0)
	best, dist := -1, uint64(0)
	if i < tr.times.len() {
		best, dist = i, distance(tr.times.at(i), t)
	}
	if i > 0 {
		// the first event of the run of equal times before t
		p := tr.lowerBound(tr.times.at(i-1), 0)
		if d := distance(t, tr.times.at(p)); best < 0 || d <= dist {
			best, dist = p, d
		}
	}
	if best < 0 || dist > uint64(tol) {
		return EventID{}, false
	}
	return EventID{Track: id, Index: int32(best)}, true
}
