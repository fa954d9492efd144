package render

import (
	"context"
	"errors"
	"math"
	"slices"

	"viewer/trace"
)

// CountTable is what [Index.Count] counts: the events that match a
// filter in a time range, per event type and per track (an area
// selection's table).
type CountTable struct {
	Types  map[trace.TypeID]int64
	Tracks map[trace.TrackID]int64
	Total  int64
	// Complete is false when the count stopped early (its context ended
	// or its budget ran out): the counts are those made by then, the
	// early part of every track walked.
	Complete bool
}

// Count counts the events in [lo, hi] that match f, per type and per
// track. Like [Index.CountHits] it walks each track on its own; type,
// track and time conditions cost a scan of the resident index, the rest
// decodes what it names, within f.Budget. It returns what it counted
// with the context's error or [ErrBudget] when it stopped early, and
// the error of a filter that does not compile or of reading the spill
// file.
func (x *Index) Count(ctx context.Context, f Filter, lo, hi trace.Time) (CountTable, error) {
	t := CountTable{Types: map[trace.TypeID]int64{}, Tracks: map[trace.TrackID]int64{}}
	if hi < lo {
		t.Complete = true
		return t, nil
	}
	q, err := x.newQuery(f)
	if err != nil || q == nil {
		t.Complete = err == nil
		return t, err
	}
	tracks := x.Tracks()
	if len(f.Tracks) > 0 {
		tracks = f.Tracks
	}
	seen := map[trace.TrackID]bool{}
	rr := &runReader{s: x.spill}
	from := At(lo)
	checks := 0
	for _, tid := range tracks {
		tr := x.track(tid)
		if seen[tid] || tr == nil || tr.times.len() == 0 {
			continue
		}
		seen[tid] = true
		c := cursor{t: tr, track: tid, want: &q.tf, rr: rr}
		c.i = c.startIndex(from, false)
		for step := false; c.advance(ctx, x, false, step); step = true {
			if c.tm > hi {
				break
			}
			if checks++; checks&1023 == 0 {
				if err := ctx.Err(); err != nil {
					return t, err
				}
			}
			id := EventID{Track: tid, Index: int32(c.i)}
			match, err := q.check(rr, id, c.tm)
			if err != nil {
				return t, err
			}
			if !match {
				continue
			}
			ty := trace.TypeID(tr.types.at(c.i))
			if ty == typeEscape {
				e, err := x.event(rr, id)
				if err != nil {
					return t, err
				}
				ty = e.Type
			}
			t.Types[ty]++
			t.Tracks[tid]++
			t.Total++
		}
		if err := ctx.Err(); err != nil {
			return t, err
		}
	}
	t.Complete = true
	return t, nil
}

// Stopped reports whether err is how a query ends early with what it
// found: its context's end or its budget.
func Stopped(err error) bool {
	return errors.Is(err, ErrBudget) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// Histogram is the distribution of a numeric field over the events that
// match a filter (Tracy's "find zone" for a field): equal-width bins
// between the smallest and largest value, and percentiles.
type Histogram struct {
	Field    string
	Count    int64   // events with a numeric value of the field
	Missing  int64   // matching events without one
	Min, Max float64 // of the values (0 when Count is 0)
	Mean     float64
	Bins     []int64 // Bins[k] counts values in [Min + k·w, Min + (k+1)·w), the last bin closed; w = (Max−Min)/len(Bins)
	// Percentiles of the values kept (nearest rank): P50, P90, P99.
	P50, P90, P99 float64
	// Complete is false when the count stopped early (context, budget)
	// or more than MaxHistogramValues values were met (the percentiles
	// and bins then describe the first MaxHistogramValues, in the
	// order of the tracks walked).
	Complete bool
}

// MaxHistogramValues bounds the values a histogram keeps (8 bytes each).
const MaxHistogramValues = 1 << 22

// Histogram computes the distribution of field over the events in
// [lo, hi] that match f, in bins bins (at least 1). It returns what it
// counted with the context's error or [ErrBudget] when it stopped early.
func (x *Index) Histogram(ctx context.Context, f Filter, lo, hi trace.Time, field string, bins int) (Histogram, error) {
	h := Histogram{Field: field, Bins: make([]int64, max(bins, 1))}
	r, err := x.reader()
	if err != nil {
		return h, err
	}
	m, err := NewMatcher(Filter{}, r)
	if err != nil {
		return h, err
	}
	var vals []float64
	err = x.walk(ctx, f, lo, hi, func(rr *runReader, id EventID, tm trace.Time) error {
		e, err := x.event(rr, id)
		if err != nil {
			return err
		}
		v, ok := m.FieldValue(&e, field)
		n, num := v.Number()
		if !ok || !num || n != n {
			h.Missing++
			return nil
		}
		if len(vals) == MaxHistogramValues {
			return errHistogramFull
		}
		vals = append(vals, n)
		return nil
	})
	full := err == errHistogramFull
	if full {
		err = nil
	}
	h.Complete = err == nil && !full
	h.Count = int64(len(vals))
	if len(vals) == 0 {
		return h, err
	}
	slices.Sort(vals)
	h.Min, h.Max = vals[0], vals[len(vals)-1]
	sum := 0.0
	w := (h.Max - h.Min) / float64(len(h.Bins))
	for _, v := range vals {
		sum += v
		k := len(h.Bins) - 1
		if w > 0 {
			k = min(int((v-h.Min)/w), len(h.Bins)-1)
		}
		h.Bins[k]++
	}
	h.Mean = sum / float64(len(vals))
	rank := func(p float64) float64 { // nearest rank
		i := int(math.Ceil(p*float64(len(vals)))) - 1
		return vals[max(i, 0)]
	}
	h.P50, h.P90, h.P99 = rank(0.5), rank(0.9), rank(0.99)
	return h, err
}

var errHistogramFull = errors.New("render: histogram full")

// walk calls fn with every event in [lo, hi] that matches f, track by
// track; it stops at fn's first error, the context's end or f's budget.
func (x *Index) walk(ctx context.Context, f Filter, lo, hi trace.Time, fn func(rr *runReader, id EventID, tm trace.Time) error) error {
	if hi < lo {
		return nil
	}
	q, err := x.newQuery(f)
	if err != nil || q == nil {
		return err
	}
	tracks := x.Tracks()
	if len(f.Tracks) > 0 {
		tracks = f.Tracks
	}
	seen := map[trace.TrackID]bool{}
	from := At(lo)
	checks := 0
	for _, tid := range tracks {
		tr := x.track(tid)
		if seen[tid] || tr == nil || tr.times.len() == 0 {
			continue
		}
		seen[tid] = true
		rr := &runReader{s: x.spill}
		c := cursor{t: tr, track: tid, want: &q.tf, rr: rr}
		c.i = c.startIndex(from, false)
		for step := false; c.advance(ctx, x, false, step); step = true {
			if c.tm > hi {
				break
			}
			if checks++; checks&1023 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			id := EventID{Track: tid, Index: int32(c.i)}
			match, err := q.check(rr, id, c.tm)
			if err != nil {
				return err
			}
			if match {
				if err := fn(rr, id, c.tm); err != nil {
					return err
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}
