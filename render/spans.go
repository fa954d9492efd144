package render

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"viewer/trace"
	"viewer/trace/span"
)

// Derived tracks: the interval index.
//
// A derived track (trace/span) is split into lanes, one per nesting
// depth, each sorted by start. A viewport query walks a lane from the
// first slice that reaches into the viewport, and what it costs depends
// on the pixels, not on the slices:
//
//   - a slice at least one bucket (a power-of-two ns ≥ ns per pixel, the
//     instant tracks' buckets) long is returned whole, as one item, at any
//     zoom: O(1) per slice, and at most one per bucket can start in a
//     non-overlapping lane;
//   - the slices shorter than a bucket that start in one bucket become one
//     summary item: how many start there and the busy fraction of the
//     bucket (the time any slice of the lane covers, from prefix sums of
//     the slices' lengths: two binary searches). The next bucket is found
//     by a galloping search, and the next slice long enough to be
//     returned whole by a pyramid of the largest length per aligned block
//     of 2^k slices (k ≥ 4, half a byte per slice), so a million tiny slices
//     cost O(buckets · log n), never O(slices). At resolutions where a
//     lane's time cells hold two slices or more on average, a bucket is a
//     cell and costs two reads, its first slice and its busy fraction
//     (startCells), with no search.
//
// Counter tracks keep their samples in time order with a pyramid of the
// minimum and maximum per aligned block: a bucket's item carries the
// minimum and maximum the counter took in it (including the value it
// entered the bucket with), so a peak never vanishes when zoomed out.
//
// A lane holds, beside the slices themselves (in the span.Set), only
// their starts and the prefix sums of their lengths (16 bytes per slice,
// 8 in compact form, from which every end and length follows) and the
// pyramid: a query touches two flat arrays. A lane that is all of its
// track's slices (one depth) reads the starts from the set's column
// instead and keeps only the prefix sums (4 bytes per slice); a lane of a
// contiguous track (a CPU's, a thread's states: each slice starts where
// the one before it ends) keeps neither, the prefix sums following from
// the starts. The index is built once, after reading, from the finished
// span.Set; it is immutable and safe for concurrent queries.

// Spans is the queryable index of a trace's derived tracks.
type Spans struct {
	set      *span.Set
	lanes    [][]lane // by span.TrackID, by depth
	counters []*counterIndex
}

// lane is the slices of one track at one depth, in start order: all the
// track's slices (a track with one depth, as CPU, state and syscall
// tracks are), or those idx lists.
type lane struct {
	depth  uint16
	n      int
	idx    []int32      // indexes into the track's slices; nil when the lane is all of them
	coarse []trace.Time // every 1<<coarseBits-th start
	// cells[k] are the time cells of level cellBase+k: for the aligned
	// cells of 2^(cellBase+k) ns from cell cell0[k] on, the first slice
	// starting in or after each (see startCells).
	cells [][]int32
	// fracs[k][c] is the busy fraction of cell c of that level (the time
	// the lane's slices cover in it over its length, in [0, 1]; kept
	// only for a lane without overlaps, whose walk through the cells
	// reads it).
	fracs    [][]float32
	cell0    []int64
	cellBase int
	maxEnd   []trace.Time // prefix maximum of end; nil when end already is (no overlap)
	// pts[i] is slice i's start beside the total length of slices
	// 0..i-1, side by side so that a bucket's busy time reads one or two
	// cache lines; pts[n] holds the total. When every block of
	// 1<<coarseBits slices spans less than 2^32 ns and covers less than
	// 2^32 ns, as on a busy CPU, the lane keeps them in 8 bytes instead
	// (cpts, relative to coarse and cum0) and pts is nil.
	pts  []point
	cpts []cpoint
	cum0 []int64 // the total length of the slices before each block
	// col holds the lane's slices when they are all of a contiguous
	// track's (span.Column.Contiguous: a CPU track, a thread's states):
	// their starts are read from it, and the total length of the slices
	// before one is its start's distance from the first (total, after the
	// last); pts and cpts are nil, and so are fracs, each cell's busy
	// fraction being the part of it between the first start and the
	// last end.
	col   *span.Column
	total int64
	// src holds the lane's slices when they are all of a track's that
	// is not contiguous (a thread's syscalls): their starts are read
	// from it, and ccum holds the total lengths (relative to cum0, as
	// cpts does) in 4 bytes a slice; nil with pts.
	src  *span.Column
	ccum []uint32
	wide [][]uint32 // wide[k-wideBase][b]: longest slice in block b of 2^k (saturated: see shorter)
}

// cpoint is a point relative to its block's first start and total.
type cpoint struct{ start, cum uint32 }

func (l *lane) at(i int) int32 {
	if l.idx != nil {
		return l.idx[i]
	}
	return int32(i)
}

