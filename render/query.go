package render

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync"

	"viewer/trace"
)

// Viewport is what a timeline shows: a time range drawn Width pixels wide
// and the visible tracks.
type Viewport struct {
	Start, End trace.Time // End > Start
	Width      int        // pixels, 1..MaxWidth
	Tracks     []trace.TrackID
}

// Limits on one viewport, the ones the server enforces on every request
// (web/PROTOCOL.md §4) and the page is given (ui/static/js/urlspec.js).
// They are sized for the largest real screen, not for what a client could
// ask: a 4K screen (3840 px, 7680 device pixels at twice the density)
// showing 500 tracks of a few pixels each is 3841 × 500 = 1,920,500 cells.
// A larger request is refused; the page narrows its requests to fit.
const (
	// MaxWidth is the widest viewport in pixels a query accepts: a 4K
	// screen's width at twice the pixel density, rounded up.
	MaxWidth = 1 << 13
	// MaxTracks bounds len(Tracks): the page asks only for the rows it
	// shows, and 2160 screen pixels hold no more than 1024 rows of two
	// pixels.
	MaxTracks = 1 << 10
	// MaxCells bounds (Width+1) × len(Tracks), the most items a reply can
	// hold (16 bytes each on the wire): a reply is at most 32 MiB, about
	// 17 MB on a dense trace, however a client asks.
	MaxCells = 1 << 21
)

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

	bufs [][]Item // backing arrays of the tracks' items per worker, reused by QueryInto
}

// TrackSlice is one track's part of a [Slice]: one item per bucket that
// holds events, in bucket order.
type TrackSlice struct {
	Track trace.TrackID
	Items []Item
}

