package stacks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"viewer/render"
	"viewer/trace"
)

// DefaultEvent is the event whose stacks are aggregated by default: the
// .NET sample profiler's (clr.SampleEvent).
const DefaultEvent = "Thread/Sample"

// WeightKind is how a sample is weighed.
type WeightKind uint8

const (
	// Count weighs every sample 1.
	Count WeightKind = iota
	// Time weighs a sample by the time since the previous sample of the
	// same event type on the same thread in the whole trace (dotnetdiag's
	// rule); a thread's first sample has no interval and is left out.
	Time
	// Field weighs a sample by a numeric payload field (e.g.
	// AllocationAmount), decoded per event; events without it are left
	// out.
	Field
)

// Weight is a sample weighting.
type Weight struct {
	Kind  WeightKind
	Field string // with Field
}

// ParseWeight parses "count", "time" or "field:NAME" ("" is "count").
func ParseWeight(s string) (Weight, error) {
	switch {
	case s == "" || s == "count":
		return Weight{}, nil
	case s == "time":
		return Weight{Kind: Time}, nil
	case strings.HasPrefix(s, "field:") && len(s) > len("field:"):
		return Weight{Kind: Field, Field: s[len("field:"):]}, nil
	}
	return Weight{}, fmt.Errorf("weight: count, time or field:NAME, not %q", s)
}

func (w Weight) String() string {
	switch w.Kind {
	case Time:
		return "time"
	case Field:
		return "field:" + w.Field
	}
	return "count"
}

// Unit is the unit of the weights: "samples", "ns" or the field's name.
func (w Weight) Unit() string {
	switch w.Kind {
	case Time:
		return "ns"
	case Field:
		return w.Field
	}
	return "samples"
}

// EventTypes returns the ids of the types named event: by Name
// ("Thread/Sample") or Provider/Name.
func EventTypes(m *trace.Meta, event string) []trace.TypeID {
	var ids []trace.TypeID
	for i, t := range m.Types {
		if t.Name == event || t.Provider+"/"+t.Name == event {
			ids = append(ids, trace.TypeID(i))
		}
	}
	return ids
}

// Query selects the samples of an index to aggregate.
type Query struct {
	From, To trace.Time      // the samples with times in [From, To)
	Tracks   []trace.TrackID // nil: every track
	Event    string          // the event type (DefaultEvent when "")
	Weight   Weight
	Options
}

// Aggregate feeds a new Aggregator with the stacked events of x that q
// selects. When ctx ends (a deadline) it stops and returns what it has
// with partial true; other errors are returned: render.ErrLoading for an
// Index opened from its file whose reader pass has not ended (the stacks
// are the reader's).
func Aggregate(ctx context.Context, x *render.Index, q Query) (a *Aggregator, partial bool, err error) {
	if !x.Attached() { // opened from its file, the stacks not read yet
		return nil, false, render.ErrLoading
	}
	meta := x.Meta()
	if q.ThreadName == nil {
		q.ThreadName = func(id trace.TrackID) string { return TrackName(meta, id) }
	}
	if a, err = New(q.Options); err != nil {
		return nil, false, err
	}
	if q.Event == "" {
		q.Event = DefaultEvent
	}
	types := EventTypes(meta, q.Event)
	if len(types) == 0 {
		return nil, false, fmt.Errorf("no event type %q in the trace", q.Event)
	}
	isType := map[trace.TypeID]bool{}
	for _, t := range types {
		isType[t] = true
	}
	tracks := q.Tracks
	if tracks == nil {
		tracks = x.Tracks()
	}
	res := NewResolver(x.Stack, x.Symbols(), a)
	n := 0
	for _, tr := range tracks {
		pid := int64(-1)
		if tr >= 0 && int(tr) < len(meta.Tracks) {
			pid = meta.Tracks[tr].PID
		}
		prev := map[trace.TypeID]trace.Time{}
		for e := range x.StackedEvents(tr, q.From, q.To) {
			if !isType[e.Type] {
				continue
			}
			if n++; n&4095 == 0 && ctx.Err() != nil {
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					return a, true, nil
				}
				return nil, false, ctx.Err()
			}
			w := int64(1)
			switch q.Weight.Kind {
			case Time:
				p, ok := prev[e.Type]
				if !ok {
					p, ok = x.PrevStacked(tr, e.ID.Index, e.Type)
				}
				prev[e.Type] = e.Time
				if !ok {
					continue
				}
				w = int64(e.Time - p)
			case Field:
				var ok bool
				if w, ok = field(x, e.ID, q.Weight.Field); !ok {
					continue
				}
			}
			a.Add(Sample{Time: e.Time, Track: tr, Stack: res.Stack(pid, e.Stack, e.Time), Weight: w, Ev: e.ID})
		}
	}
	return a, false, nil
}

