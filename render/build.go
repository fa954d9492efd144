package render

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"viewer/trace"
)

// Indexing a batch (issue #21: every core).
//
// What Build does per event beyond reading it (its spill record, its
// time and type in the columns, the index pyramid, the stacked columns)
// is per track, so a batch is indexed track by track, on every core: the
// indexing goroutine first makes one pass over the batch in order (the
// work that depends on the order of all events: clamping times, the
// first and last times, counting stacked types, finding each event's
// track) and groups the events by track (a counting sort, stable); then
// it and GOMAXPROCS-1 helpers take the groups, largest first, one at a
// time, until none is left. A track is thus written by one goroutine at a
// time, and by the indexing goroutine alone between batches, when the
// snapshots (live.go) and the spill flushes that need every track happen.
// Grouping also keeps a track's state (the chunks being filled, the
// spill buffer and its per-slot bases) in one core's cache for the run
// of its events, where taking events in file order moves from track to
// track at every event.

// groupMin is the fewest events of a batch for which index wakes the
// helpers: below it, waking them costs more than it saves.
const groupMin = 512

// indexers is the indexing goroutine's state and its helpers.
type indexers struct {
	x         *Index
	all       []*track   // the tracks with events, in order of appearance
	last      trace.Time // the time of the previous event
	nextCheck int64      // x.events at which to check ctx and the store and report progress
	gen       uint64     // the batch being grouped (track.gen)
	// The batch being indexed, grouped: tracks[k] has the events
	// grouped[start[k]:start[k+1]], in batch order (copies, so that a
	// group's events are read in the order they lie in memory); ids[k]
	// is its id; take lists the groups, largest first, and next is the
	// next entry of take to index.
	tracks  []*track
	ids     []trace.TrackID
	start   []int32
	grouped []trace.Event
	group   []int32 // per event of the batch, its group
	take    []int32
	next    atomic.Int64
	// Helpers: one token on jobs per helper per batch, wg counts the
	// helpers at work.
	helpers int
	jobs    chan struct{}
	wg      sync.WaitGroup
}

func newIndexers(x *Index) *indexers {
	ix := &indexers{x: x, last: -1 << 63, nextCheck: ProgressEvery, helpers: runtime.GOMAXPROCS(0) - 1}
	if ix.helpers > 0 {
		jobs := make(chan struct{})
		ix.jobs = jobs
		for range ix.helpers {
			go func() {
				for range jobs {
					ix.work()
					ix.wg.Done()
				}
			}()
		}
	}
	return ix
}

// stop ends the helpers; index must not be called after.
func (ix *indexers) stop() {
	if ix.jobs != nil {
		close(ix.jobs)
		ix.jobs = nil
	}
}

// index adds a batch of events to the index.
func (ix *indexers) index(ctx context.Context, progress func(Progress), b *batch) error {
	x := ix.x
	if len(b.evs) == 0 {
		x.bytes = b.bytes
		return nil
	}
	if x.events >= ix.nextCheck {
		ix.nextCheck = (x.events/ProgressEvery + 1) * ProgressEvery
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := x.store.failed(); err != nil {
			return err
		}
		if progress != nil {
			progress(Progress{Events: x.events, Bytes: x.bytes})
		}
	}
	if err := ix.groupBatch(b); err != nil {
		return err
	}
	ix.next.Store(0)
	h := 0
	if len(b.evs) >= groupMin {
		h = min(ix.helpers, len(ix.tracks)-1)
	}
	if h > 0 {
		slices.SortFunc(ix.take, func(a, b int32) int {
			return int(ix.start[b+1]-ix.start[b]) - int(ix.start[a+1]-ix.start[a])
		})
		ix.wg.Add(h)
		for range h {
			ix.jobs <- struct{}{}
		}
	}
	ix.work()
	ix.wg.Wait()
	for _, t := range ix.tracks {
		x.spill.place(&t.spill)
	}
	x.events += int64(len(b.evs))
	x.bytes = b.bytes
	if x.spill.buffered.Load() >= maxBuffered {
		x.flushSpill(ix.all)
	}
	return nil
}

// groupBatch makes the pass over b in order and groups its events by
// track.
func (ix *indexers) groupBatch(b *batch) error {
	x := ix.x
	ix.gen++
	ix.tracks, ix.ids, ix.start = ix.tracks[:0], ix.ids[:0], ix.start[:0]
	n := len(b.evs)
	group := slices.Grow(ix.group[:0], n)[:n]
	ix.group = group
	last := ix.last
	for i := range b.evs {
		e := &b.evs[i]
		if e.Time < last {
			// Readers promise time order; keep the index sorted if one
			// breaks it, and say so.
			e.Time = last
			x.clamped++
		}
		last = e.Time
		t := x.none
		if e.Track != trace.NoTrack {
			for int(e.Track) >= len(x.tracks) {
				x.tracks = append(x.tracks, nil)
			}
			if t = x.tracks[e.Track]; t == nil {
				t = newTrack(x.store)
				x.tracks[e.Track] = t
			}
		}
		if t.gen != ix.gen {
			if t.gen == 0 {
				ix.all = append(ix.all, t)
			}
			t.gen, t.group = ix.gen, int32(len(ix.tracks))
			ix.tracks = append(ix.tracks, t)
			ix.ids = append(ix.ids, e.Track)
			ix.start = append(ix.start, 0)
		}
		ix.start[t.group]++
		group[i] = t.group
		if e.Stack != trace.NoStack {
			x.countStacked(e.Type)
		}
	}
	if x.events == 0 {
		x.first = b.evs[0].Time
	}
	ix.last, x.last = last, last
	// start holds the counts: check them, then make them starts.
	ix.take = ix.take[:0]
	at := int32(0)
	for k, c := range ix.start {
		if ix.tracks[k].times.len()+int(c) > MaxTrackEvents {
			return fmt.Errorf("render: track %d has more than %d events", ix.ids[k], MaxTrackEvents)
		}
		ix.start[k] = at
		at += c
		ix.take = append(ix.take, int32(k))
	}
	ix.start = append(ix.start, at)
	grouped := slices.Grow(ix.grouped[:0], n)[:n]
	ix.grouped = grouped
	// Place each event after the ones of its group before it: the
	// starts serve as cursors, and end up one group late.
	for i, k := range group {
		grouped[ix.start[k]] = b.evs[i]
		ix.start[k]++
	}
	copy(ix.start[1:], ix.start[:len(ix.start)-1])
	ix.start[0] = 0
	return nil
}

// work indexes groups of the batch until none is left.
func (ix *indexers) work() {
	for {
		j := int(ix.next.Add(1) - 1)
		if j >= len(ix.take) {
			return
		}
		ix.indexGroup(int(ix.take[j]))
	}
}

// indexGroup indexes the events of group k: their spill records, their
// columns and their stacks.
func (ix *indexers) indexGroup(k int) {
	t, sp := ix.tracks[k], ix.x.spill
	evs := ix.grouped[ix.start[k]:ix.start[k+1]]
	for i := range evs {
		e := &evs[i]
		sp.add(&t.spill, e)
		if e.Stack != trace.NoStack {
			t.addStacked(e.Stack)
		}
		t.push(e.Time, e.Type)
	}
	sp.account(&t.spill)
}