// point is a slice's start and the total length of the slices before it.
type point struct {
	start trace.Time
	cum   int64
}

func (l *lane) start(i int) trace.Time {
	switch {
	case l.pts != nil:
		return l.pts[i].start
	case l.col != nil:
		return l.col.Start(i)
	case l.src != nil:
		return l.src.Start(i)
	}
	return l.coarse[i>>coarseBits] + trace.Time(l.cpts[i].start)
}

// cum returns the total length of slices 0..i-1 (0 ≤ i ≤ n).
func (l *lane) cum(i int) int64 {
	switch {
	case l.pts != nil:
		return l.pts[i].cum
	case l.ccum != nil:
		return l.cum0[i>>coarseBits] + int64(l.ccum[i])
	case l.col == nil:
	case i < l.n:
		return int64(l.col.Start(i) - l.coarse[0])
	default:
		return l.total
	}
	return l.cum0[i>>coarseBits] + int64(l.cpts[i].cum)
}

// spanFrac returns the busy fraction of [t, t+res) in a contiguous lane
// (col): the part of it its slices cover, from the first start to the
// last end.
func (l *lane) spanFrac(t trace.Time, res int64) float32 {
	first := l.coarse[0]
	lo, hi := max(t, first), min(t+trace.Time(res), first+trace.Time(l.total))
	return busyFrac(max(int64(hi-lo), 0), res)
}

func (l *lane) dur(i int) int64 {
	if c := l.column(); c != nil { // one read of the column, not two of the starts
		s, e := c.Times(i)
		return int64(e - s)
	}
	return l.cum(i+1) - l.cum(i)
}

// column returns the column the lane reads its slices' times from, or
// nil.
func (l *lane) column() *span.Column {
	if l.col != nil {
		return l.col
	}
	return l.src
}

func (l *lane) end(i int) trace.Time {
	if c := l.column(); c != nil {
		return c.End(i)
	}
	return l.start(i) + trace.Time(l.dur(i))
}

const wideBase = 4

// maxWide is the largest length the pyramid of longest slices holds: a
// block with a slice that long or longer holds it, and is never skipped.
const maxWide = 1<<32 - 1

// shorter reports whether every slice of a block whose longest slice the
// pyramid holds as w is shorter than res.
func shorter(w uint32, res int64) bool { return w != maxWide && int64(w) < res }

type counterIndex struct {
	time  []trace.Time
	value []float64
	min   [][]float64 // per level k ≥ wideBase, per aligned block of 2^k samples
	max   [][]float64
}

// NewSpans indexes a finished set of derived tracks.
func NewSpans(set *span.Set) *Spans {
	s := &Spans{set: set, lanes: make([][]lane, len(set.Tracks)), counters: make([]*counterIndex, len(set.Tracks))}
	// Largest first, on every core, as finishTracks does for instants.
	ids := make([]span.TrackID, len(set.Tracks))
	for i := range ids {
		ids[i] = span.TrackID(i)
	}
	slices.SortFunc(ids, func(a, b span.TrackID) int { return set.Column(b).Len() - set.Column(a).Len() })
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(ids)) {
		wg.Go(func() {
			var sc laneScratch
			for k := next.Add(1) - 1; k < int64(len(ids)); k = next.Add(1) - 1 {
				id := ids[k]
				if c := set.Column(id); c.Len() > 0 {
					s.lanes[id] = buildLanes(c, &sc)
				}
				if sm := set.TrackSamples(id); len(sm) > 0 {
					s.counters[id] = buildCounter(sm)
				}
			}
		})
	}
	wg.Wait()
	return s
}

// laneScratch is memory building lanes needs only while it works, kept
// from lane to lane.
type laneScratch struct {
	busy, busyPrev []int64      // the busy times before cells of two levels (startCells)
	starts, ends   []trace.Time // a batch of slices' times (finish)
}

// timesBatch is how many slices' times lane.finish reads at a time: a
// chunk of a span.Column.
const timesBatch = 1 << 10

func buildLanes(c *span.Column, sc *laneScratch) []lane {
	depths := c.Depths()
	lanes := make([]lane, len(depths))
	for i, d := range depths {
		lanes[i] = lane{depth: d}
	}
	if len(depths) == 1 {
		lanes[0].n = c.Len()
	} else {
		for i := range c.Len() { // c is in start order: each lane is too
			k, _ := slices.BinarySearch(depths, c.Depth(i))
			lanes[k].idx = append(lanes[k].idx, int32(i))
		}
		for i := range lanes {
			lanes[i].n = len(lanes[i].idx)
		}
	}
	for i := range lanes {
		lanes[i].finish(c, sc)
	}
	return lanes
}