// field returns a numeric top-level payload field of an event, rounded to
// an integer.
func field(x *render.Index, id render.EventID, name string) (int64, bool) {
	d, err := x.Payload(id)
	if err != nil && len(d.Fields) == 0 {
		return 0, false
	}
	for _, f := range d.Fields {
		if f.Name == name {
			v, ok := f.Value.Number()
			if !ok || math.IsNaN(v) {
				return 0, false
			}
			return int64(math.Round(v)), true
		}
	}
	return 0, false
}

// TrackName names a track for a per-thread root: its name, else "thread
// TID", "no thread" for events without one.
func TrackName(m *trace.Meta, id trace.TrackID) string {
	if id < 0 || int(id) >= len(m.Tracks) {
		return "no thread"
	}
	t := m.Tracks[id]
	if t.Name != "" {
		return t.Name
	}
	return "thread " + fmt.Sprint(t.TID)
}

// Resolver names stacks and interns them in an Aggregator, once per
// stack and span of time over which the symbol source's answers hold.
type Resolver struct {
	stack func(trace.StackID) []uint64
	sym   render.SymbolSource
	span  render.SpanSymbolizer
	a     *Aggregator
	dense []resolved // by StackID, for small ids
	other map[trace.StackID]resolved
	names []string
}

type resolved struct {
	from, to trace.Time // the names hold for samples in [from, to)
	pid      int64
	key      StackKey
	ok       bool
}

// maxDense bounds the stack ids cached in a slice.
const maxDense = 1 << 22

// NewResolver returns a resolver of the stacks stack returns (addresses,
// leaf first), named by sym (nil: addresses as "0x…"): a sym that is a
// render.SpanSymbolizer is asked once per stack and span, another once
// per sample.
func NewResolver(stack func(trace.StackID) []uint64, sym render.SymbolSource, a *Aggregator) *Resolver {
	r := &Resolver{stack: stack, sym: sym, a: a, other: map[trace.StackID]resolved{}}
	r.span, _ = sym.(render.SpanSymbolizer)
	return r
}

// Stack returns the key of stack id of process pid sampled at t.
func (r *Resolver) Stack(pid int64, id trace.StackID, t trace.Time) StackKey {
	var c *resolved
	if id >= 0 && id < maxDense {
		for int(id) >= len(r.dense) {
			r.dense = append(r.dense, resolved{})
		}
		c = &r.dense[id]
	} else {
		v := r.other[id]
		c = &v
		defer func() { r.other[id] = *c }()
	}
	if c.ok && c.pid == pid && t >= c.from && t < c.to {
		return c.key
	}
	addrs := r.stack(id)
	from, to := trace.Time(math.MinInt64), trace.Time(math.MaxInt64)
	names := r.names[:0]
	for _, addr := range addrs {
		f := trace.Frame{Addr: addr}
		switch {
		case r.span != nil:
			var lo, hi trace.Time
			var ok bool
			if f, ok, lo, hi = r.span.SymbolizeSpan(pid, t, addr); !ok {
				f = trace.Frame{Addr: addr}
			}
			from, to = max(from, lo), min(to, hi)
		case r.sym != nil:
			if g, ok := r.sym.Symbolize(pid, t, addr); ok {
				f = g
			}
			from, to = t, t+1
		}
		f.Addr = addr
		names = append(names, f.String())
	}
	r.names = names
	*c = resolved{from: from, to: to, pid: pid, key: r.a.Intern(names), ok: true}
	return c.key
}
