package render

import (
	"context"
	"errors"
	"math/bits"

	"viewer/trace"
)

// Viewport is what a timeline shows: a time range drawn Width pixels wide
// and the visible tracks.
type Viewport struct {
	Start, End trace.Time // End > Start
	Width      int        // pixels, 1..MaxWidth
	Tracks     []trace.TrackID
}

// MaxWidth is the widest viewport in pixels a query accepts.
const MaxWidth = 1 << 16

// MaxTime bounds the viewport times a query accepts (±2^61 ns, about 73
// years): times beyond are clamped, so bucket arithmetic cannot overflow.
const MaxTime trace.Time = 1 << 61

// Slice is the answer to a viewport query. Time is cut into Buckets buckets
// of Res nanoseconds from Start; Res is a power of two at least the
// viewport's nanoseconds per pixel, so there are at most Width+1 buckets
// and panning by whole buckets gives the same buckets again.
type Slice struct {
	Start   trace.Time // start of bucket 0: the viewport start rounded down to a multiple of Res
	Res     int64      // bucket width in nanoseconds, a power of two
	Buckets int
	Tracks  []TrackSlice // in the order of Viewport.Tracks
	Markers []MarkerItem // by kind, then bucket

	items []Item // backing array of the tracks' items, reused by QueryInto
}

// TrackSlice is one track's part of a [Slice]: one item per bucket that
// holds events, in bucket order.
type TrackSlice struct {
	Track trace.TrackID
	Items []Item
}

// Item is one non-empty bucket of one track. An item with Count 1 is an
// individual event (Time is its exact time); an item with Count > 1 is an
// aggregate of the bucket's events.
type Item struct {
	Bucket int32
	Count  int32        // events of the track in the bucket
	First  int32        // track index of the bucket's first event (its EventID.Index)
	Type   trace.TypeID // the event's type, or the bucket's dominant type (see the package doc)
	Time   trace.Time   // time of the bucket's first event
	Last   trace.Time   // time of the bucket's last event
}

// MarkerItem is the markers of one kind in one bucket.
type MarkerItem struct {
	Bucket int32
	Count  int32  // markers of this kind in the bucket
	Marker Marker // the bucket's first marker of this kind
}

// Bucket returns the bucket index of time t (possibly outside 0..Buckets-1).
func (s *Slice) Bucket(t trace.Time) int64 { return floorDiv(int64(t-s.Start), s.Res) }

// BucketStart returns the start time of bucket b.
func (s *Slice) BucketStart(b int) trace.Time { return s.Start + trace.Time(int64(b)*s.Res) }

// ErrViewport is returned for a viewport a query cannot answer.
var ErrViewport = errors.New("render: invalid viewport")

// Resolution returns the bucket width, the first bucket's start and the
// number of buckets a query uses for vp.
func Resolution(vp Viewport) (res int64, start trace.Time, buckets int, err error) {
	if vp.Width < 1 || vp.Width > MaxWidth {
		return 0, 0, 0, errors.Join(ErrViewport, errors.New("width out of range"))
	}
	lo, hi := clampTime(vp.Start), clampTime(vp.End)
	if hi <= lo {
		return 0, 0, 0, errors.Join(ErrViewport, errors.New("end not after start"))
	}
	span := int64(hi - lo)
	per := (span + int64(vp.Width) - 1) / int64(vp.Width)
	res = 1
	if per > 1 {
		res = 1 << bits.Len64(uint64(per-1))
	}
	start = trace.Time(floorDiv(int64(lo), res) * res)
	buckets = int((int64(hi-start) + res - 1) / res)
	return res, start, buckets, nil
}

func clampTime(t trace.Time) trace.Time { return max(-MaxTime, min(t, MaxTime)) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Query answers a viewport. It is safe for concurrent use.
func (x *Index) Query(ctx context.Context, vp Viewport) (*Slice, error) {
	s := new(Slice)
	if err := x.QueryInto(ctx, vp, s); err != nil {
		return nil, err
	}
	return s, nil
}

// QueryInto is Query writing into s, reusing its slices' memory.
func (x *Index) QueryInto(ctx context.Context, vp Viewport, s *Slice) error {
	res, start, nb, err := Resolution(vp)
	if err != nil {
		return err
	}
	shift := uint(bits.TrailingZeros64(uint64(res)))
	end := start + trace.Time(int64(nb)<<shift)
	items := s.items[:0]
	s.Start, s.Res, s.Buckets = start, res, nb
	s.Tracks = s.Tracks[:0]
	offs := make([]int, 0, len(vp.Tracks)+1)
	for _, id := range vp.Tracks {
		if err := ctx.Err(); err != nil {
			return err
		}
		offs = append(offs, len(items))
		if t := x.track(id); t != nil {
			items = t.slice(items, start, end, shift)
		}
	}
	offs = append(offs, len(items))
	s.items = items
	for k, id := range vp.Tracks {
		s.Tracks = append(s.Tracks, TrackSlice{Track: id, Items: items[offs[k]:offs[k+1]:offs[k+1]]})
	}
	s.Markers = s.Markers[:0]
	for k := range x.markers {
		s.Markers = markerSlice(s.Markers, x.markers[k], start, end, shift)
	}
	return nil
}

// slice appends the items of the buckets of width 1<<shift from start to end.
func (t *track) slice(items []Item, start, end trace.Time, shift uint) []Item {
	i := t.lowerBound(start, 0)
	n := t.lowerBound(end, i)
	for i < n {
		tm := t.times.at(i)
		b := int64(tm-start) >> shift
		j := t.lowerBound(start+trace.Time((b+1)<<shift), i+1)
		if j > n {
			j = n
		}
		it := Item{Bucket: int32(b), Count: int32(j - i), First: int32(i), Time: tm}
		if j-i == 1 {
			it.Type = typeOf(t.types.at(i))
			it.Last = tm
		} else {
			it.Type = t.dominant(i, j)
			it.Last = t.times.at(j - 1)
		}
		items = append(items, it)
		i = j
	}
	return items
}

// lowerBound returns the first index ≥ from whose time is ≥ tm, by
// galloping from from: O(log d) for an answer d events away.
func (t *track) lowerBound(tm trace.Time, from int) int {
	n := t.times.len()
	if from >= n || t.times.at(from) >= tm {
		return from
	}
	lo, step := from, 1 // times.at(lo) < tm
	hi := lo + step
	for hi < n && t.times.at(hi) < tm {
		lo = hi
		step <<= 1
		hi = lo + step
	}
	hi = min(hi, n)
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if t.times.at(m) < tm {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

func markerSlice(out []MarkerItem, ms []Marker, start, end trace.Time, shift uint) []MarkerItem {
	i := markerBound(ms, start, 0)
	n := markerBound(ms, end, i)
	for i < n {
		b := int64(ms[i].Time-start) >> shift
		j := min(markerBound(ms, start+trace.Time((b+1)<<shift), i+1), n)
		out = append(out, MarkerItem{Bucket: int32(b), Count: int32(min(j-i, 1<<31-1)), Marker: ms[i]})
		i = j
	}
	return out
}

func markerBound(ms []Marker, tm trace.Time, from int) int {
	lo, hi := from, len(ms)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ms[m].Time < tm {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