func (l *lane) finish(c *span.Column, sc *laneScratch) {
	n := l.n
	at := func(i int) int {
		if l.idx != nil {
			return int(l.idx[i])
		}
		return i
	}
	// One pass: the coarse starts, the block totals, whether the lane
	// fits the compact points, and those points while it does, the
	// longest slice of each block of the finest wide level, and the
	// finest level's time cells; a second pass writes the wide points
	// when the compact ones do not fit. A contiguous lane needs no
	// points.
	contig := l.idx == nil && n > 0 && c.Contiguous()
	// All of a track's slices otherwise: the starts are read from the
	// column, the points keep the totals alone (ccum).
	fromCol := l.idx == nil && !contig
	blocks := (n + 1<<coarseBits - 1) >> coarseBits
	l.coarse = make([]trace.Time, blocks)
	var cum0 []int64
	var cpts []cpoint
	var ccum []uint32
	switch {
	case fromCol:
		cum0, ccum = make([]int64, n>>coarseBits+1), make([]uint32, n+1)
	case !contig:
		cum0, cpts = make([]int64, n>>coarseBits+1), make([]cpoint, n+1)
	}
	compact := !contig
	wide0 := make([]uint32, n>>wideBase)
	var cs cellStart
	if n > 0 {
		cs = newCellStart(c.Start(at(0)), c.Start(at(n-1)), n, sc)
	}
	overlap := false
	var prevStart, prevEnd trace.Time
	var cum int64
	// The times are read a chunk's worth at a time: for a lane that is
	// all of its track's slices, in one pass over each chunk of the
	// column.
	if sc.starts == nil {
		sc.starts, sc.ends = make([]trace.Time, timesBatch), make([]trace.Time, timesBatch)
	}
	starts, ends := sc.starts, sc.ends
	for i0, m := 0, 0; i0 < n; i0 += m {
		if l.idx == nil {
			m = c.ReadTimes(i0, starts, ends)
		} else {
			m = min(n-i0, len(starts))
			for j := range m {
				starts[j], ends[j] = c.Times(int(l.idx[i0+j]))
			}
		}
		for j := range m {
			s, e, i := starts[j], ends[j], i0+j
			b := i >> coarseBits
			if i&(1<<coarseBits-1) == 0 {
				l.coarse[b] = s
				if !contig {
					cum0[b] = cum
				}
			}
			switch {
			case !compact:
			case fromCol:
				if uint64(cum-cum0[b]) >= 1<<32 {
					compact = false
				} else {
					ccum[i] = uint32(cum - cum0[b])
				}
			case uint64(s-l.coarse[b]) >= 1<<32 || uint64(cum-cum0[b]) >= 1<<32:
				compact = false
			default:
				cpts[i] = cpoint{start: uint32(s - l.coarse[b]), cum: uint32(cum - cum0[b])}
			}
			if i > 0 && s < prevEnd {
				overlap = true
			}
			if w := i >> wideBase; w < len(wide0) {
				wide0[w] = max(wide0[w], uint32(min(uint64(e-s), maxWide)))
			}
			if cs.firsts != nil {
				cs.add(i, s, prevStart, prevEnd, cum)
			}
			prevStart, prevEnd = s, e
			cum += int64(e - s)
		}
	}
	switch {
	case contig:
		l.col, l.total = c, cum
	case n&(1<<coarseBits-1) == 0:
		cum0[n>>coarseBits] = cum
	case uint64(cum-cum0[n>>coarseBits]) >= 1<<32:
		compact = false
	}
	switch {
	case contig:
	case compact && fromCol:
		ccum[n] = uint32(cum - cum0[n>>coarseBits])
		l.src, l.ccum, l.cum0 = c, ccum, cum0
	case compact:
		cpts[n].cum = uint32(cum - cum0[n>>coarseBits])
		l.cpts, l.cum0 = cpts, cum0
	default:
		l.pts = make([]point, n+1)
		for i := range n {
			s, e := c.Times(at(i))
			l.pts[i].start = s
			l.pts[i+1].cum = l.pts[i].cum + int64(e-s)
		}
	}
	if overlap {
		l.maxEnd = make([]trace.Time, n)
		m := trace.Time(-1 << 63)
		for i := range n {
			m = max(m, l.end(i))
			l.maxEnd[i] = m
		}
	}
	if cs.firsts != nil {
		cs.end(n, prevStart, prevEnd, cum)
		l.startCells(cs, sc)
	}
	if len(wide0) > 0 {
		l.wide = append(l.wide, wide0)
	}
	for k := wideBase + 1; n>>k > 0; k++ {
		prev, blocks := l.wide[len(l.wide)-1], make([]uint32, n>>k)
		for b := range blocks {
			blocks[b] = max(prev[2*b], prev[2*b+1])
		}
		l.wide = append(l.wide, blocks)
	}
}

