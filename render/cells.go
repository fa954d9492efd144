package render

import (
	"slices"
	"unsafe"

	"viewer/trace"
)

// Time cells answer the coarse zoom levels in O(1) per bucket. A query
// snaps its buckets to multiples of a power of two, so at resolution 2^L
// bucket b is exactly the aligned time cell [c·2^L, (c+1)·2^L) for some c.
// After reading, each track gets, for every level L from its cellBase up,
// the index of the first event of every cell of its time span and the
// majority-vote candidate of the cell's types (merged up from the finest
// level as in the index pyramid, so a type holding more than half of a
// cell is its candidate). cellBase is the finest level with at most
// n/cellDensity cells, so the cells cost at most 2·6/cellDensity bytes
// per event whatever the track's time span or burstiness. Finer queries
// go through the index pyramid.

// cellDensity is the mean number of events per cell at a track's finest
// cell level.
const cellDensity = 4

// minCells is the fewest cells a level must have to be kept; coarser
// queries touch so few buckets that the index pyramid answers them fast.
const minCells = 8

// cellLevel is one level of a track's time cells.
type cellLevel struct {
	origin int64    // absolute number of the first cell: its start is origin<<level
	firsts []int32  // firsts[c] is the index of the first event at or after cell c's start; len(types)+1 entries
	types  []uint16 // majority-vote candidate of each cell (meaningless for empty cells)
	stored bool     // firsts and types lie in the store (store.go)
}

// seal moves the level's arrays to the store st (when not nil), and
// gives their heap copies back to sc when it did.
func (lv *cellLevel) seal(st *store, sc *cellScratch) {
	if st == nil || lv.stored || len(lv.types) == 0 {
		return
	}
	f, ty := storeSlice(st, lv.firsts, true), storeSlice(st, lv.types, true)
	if &f[0] != &lv.firsts[0] {
		spare(&sc.firsts, lv.firsts)
	}
	if &ty[0] != &lv.types[0] {
		spare(&sc.ctypes, lv.types)
	}
	lv.stored = &f[0] != &lv.firsts[0] && &ty[0] != &lv.types[0]
	lv.firsts, lv.types = f, ty
}

// cellPack is the size below which a level's arrays are not written to
// the store on their own but with the track's other small levels, in one
// write once the track's cells are built (sealPacked): a track's levels
// halve in size up to minCells cells, so most of a trace's levels are a
// few hundred bytes, and a write costs a system call and the file
// system's work per call (3000 of the 3500 writes of the time cells of
// an 8M-event CPEL file were under 4 KB).
const cellPack = 64 << 10

// size returns the bytes of the level's arrays.
func (lv *cellLevel) size() int { return 4*len(lv.firsts) + 2*len(lv.types) }

// sealPacked moves the levels of lvs not in the store yet to st in one
// write, laid out one after the other (each array 8-byte aligned); they
// stay on the heap when the store does not take them.
func sealPacked(st *store, lvs []cellLevel, sc *cellScratch) {
	if st == nil {
		return
	}
	n := 0
	for i := range lvs {
		if lv := &lvs[i]; !lv.stored && len(lv.types) > 0 {
			n = (n+7)&^7 + 4*len(lv.firsts)
			n = (n+7)&^7 + 2*len(lv.types)
		}
	}
	if n == 0 {
		return
	}
	buf := slices.Grow(sc.pack[:0], n)[:n]
	sc.pack = buf
	at := 0
	for i := range lvs {
		if lv := &lvs[i]; !lv.stored && len(lv.types) > 0 {
			at = (at+7)&^7 + copy(buf[(at+7)&^7:], bytesOf(lv.firsts))
			at = (at+7)&^7 + copy(buf[(at+7)&^7:], bytesOf(lv.types))
		}
	}
	b := st.put(buf, true)
	if &b[0] == &buf[0] {
		return
	}
	at = 0
	for i := range lvs {
		if lv := &lvs[i]; !lv.stored && len(lv.types) > 0 {
			at = (at + 7) &^ 7
			lv.firsts = unsafe.Slice((*int32)(unsafe.Pointer(&b[at])), len(lv.firsts))
			at += 4 * len(lv.firsts)
			at = (at + 7) &^ 7
			lv.types = unsafe.Slice((*uint16)(unsafe.Pointer(&b[at])), len(lv.types))
			at += 2 * len(lv.types)
			lv.stored = true
		}
	}
}

