// Package align places several traces on one time axis: the aligned
// clock that `viewer dump A B` merges on and a multi-trace view draws.
//
// # Design
//
// Each trace counts [trace.Time] from its own origin. Three things can
// tie two origins together, tried in this order:
//
//  1. A clock domain. A reader that counts Time on a raw clock shared by
//     other recordings names it in Info["clock_domain"] (trace/perf:
//     `monotonic on "host"` for `perf record -k monotonic`). Traces of one
//     domain align on their raw times, exactly, provided their wall
//     clocks agree to within [DomainTolerance] (a reboot resets a
//     monotonic clock; its name does not change).
//  2. The wall clock: Meta.Clock.Wall is the wall time of Time 0
//     (NetTrace's sync time, perf's CLOCK_DATA, elog's init time).
//  3. Nothing: a trace without a wall clock (CPEL, perf without -k) puts
//     its first event at the earliest first event of the others (aligned
//     time 0), and says so ([Placement].How is [ByFirstEvent]).
//
// On top of that each trace has an offset that the user sets (g2's time
// slew): its events move by that much on the aligned axis, and so does
// their aligned wall time.
//
// Aligned time 0 is the earliest first event of all traces after their
// offsets, so a merged timeline starts at 0. [Axis].Origin is its wall
// time when any trace knows wall-clock time.
package align

import (
	"math"
	"slices"
	"strconv"
	"time"

	"viewer/trace"
)

// DomainTolerance is how far the walls of two traces of one clock
// domain may disagree (at the same raw time) for them to be aligned on
// the domain. The walls of recordings of one boot differ by the
// microseconds between reading the two clocks; after a reboot by the
// boot's time.
const DomainTolerance = 100 * time.Millisecond

// Trace is what alignment needs of one trace.
type Trace struct {
	Clock trace.Clock
	// Domain names the raw clock Time counts on ("" for none): traces
	// with the same Domain count on one clock (see [DomainOf]).
	Domain string
	First  trace.Time    // the trace's first event
	Offset time.Duration // the user's slew: added to every event
}

// Of returns the Trace of a trace's metadata and first event time.
func Of(m *trace.Meta, first trace.Time) Trace {
	return Trace{Clock: m.Clock, Domain: DomainOf(m), First: first}
}

// DomainOf returns the clock domain a reader named in
// Info["clock_domain"], or "" when it named none.
func DomainOf(m *trace.Meta) string {
	for _, kv := range m.Info {
		if kv.Key == "clock_domain" {
			return kv.Value
		}
	}
	return ""
}

// How says how a trace was placed. The set may grow.
type How uint8

const (
	ByWall       How = iota + 1 // its wall clock
	ByDomain                    // its raw clock, shared with an earlier trace of the list
	ByFirstEvent                // no wall clock: its first event at aligned time 0
)

var howNames = [...]string{"", "wall", "domain", "first event"}

func (h How) String() string {
	if int(h) < len(howNames) && h > 0 {
		return howNames[h]
	}
	return "How(" + strconv.Itoa(int(h)) + ")"
}

// Placement is where one trace lands: its event at Time t is at aligned
// time t + Shift.
type Placement struct {
	Shift trace.Time
	How   How
	// Ref is the trace whose raw clock this one shares (How ByDomain), else -1.
	Ref int
}

// Axis is the aligned time axis of several traces.
type Axis struct {
	// Origin is the wall time of aligned time 0; the zero time when no
	// trace knows wall-clock time.
	Origin time.Time
	Places []Placement // one per trace, in the order given to [Align]
}