// reach returns the first slice that ends after t (the first that can
// reach into a viewport starting at t).
func (l *lane) reach(t trace.Time) int {
	if l.maxEnd != nil {
		return sort.Search(l.n, func(i int) bool { return l.maxEnd[i] > t })
	}
	return sort.Search(l.n, func(i int) bool { return l.end(i) > t })
}

// cellSlices is how many slices a time cell of a lane's finest cell level
// holds at most on average; finer buckets are searched (few slices each).
// Buckets a little coarser than a lane's mean slice spacing are what a
// view of a sparse lane (a thread's syscalls, its states) shows most, and
// searching them costs several times what reading cells does.
const cellSlices = 2

// startCells builds the lane's time cells, as the instant tracks have
// them (cells.go): for every power-of-two resolution from the one whose
// cells hold about cellSlices slices up to the lane's whole extent, the
// first slice starting in or after each aligned cell. A viewport bucket
// is one cell, so a query finds where a bucket's slices end with one
// read instead of a search, and, beside it, the busy fraction of each
// cell, the bucket's own. At most 8 bytes per slice (n/2 + n/4 + … cells
// of 8 bytes). The finest level, cs, finish found while it read the
// slices; each coarser one follows from the one below.
func (l *lane) startCells(cs cellStart, sc *laneScratch) {
	n := l.n
	first, last, base := cs.first, cs.last, cs.base
	// busy[c], busyPrev[c]: the time the slices cover before cell c's
	// start, at this level and the finer one (whose even cells start
	// where this level's do).
	busy, busyPrev := cs.busy, sc.busyPrev
	defer func() { sc.busy, sc.busyPrev = busy[:0], busyPrev[:0] }()
	for k := base; k <= 62; k++ {
		c0, c1 := int64(first)>>k, int64(last)>>k+1 // cells [c0, c1] (c1: after the last start)
		var firsts []int32
		if k == base {
			firsts = cs.firsts
		} else {
			firsts = make([]int32, c1-c0+1)
			prev, p0 := l.cells[len(l.cells)-1], l.cell0[len(l.cell0)-1]
			for c := range firsts {
				j := 2*(c0+int64(c)) - p0
				switch {
				case j < 0:
					firsts[c] = 0
				case j >= int64(len(prev)):
					firsts[c] = int32(n)
				default:
					firsts[c] = prev[j]
				}
			}
		}
		var fracs []float32
		if l.maxEnd == nil && l.col == nil {
			if k > base {
				busy, busyPrev = busyPrev[:0], busy
				p0 := l.cell0[len(l.cell0)-1] // the finer level's first cell
				for c := range firsts {
					if j := 2*(c0+int64(c)) - p0; j >= 0 && j < int64(len(busyPrev)) {
						busy = append(busy, busyPrev[j])
					} else {
						busy = append(busy, l.busyUpTo(trace.Time((c0+int64(c))<<k), int(firsts[c])))
					}
				}
			}
			fracs = make([]float32, len(firsts)-1)
			for c := range fracs {
				fracs[c] = busyFrac(busy[c+1]-busy[c], 1<<k)
			}
		}
		l.cells, l.cell0, l.fracs = append(l.cells, firsts), append(l.cell0, c0), append(l.fracs, fracs)
		if c1-c0 <= 1 {
			break
		}
	}
	l.cellBase = base
}

// cellStart is a lane's finest level of time cells while finish reads
// its slices in order: the first slice starting in or after each cell,
// and the time the slices before it cover before the cell's start.
type cellStart struct {
	first, last trace.Time // the first and last starts
	base        int        // the level
	c0          int64      // the first cell
	firsts      []int32    // nil: the lane has no cells
	busy        []int64
	cur         int // the cells up to cur are done
}

// newCellStart returns the finest cell level of a lane of n slices
// starting from first to last, with no cells when it is too short or
// spans too much time for them.
func newCellStart(first, last trace.Time, n int, sc *laneScratch) cellStart {
	extent := uint64(last-first) + 1
	base := bits.Len64(extent * cellSlices / uint64(n)) // 2^base ≥ extent·cellSlices/n
	if n < 4*cellSlices || extent > 1<<56 || base > 62 {
		return cellStart{}
	}
	c0, c1 := int64(first)>>base, int64(last)>>base+1 // cells [c0, c1] (c1: after the last start)
	m := int(c1 - c0 + 1)
	if cap(sc.busy) < m {
		sc.busy = make([]int64, m)
	}
	return cellStart{first: first, last: last, base: base, c0: c0, firsts: make([]int32, m), busy: sc.busy[:m], cur: -1}
}

// add notes slice i, starting at s, after slice i-1 from prevStart to
// prevEnd, and the slices before i-1 covering cum − (prevEnd −
// prevStart).
func (cs *cellStart) add(i int, s, prevStart, prevEnd trace.Time, cum int64) {
	c := int(int64(s)>>cs.base - cs.c0)
	cs.fill(min(c, len(cs.firsts)-1), i, prevStart, prevEnd, cum)
}

