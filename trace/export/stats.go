package export

import (
	"viewer/trace"

	"cmp"
	"errors"
	"io"
	"slices"
)

// Stats summarizes a whole trace: the object `viewer stats --json` prints.
type Stats struct {
	Format      string      `json:"format"`
	Version     int         `json:"version"`
	PointerSize int         `json:"pointer_size,omitempty"`
	Events      int64       `json:"events"`
	Truncated   bool        `json:"truncated"`
	TruncatedAt int64       `json:"truncated_at"`
	Error       string      `json:"error,omitempty"` // why reading stopped early
	LostEvents  int64       `json:"lost_events"`
	FirstNS     int64       `json:"first_ns"`
	LastNS      int64       `json:"last_ns"`
	Tracks      int         `json:"tracks"`
	Counts      []TypeCount `json:"counts"`
	// Frames counts the stack frames of sample events and how many resolve
	// to a symbol; nil when the trace has no sample stacks.
	Frames *FrameCount `json:"frames,omitempty"`
	// Notices are what the reader reported without stopping (skipped
	// records or sections, unknown record types): trace.Meta.Notices.
	Notices []string `json:"notices,omitempty"`
}

// FrameCount is the symbolization coverage of sample stacks.
type FrameCount struct {
	Total    int64 `json:"total"`
	Resolved int64 `json:"resolved"`
}

// TypeCount is the number of events of one event type.
type TypeCount struct {
	Provider string `json:"provider"`
	Event    string `json:"event"`
	ID       int64  `json:"id"`
	Version  int    `json:"version"`
	Count    int64  `json:"count"`
}

// Counter accumulates [Stats] one event at a time, so that a consumer that
// reads a trace for another purpose gets its statistics in the same pass.
type Counter struct {
	perType []int64
	events  int64
	first   trace.Time
	last    trace.Time
}

// Add counts one event.
func (c *Counter) Add(e trace.Event) {
	if c.events == 0 {
		c.first = e.Time
	}
	if e.Time > c.last || c.events == 0 {
		c.last = e.Time
	}
	c.events++
	if e.Type >= 0 {
		for int(e.Type) >= len(c.perType) {
			c.perType = append(c.perType, 0)
		}
		c.perType[e.Type]++
	}
}

// AddEvents counts events, as Add does for each.
func (c *Counter) AddEvents(evs []trace.Event) {
	if len(evs) == 0 {
		return
	}
	if c.events == 0 {
		c.first, c.last = evs[0].Time, evs[0].Time
	}
	last := c.last
	for i := range evs {
		e := &evs[i]
		last = max(last, e.Time)
		c.addType(e.Type)
	}
	c.last = last
	c.events += int64(len(evs))
}

// AddTypes counts events of the given types, as AddEvents does, for a
// caller that has their types and times apart: first is the time of the
// first of them, last the latest time.
func (c *Counter) AddTypes(types []trace.TypeID, first, last trace.Time) {
	if len(types) == 0 {
		return
	}
	if c.events == 0 {
		c.first, c.last = first, last
	}
	c.last = max(c.last, last)
	for _, t := range types {
		c.addType(t)
	}
	c.events += int64(len(types))
}

// addType counts one event of type t (none for a negative t).
func (c *Counter) addType(t trace.TypeID) {
	if uint(t) < uint(len(c.perType)) {
		c.perType[t]++
		return
	}
	if t >= 0 {
		c.perType = append(c.perType, make([]int64, int(t)+1-len(c.perType))...)
		c.perType[t]++
	}
}

// PerType returns the number of events of each TypeID added so far.
func (c *Counter) PerType() []int64 { return slices.Clone(c.perType) }

// Stats returns the statistics of the events added so far; err is the
// error that ended reading (nil or io.EOF for a clean end).
func (c *Counter) Stats(m *trace.Meta, err error) Stats {
	s := Stats{
		Format:      m.Format,
		Version:     m.Version,
		PointerSize: m.PointerSize,
		Events:      c.events,
		FirstNS:     int64(c.first),
		LastNS:      int64(c.last),
		Tracks:      len(m.Tracks),
		Counts:      []TypeCount{},
	}
	for _, g := range m.Lost {
		s.LostEvents += g.Count
	}
	if len(m.Notices) > 0 {
		s.Notices = append([]string(nil), m.Notices...)
	}
	if err != nil && err != io.EOF {
		s.Error = err.Error()
		if fe, ok := errors.AsType[*trace.FormatError](err); ok {
			s.Truncated = true
			s.TruncatedAt = fe.Off
		}
	}
	type key struct {
		provider, name string
		id             int64
		version        int
	}
	idx := map[key]int{}
	for t, n := range c.perType {
		if n == 0 || t >= len(m.Types) {
			continue
		}
		et := m.Types[t]
		k := key{et.Provider, et.Name, et.ID, et.Version}
		if i, ok := idx[k]; ok {
			s.Counts[i].Count += n
			continue
		}
		idx[k] = len(s.Counts)
		s.Counts = append(s.Counts, TypeCount{Provider: et.Provider, Event: et.Name, ID: et.ID, Version: et.Version, Count: n})
	}
	slices.SortFunc(s.Counts, func(a, b TypeCount) int {
		return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.ID, b.ID),
			cmp.Compare(a.Version, b.Version), cmp.Compare(a.Event, b.Event))
	})
	return s
}

// Collect reads r to the end and returns its statistics. A damaged file is
// not an error: Stats says where reading stopped. The error is for a reader
// failure before any event could be read, and for I/O errors.
func Collect(r trace.Reader) (Stats, error) {
	var c Counter
	for {
		e, err := r.ReadEvent()
		if err != nil {
			if _, ok := errors.AsType[*trace.FormatError](err); !ok && err != io.EOF {
				return Stats{}, err
			}
			return c.Stats(r.Meta(), err), nil
		}
		c.Add(e)
	}
}
