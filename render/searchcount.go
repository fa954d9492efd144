package render

import (
	"context"
	"math/bits"

	"viewer/trace"
)

// MaxCountChecks bounds the payloads [Index.CountHits] decodes for a
// filter's predicates: past it the counts stop and complete is false. A
// filter without predicates counts from the resident index alone, a scan
// of the type column that costs what the trace's size does.
const MaxCountChecks = 1 << 20

// CountHits counts the events in [lo, hi] that match f into len(counts)
// equal time bins: the event at time t adds one to
// counts[(t-lo)*len(counts)/(hi-lo+1)]. Unlike [Index.Hits] it needs no
// time order, so it walks each track on its own; it checks ctx as it goes
// and returns its error. complete is false when the predicate budget
// ([MaxCountChecks]) ran out before the end; the counts then hold what was
// counted so far (the early part of every track).
func (x *Index) CountHits(ctx context.Context, f Filter, lo, hi trace.Time, counts []int64) (complete bool, err error) {
	clear(counts)
	n := uint64(len(counts))
	if n == 0 || hi < lo {
		return true, nil
	}
	span := uint64(hi-lo) + 1 // 0 when the range is every int64
	q, err := x.newQuery(f)
	if err != nil || q == nil {
		return true, err
	}
	tracks := x.Tracks()
	if len(f.Tracks) > 0 {
		tracks = f.Tracks
	}
	seen := map[trace.TrackID]bool{}
	rr := &runReader{s: x.spill}
	checks := 0
	from := At(lo)
	for _, tid := range tracks {
		t := x.track(tid)
		if seen[tid] || t == nil || t.times.len() == 0 {
			continue
		}
		seen[tid] = true
		c := cursor{t: t, track: tid, want: &q.tf, rr: rr}
		c.i = c.startIndex(from, false)
		for step := false; c.advance(ctx, x, false, step); step = true {
			tm := c.tm
			if tm > hi {
				break
			}
			if checks++; checks&1023 == 0 {
				if err := ctx.Err(); err != nil {
					return false, err
				}
			}
			if q.reads.Load() >= MaxCountChecks {
				return false, ctx.Err()
			}
			match, err := q.check(rr, EventID{Track: tid, Index: int32(c.i)}, tm)
			if err != nil {
				return false, err
			}
			if !match {
				continue
			}
			counts[binOf(uint64(tm-lo), span, n)]++
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	return true, nil
}

// binOf returns d*n/span (span 0 standing for 2^64) without overflow.
func binOf(d, span, n uint64) int {
	if span == 0 {
		h, _ := bits.Mul64(d, n)
		return int(h)
	}
	h, l := bits.Mul64(d, n)
	q, _ := bits.Div64(h, l, span)
	return int(q)
}