// fill ends the cells after cur up to c at slice i: they start after
// slice i-1 and not after slice i.
func (cs *cellStart) fill(c, i int, prevStart, prevEnd trace.Time, cum int64) {
	for cs.cur < c {
		cs.cur++
		cs.firsts[cs.cur] = int32(i)
		cs.busy[cs.cur] = 0
		if i > 0 { // as busyUpTo: slice i-1 up to the cell's start
			t := trace.Time((cs.c0 + int64(cs.cur)) << cs.base)
			d := int64(prevEnd - prevStart)
			cs.busy[cs.cur] = cum - d + min(int64(t-prevStart), d)
		}
	}
}

// end ends the cells after the last of the n slices.
func (cs *cellStart) end(n int, prevStart, prevEnd trace.Time, cum int64) {
	cs.fill(len(cs.firsts)-1, n, prevStart, prevEnd, cum)
}

// firstAt returns the first slice starting at or after t, a multiple of
// 2^level, from the cells; ok is false when the lane has no cells of
// that level.
func (l *lane) firstAt(level int, t trace.Time) (int, bool) {
	k := level - l.cellBase
	if k < 0 || k >= len(l.cells) {
		return 0, false
	}
	c := int64(t)>>level - l.cell0[k]
	switch {
	case c < 0:
		return 0, true
	case c >= int64(len(l.cells[k])):
		return l.n, true
	}
	return int(l.cells[k][c]), true
}

// coarseBits: a lane keeps every 64th start in a small array (coarse), so
// that finding the end of a bucket holding thousands of slices touches a
// few cache lines of it and one 64-slice block of starts, not a dozen
// lines scattered over the bucket.
const coarseBits = 6

