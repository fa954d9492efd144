package render

import (
	"context"
	"errors"

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
