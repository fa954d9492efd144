package render

import (
	"context"
	"slices"

	"viewer/trace"
)

// FilterMask is a filter evaluated once over a whole index: per track,
// a [Bitmap] of the events that match. A viewport filtered by it costs
// what the plain viewport costs plus a rank per item (QueryFilteredInto),
// however many events the filter had to decode.
type FilterMask struct {
	tracks map[trace.TrackID]*Bitmap
	counts map[trace.TrackID]int64
	total  int64
	// Complete is false when the evaluation stopped early (its context
	// ended or its budget ran out): events not reached count as not
	// matching.
	Complete bool
}

// Count returns the matching events of a track.
func (m *FilterMask) Count(id trace.TrackID) int64 { return m.counts[id] }

// Total returns the matching events of every track.
func (m *FilterMask) Total() int64 { return m.total }

// Counts returns the matching events per track (tracks without matches
// are absent). The map is the mask's own: do not change it.
func (m *FilterMask) Counts() map[trace.TrackID]int64 { return m.counts }

// Bitmap returns the set of a track's matching events, nil when none
// matches.
func (m *FilterMask) Bitmap(id trace.TrackID) *Bitmap { return m.tracks[id] }

// Bytes returns the memory the mask holds.
func (m *FilterMask) Bytes() int64 {
	n := int64(64)
	for _, b := range m.tracks {
		n += b.Bytes() + 32
	}
	return n
}

// EvaluateFilter decides f for every event of the index, track by track,
// as [Index.Count] does (type, track and time conditions on the resident
// index, the rest decoding what it names, within f.Budget). When it stops
// early it returns the mask made so far (Complete false) with the
// context's error or [ErrBudget]; other errors (a filter that does not
// compile, a spill read) return a nil mask.
func (x *Index) EvaluateFilter(ctx context.Context, f Filter) (*FilterMask, error) {
	m := &FilterMask{tracks: map[trace.TrackID]*Bitmap{}, counts: map[trace.TrackID]int64{}}
	q, err := x.newQuery(f)
	if err != nil {
		return nil, err
	}
	if q == nil { // nothing can match
		m.Complete = true
		return m, nil
	}
	rr := &runReader{s: x.spill}
	checks := 0
	var out found
	for _, tid := range x.Tracks() {
		tr := x.track(tid)
		n := tr.times.len()
		if n == 0 {
			continue
		}
		var b *Bitmap
		if q.spill { // a spill run at a time (searchrun.go)
			for lo := 0; lo < n; {
				if err := ctx.Err(); err != nil {
					m.add(tid, b)
					return m, err
				}
				out.cut(0)
				next, err := q.own.decideRun(tr, tid, lo, &out)
				if len(out.idx) > 0 && b == nil {
					b = NewBitmap(n)
				}
				for _, i := range out.idx {
					b.Set(int(i))
				}
				if err != nil {
					m.add(tid, b)
					if Stopped(err) {
						return m, err
					}
					return nil, err
				}
				lo = next
			}
			m.add(tid, b)
			continue
		}
		c := cursor{t: tr, track: tid, want: &q.tf, rr: rr}
		for step := false; c.advance(ctx, x, false, step); step = true {
			if checks++; checks&1023 == 0 && ctx.Err() != nil {
				break
			}
			match, err := q.check(rr, EventID{Track: tid, Index: int32(c.i)}, c.tm)
			if err != nil {
				m.add(tid, b)
				if Stopped(err) {
					return m, err
				}
				return nil, err
			}
			if match {
				if b == nil {
					b = NewBitmap(n)
				}
				b.Set(c.i)
			}
		}
		m.add(tid, b)
		if err := ctx.Err(); err != nil {
			return m, err
		}
	}
	m.Complete = true
	return m, nil
}

// add keeps a track's bitmap, if any.
func (m *FilterMask) add(id trace.TrackID, b *Bitmap) {
	if b == nil {
		return
	}
	b.Finish()
	if c := b.Count(); c > 0 {
		m.tracks[id] = b
		m.counts[id] = int64(c)
		m.total += int64(c)
	}
}