// cellScratch is the vote weights buildCells needs while it works, kept
// across tracks so that indexing leaves no garbage behind.
// times and types hold the chunk being read, when it is read from the
// store. firsts and ctypes are the heap arrays of levels sealed in the
// store (cellLevel.seal), for the next levels: the level arrays of a
// track with millions of events are megabytes, which fresh memory costs
// a page fault per page to get, and the collector to give back.
type cellScratch struct {
	lo, hi []uint32
	times  []trace.Time
	types  []uint16
	firsts [][]int32
	ctypes [][]uint16
	pack   []byte // sealPacked's
}

// level returns a cell level from origin with m cells, its arrays
// recycled from sc when it has large enough ones (their contents are
// left as they were: buildCells writes every element).
func (sc *cellScratch) level(origin, m int64) cellLevel {
	return cellLevel{origin: origin, firsts: recycled(&sc.firsts, int(m+1)), types: recycled(&sc.ctypes, int(m))}
}

// maxSpares is how many arrays of each kind a cellScratch keeps: a
// level and the one built from it, as buildCells needs them.
const maxSpares = 2

// spare keeps b among *spares for recycled, in place of a smaller one
// when it holds maxSpares already (the collector takes that one).
func spare[T any](spares *[][]T, b []T) {
	if len(*spares) < maxSpares {
		*spares = append(*spares, b)
		return
	}
	k := 0
	for i, s := range *spares {
		if cap(s) < cap((*spares)[k]) {
			k = i
		}
	}
	if cap(b) > cap((*spares)[k]) {
		(*spares)[k] = b
	}
}

// recycled returns a slice of n elements: the smallest of *spares that
// has room for them, taken from them, else a new one.
func recycled[T any](spares *[][]T, n int) []T {
	k := -1
	for i, s := range *spares {
		if cap(s) >= n && (k < 0 || cap(s) < cap((*spares)[k])) {
			k = i
		}
	}
	if k < 0 {
		return make([]T, n)
	}
	b := (*spares)[k][:n]
	last := len(*spares) - 1
	(*spares)[k], (*spares)[last] = (*spares)[last], nil
	*spares = (*spares)[:last]
	return b
}

func (s *cellScratch) get(buf *[]uint32, n int64) []uint32 {
	if int64(cap(*buf)) < n {
		*buf = make([]uint32, n)
	}
	b := (*buf)[:n]
	clear(b)
	return b
}