// Align places traces on one axis (see the package documentation).
func Align(ts []Trace) Axis {
	ax := Axis{Places: make([]Placement, len(ts))}
	// Each trace's wall time of Time 0, as nanoseconds since the epoch in
	// big numbers: walls may lie centuries apart in damaged files.
	type wall struct {
		ok bool
		ns float64
	}
	walls := make([]wall, len(ts))
	for i, t := range ts {
		if !t.Clock.Wall.IsZero() {
			walls[i] = wall{true, float64(t.Clock.Wall.Unix())*1e9 + float64(t.Clock.Wall.Nanosecond())}
		}
	}
	// Domains: a trace shares the raw clock of the first earlier trace
	// of its domain whose wall agrees with its own. Its effective wall
	// becomes that trace's, moved by the difference of raw origins.
	for i := range ax.Places {
		ax.Places[i].Ref = -1
	}
	for i, t := range ts {
		if t.Domain == "" || !walls[i].ok {
			continue
		}
		for j := range i {
			if ts[j].Domain != t.Domain || !walls[j].ok || ax.Places[j].Ref >= 0 {
				continue
			}
			// The wall at raw time 0 by either trace.
			ri, rj := rawOrigin(t.Clock), rawOrigin(ts[j].Clock)
			wi, wj := walls[i].ns-float64(ri), walls[j].ns-float64(rj)
			if math.Abs(wi-wj) <= float64(DomainTolerance) {
				ax.Places[i].Ref = j
				break
			}
		}
	}
	// Aligned wall of each trace's first event, counted from the wall of
	// the first trace that has one (in integers, so that traces placed by
	// wall or domain keep exact nanoseconds); the earliest is time 0.
	ref := slices.IndexFunc(walls, func(w wall) bool { return w.ok })
	if ref >= 0 {
		first := int64(math.MaxInt64)
		for i, t := range ts {
			if walls[i].ok {
				first = min(first, relWall(ts, ax.Places, i, ref, t.First))
			}
		}
		ax.Origin = ts[ref].Clock.Wall.Add(time.Duration(first))
		for i := range ts {
			if !walls[i].ok {
				continue
			}
			p := &ax.Places[i]
			p.How = ByWall
			if p.Ref >= 0 {
				p.How = ByDomain
			}
			p.Shift = trace.Time(relWall(ts, ax.Places, i, ref, 0) - first)
		}
	}
	for i, t := range ts {
		if walls[i].ok {
			continue
		}
		ax.Places[i] = Placement{Shift: trace.Time(int64(t.Offset) - int64(t.First)), How: ByFirstEvent, Ref: -1}
	}
	return ax
}

// relWall returns the aligned wall of trace i's Time t (its offset
// included) minus the wall of trace ref's Time 0, in nanoseconds; both
// traces know their wall. A trace placed on a domain counts from its
// reference's wall.
func relWall(ts []Trace, places []Placement, i, ref int, t trace.Time) int64 {
	d := int64(t) + int64(ts[i].Offset)
	if j := places[i].Ref; j >= 0 {
		// i's raw time = j's raw time: i's Time t is j's Time
		// t + rawOrigin(i) − rawOrigin(j); j's offset is not i's.
		d += rawOrigin(ts[i].Clock) - rawOrigin(ts[j].Clock)
		i = j
	}
	return d + int64(ts[i].Clock.Wall.Sub(ts[ref].Clock.Wall))
}

// rawOrigin returns the raw clock's reading at Time 0 in nanoseconds.
func rawOrigin(c trace.Clock) int64 {
	return int64(trace.Clock{TicksPerSecond: c.TicksPerSecond}.Time(c.OriginTicks))
}

// Time returns the aligned time of trace i's Time t.
func (a Axis) Time(i int, t trace.Time) trace.Time { return t + a.Places[i].Shift }

// Wall returns the wall time of aligned time t, and whether any trace
// knows wall-clock time.
func (a Axis) Wall(t trace.Time) (time.Time, bool) {
	if a.Origin.IsZero() {
		return time.Time{}, false
	}
	return a.Origin.Add(time.Duration(t)), true
}

// Clock returns a clock for trace i's own Time whose Wall is the aligned
// wall time of its Time 0 (what `viewer dump` writes as `wall`), or c
// unchanged when no trace knows wall-clock time.
func (a Axis) Clock(i int, c trace.Clock) trace.Clock {
	if w, ok := a.Wall(a.Time(i, 0)); ok {
		c.Wall = w
	}
	return c
}