// QueryFilteredInto answers a viewport with only the events m holds: it
// runs [Index.QueryInto] and narrows every item to its matching events by
// ranks of the track's bitmap (an item's events are the index range
// [First, First+Count), and the next item mostly starts where it ends, so
// about one rank per item), so its cost is the plain query's plus
// O(pixels × tracks). An item stays only when some of its events match;
// its Count becomes theirs and First the first of them; a lone match is
// an individual event at its own time and type, and several that are
// not the whole bucket take the type of the first match.
func (x *Index) QueryFilteredInto(ctx context.Context, vp Viewport, m *FilterMask, s *Slice) error {
	return x.queryInto(ctx, vp, s, m)
}

// narrow narrows the items of track t from items[from:] (QueryFilteredInto)
// and returns items cut to the ones kept.
func (m *FilterMask) narrow(t *track, id trace.TrackID, items []Item, from int) []Item {
	b := m.tracks[id]
	if b == nil {
		return items[:from]
	}
	out := items[:from]
	end, rend := -1, 0 // the previous item's end and its rank: the next item usually starts there
	for _, it := range items[from:] {
		lo := int(it.First)
		r := rend
		if lo != end {
			r = b.Rank(lo)
		}
		end = lo + int(it.Count)
		rend = b.Rank(end)
		c := rend - r
		if c == 0 {
			continue
		}
		if c < int(it.Count) {
			f := b.Select(r)
			it.First, it.Count = int32(f), int32(c)
			it.Type = typeOf(t.types.at(f))
			if c == 1 {
				it.Time = t.times.at(f)
			}
		}
		out = append(out, it)
	}
	return out
}

// Seek returns the position just before the k-th (from 0) event the
// mask holds on the given tracks (every track when empty) from time lo
// on, in the order of search (time, then track id, then index), so that
// [Index.Hits] from it yields that event first: random access into an
// events table of the mask, O(tracks · log n · log span). ok is false
// when the mask holds no more than k such events.
func (x *Index) Seek(m *FilterMask, tracks []trace.TrackID, lo trace.Time, k int64) (from Position, ok bool) {
	if k < 0 {
		return Position{}, false
	}
	if len(tracks) == 0 {
		tracks = x.Tracks()
	}
	ids := slices.Clone(tracks)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	type part struct {
		id   trace.TrackID
		t    *track
		b    *Bitmap
		base int // rank of the first event at lo or later
	}
	var parts []part
	for _, id := range ids {
		t, b := x.track(id), m.tracks[id]
		if t == nil || b == nil {
			continue
		}
		parts = append(parts, part{id, t, b, b.Rank(t.lowerBound(lo, 0))})
	}
	// before(T): the events at lo..T-1.
	before := func(T trace.Time) int64 {
		var c int64
		for _, p := range parts {
			c += int64(p.b.Rank(p.t.lowerBound(T, 0)) - p.base)
		}
		return c
	}
	_, last := x.Span()
	hiT := max(lo, last) + 1
	if hiT > MaxTime || before(hiT) <= k {
		return Position{}, false
	}
	// The least T with before(T+1) > k: the k-th event's time.
	a, b := lo, hiT-1
	for a < b {
		mid := a + (b-a)/2
		if before(mid+1) > k {
			b = mid
		} else {
			a = mid + 1
		}
	}
	skip := k - before(a)
	for _, p := range parts {
		i0, i1 := p.t.lowerBound(a, 0), p.t.lowerBound(a+1, 0)
		r0 := p.b.Rank(i0)
		n := int64(p.b.Rank(i1) - r0)
		if skip < n {
			e := p.b.Select(r0 + int(skip))
			return Position{Time: a, ID: EventID{Track: p.id, Index: int32(e - 1)}}, true
		}
		skip -= n
	}
	return Position{}, false
}

// CountMasked returns the events the mask holds in [lo, hi] on the given
// tracks (every track when empty), by two ranks per track.
func (x *Index) CountMasked(m *FilterMask, tracks []trace.TrackID, lo, hi trace.Time) int64 {
	if hi < lo {
		return 0
	}
	if len(tracks) == 0 {
		tracks = x.Tracks()
	}
	ids := slices.Clone(tracks)
	slices.Sort(ids)
	var c int64
	for i, id := range ids {
		t, b := x.track(id), m.tracks[id]
		if t == nil || b == nil || i > 0 && ids[i-1] == id {
			continue
		}
		i0 := t.lowerBound(lo, 0)
		i1 := i0
		if hi < MaxTime {
			i1 = t.lowerBound(hi+1, i0)
		} else {
			i1 = t.times.len()
		}
		c += int64(b.Rank(i1) - b.Rank(i0))
	}
	return c
}