// buildCells computes a track's time cells from its columns. With a
// store, it reads the sealed chunks from the store's file (see load) and
// seals each level once the next is built from it, so that it holds at
// most two levels and a chunk at a time.
func (t *track) buildCells(sc *cellScratch) {
	st := t.times.store
	n := t.times.len()
	if n < cellDensity*minCells {
		return
	}
	first, last := int64(t.times.at(0)), int64(t.times.at(n-1))
	if first < -int64(MaxTime) || last > int64(MaxTime) {
		return // queries clamp to ±MaxTime; such traces are answered by the index pyramid
	}
	target := int64(n / cellDensity)
	base := 0
	for (last>>base)-(first>>base)+1 > target {
		base++
	}
	m := (last >> base) - (first >> base) + 1
	if m < minCells {
		return
	}
	lv := sc.level(first>>base, m)
	lv.firsts[0] = 0
	weights := sc.get(&sc.lo, m)
	// Times are sorted: the cell of an event is that of the event before
	// or a later one, so the vote of the cell at hand (cur) is kept in
	// y and w and stored when the next cell begins.
	cur := int64(0)
	y, w := uint16(0), uint32(0)
	i := 0
	for k := range t.times.chunks {
		ts, ty := load(st, t.times.chunk(k), &sc.times), load(st, t.types.chunk(k), &sc.types)
		ty = ty[:len(ts)]
		for j, tm := range ts {
			if c := int64(tm)>>base - lv.origin; c != cur {
				lv.types[cur], weights[cur] = y, w
				for cur < c {
					cur++
					lv.firsts[cur] = int32(i + j)
					lv.types[cur] = 0 // an empty cell's, unless c's
				}
				y, w = 0, 0
			}
			y, w = voteFor(y, w, ty[j]) // as in the pyramid's grow
		}
		i += len(ts)
	}
	lv.types[cur], weights[cur] = y, w
	for cur < m {
		cur++
		lv.firsts[cur] = int32(n)
		if cur < m {
			lv.types[cur] = 0
		}
	}
	t.cellBase = uint8(base)
	t.cells = append(t.cells, lv)
	for level := base + 1; ; level++ {
		lo := &t.cells[len(t.cells)-1]
		m := (last >> level) - (first >> level) + 1
		if m < minCells {
			break
		}
		up := sc.level(first>>level, m)
		upw := sc.get(&sc.hi, m)
		d := up.origin*2 - lo.origin // cell c's first child is 2c+d: d is 0 or -1
		fs, tys, ws := lo.firsts, lo.types, weights[:len(lo.types)]
		for c := range m {
			child := 2*c + d // relative to the level below
			if child >= 0 && child+2 < int64(len(fs)) {
				// Both children (all cells but the edges'): the loop
				// below written out, without its bounds.
				f := fs[child : child+3]
				ta, wa, tb, wb := tys[child], ws[child], tys[child+1], ws[child+1]
				if f[0] == f[1] {
					ta = 0
				}
				if f[1] == f[2] {
					tb = ta
				}
				t, w := mergeVotes(ta, wa, tb, wb)
				up.firsts[c], up.types[c], upw[c] = f[0], t, w
				continue
			}
			up.firsts[c] = lo.firsts[max(child, 0)]
			// The children's votes merged: an empty child (weight 0)
			// votes for the candidate so far, which leaves it as it is.
			t, w := uint16(0), uint32(0)
			for r := max(child, 0); r < min(child+2, int64(len(lo.types))); r++ {
				x := lo.types[r]
				if lo.firsts[r] == lo.firsts[r+1] {
					x = t
				}
				t, w = mergeVotes(t, w, x, weights[r])
			}
			up.types[c], upw[c] = t, w
		}
		up.firsts[m] = int32(n)
		if lo.size() >= cellPack {
			lo.seal(st, sc)
		}
		t.cells = append(t.cells, up)
		weights = upw
		sc.lo, sc.hi = sc.hi, sc.lo
	}
	if top := &t.cells[len(t.cells)-1]; top.size() >= cellPack {
		top.seal(st, sc)
	}
	sealPacked(st, t.cells, sc)
	t.cells = append([]cellLevel(nil), t.cells...)
}

// mergeVotes is the pyramid's vote of the summaries t, w and x, xw,
// written so that the compiler needs no branch (the types of
// neighbouring cells are in no pattern).
func mergeVotes(t uint16, w uint32, x uint16, xw uint32) (uint16, uint32) {
	nt, nw := t, w-xw
	if w < xw {
		nt, nw = x, xw-w
	}
	if w == 0 || t == x {
		nt, nw = x, w+xw
	}
	return nt, nw
}

// sliceCells appends the items of buckets at level lv (resolution
// 2^(cellBase+k)) from absolute cell c0, nb buckets; ok is false when the
// track has no such level.
func (t *track) sliceCells(items []Item, level int, c0 int64, nb int) ([]Item, bool) {
	k := level - int(t.cellBase)
	if k < 0 || k >= len(t.cells) {
		return items, false
	}
	lv := &t.cells[k]
	lo := max(c0-lv.origin, 0)
	hi := min(c0+int64(nb)-lv.origin, int64(len(lv.types)))
	for c := lo; c < hi; c++ {
		f, g := lv.firsts[c], lv.firsts[c+1]
		if f == g {
			continue
		}
		it := Item{Bucket: int32(c + lv.origin - c0), Count: g - f, First: f, Type: typeOf(lv.types[c])}
		if it.Count == 1 {
			it.Time = t.times.at(int(f))
		} else {
			it.Time = trace.Time((c + lv.origin) << (int(t.cellBase) + k))
		}
		items = append(items, it)
	}
	return items, true
}