// searchStart returns the first index in [lo, hi) whose slice starts at
// or after t, or hi: galloping from lo, near slices first.
func (l *lane) searchStart(lo, hi int, t trace.Time) int {
	if lo >= hi || l.start(lo) >= t {
		return lo
	}
	// starts[lo] < t. Gallop over the next few slices.
	prev, j, step := lo, lo+1, 1
	for j < hi && l.start(j) < t && step < 1<<coarseBits {
		prev, j, step = j, j+step, step*2
	}
	if j < hi && l.start(j) < t {
		// Far: find the 64-slice block through the coarse starts.
		prev = j
		c, ce := j>>coarseBits+1, (hi-1)>>coarseBits+1 // coarse[c] is starts[c<<coarseBits]
		k, st := c, 1
		for k < ce && l.coarse[k] < t {
			c, k, st = k, k+st, st*2
		}
		hiC := min(k, ce)
		for c < hiC { // the first coarse entry in [c, hiC) at or after t
			m := int(uint(c+hiC) >> 1)
			if l.coarse[m] < t {
				c = m + 1
			} else {
				hiC = m
			}
		}
		// starts[(c-1)<<coarseBits] < t (or it is before prev), and
		// starts[c<<coarseBits] ≥ t when c < ce.
		prev = max(prev, (c-1)<<coarseBits)
		j = min(hi, c<<coarseBits)
	}
	lo, hi = prev+1, min(j, hi)
	for lo < hi { // starts[lo-1] < t
		m := int(uint(lo+hi) >> 1)
		if l.start(m) < t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// nextWide returns the first index ≥ i of a slice at least res long, or
// the lane's length: whole aligned blocks whose longest slice is shorter
// are skipped, the largest block alignment allows first.
func (l *lane) nextWide(i int, res int64) int {
	n := l.n
	for i < n {
		if i&(1<<wideBase-1) == 0 && len(l.wide) > 0 && i>>wideBase < len(l.wide[0]) && shorter(l.wide[0][i>>wideBase], res) {
			k := wideBase
			for k+1-wideBase < len(l.wide) && i&(1<<(k+1)-1) == 0 && i>>(k+1) < len(l.wide[k+1-wideBase]) && shorter(l.wide[k+1-wideBase][i>>(k+1)], res) {
				k++
			}
			i += 1 << k
			continue
		}
		if l.dur(i) >= res {
			return i
		}
		i++
	}
	return n
}

// busyBefore returns the total time slices of the lane cover before t
// (exact for a lane without overlaps).
func (l *lane) busyBefore(t trace.Time) int64 {
	k := sort.Search(l.n, func(i int) bool { return l.start(i) >= t }) // slices before k start before t
	return l.busyUpTo(t, k)
}

// busyUpTo is busyBefore for a t after the starts of exactly the slices
// before k.
func (l *lane) busyUpTo(t trace.Time, k int) int64 {
	if k == 0 {
		return 0
	}
	last := k - 1
	return l.cum(last) + min(int64(t-l.start(last)), l.dur(last))
}

// SpanViewport is a viewport over derived tracks.
type SpanViewport struct {
	Start, End trace.Time
	Width      int
	Tracks     []span.TrackID
}

// SpanItem is one thing a derived track draws in a viewport: a slice
// (Count 1, Summary false) with its own times, or a summary of the
// slices shorter than a bucket that start in one bucket.
type SpanItem struct {
	Start   trace.Time // the slice's start, or the bucket's
	End     trace.Time // the slice's end, or the bucket's
	Slice   int32      // index into the track's slices (Set().Column): the slice, or the bucket's first
	Count   int32      // 1, or the slices starting in the bucket
	Busy    float32    // a summary's covered fraction of the bucket, 0..1
	Depth   uint16
	Summary bool
}

// CounterItem is a counter track in one bucket where it has samples.
type CounterItem struct {
	Bucket   int32
	Count    int32   // samples in the bucket
	Min, Max float64 // over the bucket, including the value it entered with
	Last     float64 // the value at the bucket's end
}

// SpanTrack is one derived track's part of a [SpanSlice].
type SpanTrack struct {
	Track    span.TrackID
	Items    []SpanItem    // by depth, then time
	Counters []CounterItem // counter tracks
}

// SpanSlice is the answer to a viewport query over derived tracks; its
// buckets are those of [Resolution].
type SpanSlice struct {
	Start   trace.Time
	Res     int64
	Buckets int
	Tracks  []SpanTrack
}

// MaxSpanItems bounds the items of one reply; a query past it fails with
// ErrViewport (a lane of overlapping wide slices could otherwise return
// them all).
const MaxSpanItems = 1 << 21

// Bytes returns the memory the index holds beside the set's slices (its
// lanes and counter pyramids), and the slices' own (span.Set.Bytes).
func (s *Spans) Bytes() (index, slices int64) {
	for _, ls := range s.lanes {
		for _, l := range ls {
			index += int64(cap(l.idx))*4 + int64(cap(l.coarse)+cap(l.maxEnd)+cap(l.cell0)+2*cap(l.pts)+cap(l.cpts)+cap(l.cum0))*8 + int64(cap(l.ccum))*4 + 128
			for k, c := range l.cells {
				index += int64(cap(c)+cap(l.fracs[k])) * 4
			}
			for _, w := range l.wide {
				index += int64(cap(w)) * 4
			}
		}
	}
	for _, c := range s.counters {
		if c != nil {
			index += int64(cap(c.time)+cap(c.value)) * 8
			for i := range c.min {
				index += int64(cap(c.min[i])+cap(c.max[i])) * 8
			}
		}
	}
	return index, s.set.Bytes()
}

// Set returns the derived tracks the index answers for.
func (s *Spans) Set() *span.Set { return s.set }

// Query returns the items of the viewport's derived tracks. It checks
// ctx every few thousand steps.
func (s *Spans) Query(ctx context.Context, vp SpanViewport) (*SpanSlice, error) {
	out := &SpanSlice{}
	if err := s.QueryInto(ctx, vp, out); err != nil {
		return nil, err
	}
	return out, nil
}

// QueryInto is Query into out, reusing the storage of its items (as
// Index.QueryInto does): the items of an earlier answer in out are
// overwritten. Tracks are split among up to min(GOMAXPROCS,
// MaxQueryWorkers) goroutines.
func (s *Spans) QueryInto(ctx context.Context, vp SpanViewport, out *SpanSlice) error {
	if len(vp.Tracks) > MaxTracks || (vp.Width+1)*len(vp.Tracks) > MaxCells {
		return errors.Join(ErrViewport, fmt.Errorf("%d derived tracks of %d px are too many", len(vp.Tracks), vp.Width))
	}
	res, start, buckets, err := Resolution(Viewport{Start: vp.Start, End: vp.End, Width: vp.Width})
	if err != nil {
		return err
	}
	out.Start, out.Res, out.Buckets = start, res, buckets
	// Every entry up to the capacity keeps the storage of an earlier
	// answer's items.
	out.Tracks = out.Tracks[:cap(out.Tracks)]
	if n := len(vp.Tracks) - len(out.Tracks); n > 0 {
		out.Tracks = append(out.Tracks, make([]SpanTrack, n)...)
	}
	out.Tracks = out.Tracks[:len(vp.Tracks)]
	end := start + trace.Time(int64(buckets)*res)
	var budget atomic.Int64
	workers := max(1, min(runtime.GOMAXPROCS(0), MaxQueryWorkers, len(vp.Tracks)/tracksPerWorker))
	errs := make([]error, workers)
	part := func(w int) {
		for k := w * len(vp.Tracks) / workers; k < (w+1)*len(vp.Tracks)/workers; k++ {
			id := vp.Tracks[k]
			st := &out.Tracks[k]
			st.Track = id
			if st.Items == nil {
				st.Items = []SpanItem{}
			}
			st.Items, st.Counters = st.Items[:0], st.Counters[:0]
			if id < 0 || int(id) >= len(s.lanes) {
				continue
			}
			for i := range s.lanes[id] {
				var err error
				if st.Items, err = s.lanes[id][i].query(ctx, st.Items, start, end, res, &budget); err != nil {
					errs[w] = err
					return
				}
			}
			if c := s.counters[id]; c != nil {
				st.Counters = c.query(st.Counters, start, end, res)
			}
		}
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
	return errors.Join(errs...)
}

func (l *lane) query(ctx context.Context, items []SpanItem, vs, ve trace.Time, res int64, budget *atomic.Int64) ([]SpanItem, error) {
	n := l.n
	i := l.reach(vs)
	level := bits.TrailingZeros64(uint64(res))
	steps := 0
	defer func() { budget.Add(int64(steps & 1023)) }()
	w := -1 // the next slice at least a bucket long from i on, once known
	for i < n {
		siStart, siEnd := l.start(i), l.end(i)
		if siStart >= ve {
			break
		}
		if steps++; steps&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return items, err
			}
			if budget.Add(1024) > MaxSpanItems {
				return items, errors.Join(ErrViewport, fmt.Errorf("more than %d derived items", MaxSpanItems))
			}
		}
		if l.maxEnd != nil && siEnd <= vs {
			i++ // an overlapped lane: a slice that ended before the view
			continue
		}
		if int64(siEnd-siStart) >= res {
			items = append(items, SpanItem{Depth: l.depth, Start: siStart, End: siEnd, Slice: l.at(i), Count: 1})
			i++
			continue
		}
		if w < i {
			// Not known yet, or behind: no slice between the old i and
			// w is wide, so w stays right until i passes it.
			w = l.nextWide(i, res)
		}
		b := floorDiv(int64(max(siStart, vs)-vs), res)
		bs := vs + trace.Time(b*res)
		be := bs + trace.Time(res)
		// j: the first in [i+1, w) starting at or after be.
		j, ok := l.firstAt(level, be)
		if ok {
			j = min(max(j, i+1), w)
		} else {
			j = l.searchStart(i+1, w, be)
		}
		// The busy time: prefix sums at the bucket's ends. Without
		// overlaps the slices starting before bs are those before i (or
		// up to i when i began before the bucket), and those starting
		// before be those before j (unless the wide slice w does too).
		var busy int64
		if l.maxEnd == nil {
			kb := i
			if siStart < bs {
				kb = i + 1
			}
			ke := j
			if j == w && j < n && l.start(j) < be {
				ke = j + 1
			}
			busy = l.busyUpTo(be, ke) - l.busyUpTo(bs, kb)
		} else {
			busy = l.busyBefore(be) - l.busyBefore(bs)
		}
		items = append(items, SpanItem{Depth: l.depth, Summary: true, Start: bs, End: be, Slice: l.at(i), Count: int32(j - i), Busy: busyFrac(busy, res)})
		i = j
		if !ok || l.maxEnd != nil || i >= w {
			continue
		}
		// Walk the following buckets through the cells alone, until the
		// next wide slice: a bucket costs two reads of the cells and two
		// of their busy times, and no slice is touched.
		k := level - l.cellBase
		firsts, fracs := l.cells[k], l.fracs[k]
		c := int64(bs)>>level - l.cell0[k]
		for i < w {
			// The cell slice i starts in: firsts[c] ≤ i < firsts[c+1].
			for c+1 < int64(len(firsts)) && int(firsts[c+1]) <= i {
				c++
			}
			if c < 0 || c+1 >= int64(len(firsts)) {
				break // outside the cells: the search path takes over
			}
			bs = trace.Time((l.cell0[k] + c) << level)
			if bs >= ve {
				return items, nil
			}
			if steps++; steps&1023 == 0 {
				if err := ctx.Err(); err != nil {
					return items, err
				}
				if budget.Add(1024) > MaxSpanItems {
					return items, errors.Join(ErrViewport, fmt.Errorf("more than %d derived items", MaxSpanItems))
				}
			}
			j = min(max(int(firsts[c+1]), i+1), w)
			var busy float32
			if fracs != nil {
				busy = fracs[c]
			} else {
				busy = l.spanFrac(bs, res)
			}
			items = append(items, SpanItem{Depth: l.depth, Summary: true, Start: bs, End: bs + trace.Time(res), Slice: l.at(i), Count: int32(j - i), Busy: busy})
			i = j
		}
	}
	return items, nil
}

// busyFrac returns the fraction of a bucket of res ns that busy ns
// cover, in [0, 1].
func busyFrac(busy, res int64) float32 {
	return min(max(float32(float64(busy)/float64(res)), 0), 1)
}

func buildCounter(sm []span.Sample) *counterIndex {
	c := &counterIndex{time: make([]trace.Time, len(sm)), value: make([]float64, len(sm))}
	for i, x := range sm {
		c.time[i], c.value[i] = x.Time, x.Value
	}
	n := len(sm)
	for k := wideBase; n>>k > 0; k++ {
		lo, hi := make([]float64, n>>k), make([]float64, n>>k)
		for b := range lo {
			if k == wideBase {
				lo[b], hi[b] = minMax(c.value[b<<k : (b+1)<<k])
			} else {
				pl, ph := c.min[len(c.min)-1], c.max[len(c.max)-1]
				lo[b], hi[b] = min(pl[2*b], pl[2*b+1]), max(ph[2*b], ph[2*b+1])
			}
		}
		c.min, c.max = append(c.min, lo), append(c.max, hi)
	}
	return c
}

func minMax(v []float64) (lo, hi float64) {
	lo, hi = v[0], v[0]
	for _, x := range v[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// rangeMinMax returns the minimum and maximum of values i..j-1 (i < j).
func (c *counterIndex) rangeMinMax(i, j int) (lo, hi float64) {
	lo, hi = c.value[i], c.value[i]
	for i < j {
		k := wideBase
		if i&(1<<k-1) != 0 || i+1<<k > j || len(c.min) == 0 {
			lo, hi = min(lo, c.value[i]), max(hi, c.value[i])
			i++
			continue
		}
		for k+1-wideBase < len(c.min) && i&(1<<(k+1)-1) == 0 && i+1<<(k+1) <= j {
			k++
		}
		lo, hi = min(lo, c.min[k-wideBase][i>>k]), max(hi, c.max[k-wideBase][i>>k])
		i += 1 << k
	}
	return lo, hi
}

func (c *counterIndex) query(items []CounterItem, vs, ve trace.Time, res int64) []CounterItem {
	n := len(c.time)
	i := sort.Search(n, func(k int) bool { return c.time[k] >= vs })
	for i < n && c.time[i] < ve {
		b := floorDiv(int64(c.time[i]-vs), res)
		be := vs + trace.Time((b+1)*res)
		j := i + sort.Search(n-i, func(k int) bool { return c.time[i+k] >= be })
		lo, hi := c.rangeMinMax(i, j)
		if i > 0 { // the value the bucket entered with
			lo, hi = min(lo, c.value[i-1]), max(hi, c.value[i-1])
		}
		items = append(items, CounterItem{Bucket: int32(b), Count: int32(j - i), Min: lo, Max: hi, Last: c.value[j-1]})
		i = j
	}
	return items
}

// deriving is Build's state of derivation.
type deriving struct {
	v    *span.Driver
	took time.Duration
}

// observe shows a batch of events to the deriver, on the reading
// goroutine, timing it.
func (x *Index) observe(evs []trace.Event) {
	dv := x.deriving
	if dv == nil {
		return
	}
	defer x.deriverPanic()
	t0 := time.Now()
	dv.v.ObserveEvents(evs)
	dv.took += time.Since(t0)
}

// finishDerive ends derivation and indexes what was derived. A deriver
// that panics loses the derived tracks, not the index.
func (x *Index) finishDerive() {
	dv := x.deriving
	if dv == nil {
		return
	}
	defer x.deriverPanic()
	t0 := time.Now()
	x.spans = NewSpans(dv.v.Finish())
	dv.took += time.Since(t0)
	x.deriveTime = dv.took
	x.deriving = nil
}

// deriverPanic turns a deriver's panic into the loss of the derived
// tracks (DeriveErr says why), not of the index.
func (x *Index) deriverPanic() {
	if p := recover(); p != nil {
		x.spans, x.deriving = nil, nil
		x.deriveErr = fmt.Errorf("internal error: deriving slice tracks failed: %v", p)
	}
}

// DeriveErr returns why the derived tracks are missing when a deriver
// failed, else nil.
func (x *Index) DeriveErr() error {
	if a := x.attachedState(); a != nil {
		return a.deriveErr
	}
	return x.deriveErr
}

// Spans returns the index of the trace's derived tracks; nil when Build
// had no Options.Derive.
func (x *Index) Spans() *Spans {
	if a := x.attachedState(); a != nil {
		return a.spans
	}
	return x.spans
}

// DeriveTime returns the time Build spent deriving tracks and indexing
// them (within its reading, on the reading goroutine).
func (x *Index) DeriveTime() time.Duration {
	if a := x.attachedState(); a != nil {
		return a.deriveTime
	}
	return x.deriveTime
}