// Item is one non-empty bucket of one track. An item with Count 1 is an
// individual event, drawn at its exact Time; an item with Count > 1 is an
// aggregate of the bucket's events, drawn over the whole bucket (at most
// two pixels wide).
type Item struct {
	Bucket int32
	Count  int32        // events of the track in the bucket
	First  int32        // track index of the bucket's first event (its EventID.Index)
	Type   trace.TypeID // the event's type, or the bucket's dominant type (see the package doc)
	Time   trace.Time   // the event's time (Count 1), else the bucket's start
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
	if len(vp.Tracks) > MaxTracks {
		return 0, 0, 0, errors.Join(ErrViewport, fmt.Errorf("%d tracks exceed %d", len(vp.Tracks), MaxTracks))
	}
	if (vp.Width+1)*len(vp.Tracks) > MaxCells {
		return 0, 0, 0, errors.Join(ErrViewport, fmt.Errorf("%d tracks of %d px exceed %d cells", len(vp.Tracks), vp.Width, MaxCells))
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

// QueryInto is Query writing into s, reusing its memory. Tracks are
// split among up to min(GOMAXPROCS, MaxQueryWorkers) goroutines.
func (x *Index) QueryInto(ctx context.Context, vp Viewport, s *Slice) error {
	return x.queryInto(ctx, vp, s, nil)
}

// queryInto is QueryInto, each track's items narrowed to the events of m
// when m is not nil (QueryFilteredInto).
func (x *Index) queryInto(ctx context.Context, vp Viewport, s *Slice, m *FilterMask) error {
	res, start, nb, err := Resolution(vp)
	if err != nil {
		return err
	}
	shift := uint(bits.TrailingZeros64(uint64(res)))
	end := start + trace.Time(int64(nb)<<shift)
	s.Start, s.Res, s.Buckets = start, res, nb
	workers := max(1, min(runtime.GOMAXPROCS(0), MaxQueryWorkers, len(vp.Tracks)/tracksPerWorker))
	for len(s.bufs) < workers {
		s.bufs = append(s.bufs, nil)
	}
	offs := make([]int, len(vp.Tracks)+1)
	errs := make([]error, workers)
	part := func(w int) {
		lo, hi := w*len(vp.Tracks)/workers, (w+1)*len(vp.Tracks)/workers
		items := s.bufs[w][:0]
		for k := lo; k < hi; k++ {
			if err := ctx.Err(); err != nil {
				errs[w] = err
				return
			}
			offs[k] = len(items)
			if t := x.track(vp.Tracks[k]); t != nil {
				items = t.query(items, start, end, shift, nb)
				if m != nil {
					items = m.narrow(t, vp.Tracks[k], items, offs[k])
				}
			}
		}
		s.bufs[w] = items
	}
	if workers == 1 {
		part(0)
	} else {
		var wg sync.WaitGroup
		for w := 1; w < workers; w++ {
			wg.Go(func() { part(w) })
		}
		part(0)
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.Tracks = s.Tracks[:0]
	for w := range workers {
		lo, hi := w*len(vp.Tracks)/workers, (w+1)*len(vp.Tracks)/workers
		items := s.bufs[w]
		for k := lo; k < hi; k++ {
			end := len(items)
			if k+1 < hi {
				end = offs[k+1]
			}
			s.Tracks = append(s.Tracks, TrackSlice{Track: vp.Tracks[k], Items: items[offs[k]:end:end]})
		}
	}
	s.Markers = s.Markers[:0]
	for k := range x.markers {
		s.Markers = markerSlice(s.Markers, x.markers[k], start, end, shift)
	}
	return nil
}

// MaxQueryWorkers bounds the goroutines one query uses.
const MaxQueryWorkers = 4

// tracksPerWorker is the fewest tracks worth a goroutine of their own.
const tracksPerWorker = 8

// query appends the items of the track's events in nb buckets of width
// 1<<shift from start to end, from the time cells when the track has
// cells at that level.
func (t *track) query(items []Item, start, end trace.Time, shift uint, nb int) []Item {
	if items, ok := t.sliceCells(items, int(shift), int64(start)>>shift, nb); ok {
		return items
	}
	return t.slice(items, start, end, shift)
}

// slice appends the items of the buckets of width 1<<shift from start to
// end. Buckets that lie within one chunk of the columns (nearly all) are
// cut on the chunk's raw slices; a galloping search starting from the
// previous bucket's count finds each bucket's end in a few probes when the
// event rate changes slowly.
func (t *track) slice(items []Item, start, end trace.Time, shift uint) []Item {
	i := t.lowerBound(start, 0)
	n := t.lowerBound(end, i)
	guess := 1
	for i < n {
		c := i >> chunkBits
		base := c << chunkBits
		ts, ty := t.times.chunk(c), t.types.chunk(c)
		lim := min(n-base, len(ts))
		li := i - base
		for li < lim {
			tm := ts[li]
			b := int64(tm-start) >> shift
			bend := start + trace.Time((b+1)<<shift)
			if ts[lim-1] < bend {
				break // the bucket goes on past this chunk, or ends at n
			}
			var lj int
			if guess <= 8 {
				lj = li + 1
				for ts[lj] < bend { // stops at lim-1 at the latest
					lj++
				}
			} else {
				lj = gallop(ts, bend, li, lim-1, guess)
			}
			it := Item{Bucket: int32(b), Count: int32(lj - li), First: int32(base + li), Time: tm, Type: typeOf(ty[li])}
			if lj-li > 2 { // of two events, the vote keeps the first
				it.Type = t.dominantIn(ty, base, li, lj)
			}
			if lj-li > 1 {
				it.Time = bend - trace.Time(1<<shift)
			}
			items = append(items, it)
			guess = lj - li
			li = lj
		}
		i = base + li
		if i >= n {
			break
		}
		// A bucket that crosses a chunk boundary or ends at n.
		tm := t.times.at(i)
		b := int64(tm-start) >> shift
		j := min(t.lowerBound(start+trace.Time((b+1)<<shift), i+1), n)
		it := Item{Bucket: int32(b), Count: int32(j - i), First: int32(i), Time: tm}
		if j-i == 1 {
			it.Type = typeOf(t.types.at(i))
		} else {
			it.Type = t.dominant(i, j)
			it.Time = start + trace.Time(b<<shift)
		}
		items = append(items, it)
		guess = j - i
		i = j
	}
	return items
}

// gallop returns the first index in (lo, hi] whose time is ≥ tm, given
// ts[lo] < tm ≤ ts[hi], probing first at lo+guess.
func gallop(ts []trace.Time, tm trace.Time, lo, hi, guess int) int {
	p := lo + guess
	if p >= hi {
		p = hi
	}
	if ts[p] >= tm {
		// The answer is in (lo, p]: gallop down from p.
		hi = p
		for step := 1; ; step <<= 1 {
			q := hi - step
			if q <= lo {
				break
			}
			if ts[q] < tm {
				lo = q
				break
			}
			hi = q
		}
	} else {
		// The answer is in (p, hi]: gallop up from p.
		lo = p
		for step := 1; ; step <<= 1 {
			q := lo + step
			if q >= hi {
				break
			}
			if ts[q] >= tm {
				hi = q
				break
			}
			lo = q
		}
	}
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if ts[m] < tm {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
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
