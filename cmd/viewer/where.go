package main

import (
	"flag"
	"fmt"
	"math"

	"viewer/render"
	"viewer/render/query"
	"viewer/trace"
	"viewer/trace/synth"
)

// whereFlags are the event-selection flags of dump and export: a query
// (web/PROTOCOL.md §5) and a time range.
type whereFlags struct {
	where    string
	from, to int64
}

func (w *whereFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&w.where, "where", "", "only the events that match this query (the search grammar: `Reason = 4 and GC/Start`)")
	fs.Int64Var(&w.from, "from", math.MinInt64, "only the events at or after this time (ns)")
	fs.Int64Var(&w.to, "to", math.MaxInt64, "only the events before this time (ns)")
}

// set reports whether any flag selects events.
func (w *whereFlags) set() bool {
	return w.where != "" || w.from != math.MinInt64 || w.to != math.MaxInt64
}

// eventFilter returns the function that keeps the events w selects among
// those r reads; nil when w selects every event. The query is compiled
// once and decides each event type once (render.Matcher).
func (w *whereFlags) eventFilter(r trace.Reader) (func(*trace.Event) bool, error) {
	if !w.set() {
		return nil, nil
	}
	if w.from >= w.to {
		return nil, fmt.Errorf("--from %d is not before --to %d", w.from, w.to)
	}
	var f render.Filter
	if w.where != "" {
		e, err := query.ParseExpr(w.where)
		if err != nil {
			return nil, fmt.Errorf("--where: %w", err)
		}
		f.Expr = e
	}
	m, err := render.NewMatcher(f, r)
	if err != nil {
		return nil, fmt.Errorf("--where: %w", err)
	}
	from, to := trace.Time(w.from), trace.Time(w.to)
	return func(e *trace.Event) bool {
		return e.Time >= from && e.Time < to && m.Match(e)
	}, nil
}

// filter returns r when w selects every event, else a reader of the
// events w selects.
func (w *whereFlags) filter(r trace.Reader) (trace.Reader, error) {
	keep, err := w.eventFilter(r)
	if keep == nil || err != nil {
		return r, err
	}
	f := filtered{Reader: r, keep: keep, evs: make([]trace.Event, 1)}
	if br, ok := r.(interface {
		ReadEvents([]trace.Event) (int, error)
	}); ok {
		f.batch, f.evs = br.ReadEvents, make([]trace.Event, filterBatch)
	}
	if da, ok := r.(trace.DetailsAppender); ok {
		return &filteredAppender{f, da}, nil
	}
	return &f, nil
}

// filterBatch is how many events filtered reads at a time from a reader
// that reads in batches (CPEL, synth): the selection then costs a loop
// over a slice rather than a call into the reader per event.
const filterBatch = 4096

// filtered is a reader of the events of Reader that keep keeps. It reads
// into evs, one event at a time or a batch at a time through batch, so
// that keep's argument lives in evs, not on the heap.
type filtered struct {
	trace.Reader
	keep  func(*trace.Event) bool
	batch func([]trace.Event) (int, error) // nil: the reader has no batch read
	evs   []trace.Event
	i, n  int   // evs[i:n] are read and not yet filtered
	err   error // what ended reading after evs[:n]
}

func (f *filtered) ReadEvent() (trace.Event, error) {
	for {
		for f.i < f.n {
			e := &f.evs[f.i]
			f.i++
			if f.keep(e) {
				return *e, nil
			}
		}
		if f.err != nil {
			return trace.Event{}, f.err
		}
		f.i, f.n = 0, 0
		if f.batch != nil {
			n, err := f.batch(f.evs)
			f.n, f.err = min(max(n, 0), len(f.evs)), err
		} else if e, err := f.Reader.ReadEvent(); err != nil {
			f.err = err
		} else {
			f.evs[0], f.n = e, 1
		}
	}
}

// filteredAppender is filtered over a trace.DetailsAppender, which it
// stays, so that the dump's encoder keeps decoding into its buffers.
type filteredAppender struct {
	filtered
	trace.DetailsAppender
}

// commandFormats are the formats dump and export read: the viewer's,
// and trace/synth's one-line synthetic files (`SYNTH1 events=N seed=S
// tracks=T`), so that a benchmark can dump millions of events from a few
// bytes. The server does not read those: an upload of a few bytes must
// not stand for an unbounded trace.
func commandFormats() []trace.Format { return append(formats(), synth.Format{}) }
