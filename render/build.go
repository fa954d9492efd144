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
// reading goroutine numbers each event's track in the batch as it reads
// it (grouper) and, once the batch is full, copies its events into
// track order (reading.seal, a counting sort, stable), making on the way
// the one pass in order that what depends on the order of all events
// needs (clamping times, the first and last times, the types of the
// events with stacks). A reader whose events differ only in their time,
// track, type and payload offset and that can group a batch as it
// decodes it (trackOrderReader: trace/cpel) fills the batch in group
// order itself, with those three fields only (16 bytes an event rather
// than 56: what crosses from the reading core to the indexers' is what
// costs), and the reading goroutine makes that pass over the groups
// instead (Index.addGrouped), with no copy; the indexers encode and
// push those fields as they are (spill.addBased, track.pushColumns),
// making events (batch.expand) only for the stacks. The indexing
// goroutine finds the groups' tracks, then it and GOMAXPROCS-1 helpers
// take the groups, largest first, one at a time, until none is left. A
// track is thus written by one goroutine at a time, and by the indexing
// goroutine alone between batches, when the snapshots (live.go), the
// placing of spill runs in the file and the spill flushes that need
// every track happen.
//
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
	all       []*track // the tracks with events, in order of appearance
	nextCheck int64    // x.events at which to check ctx and the store and report progress
	// The batch being indexed, b: tracks[k] has the events
	// b.evs[start[k]:start[k+1]], in reading order; take lists the
	// groups, largest first, and next is the next entry of take to
	// index.
	b      *batch
	tracks []*track
	start  []int32
	take   []int32
	next   atomic.Int64
	// scratch is the indexing goroutine's for work.
	scratch []trace.Event
	// Helpers: one token on jobs per helper per batch, wg counts the
	// helpers at work.
	helpers int
	jobs    chan struct{}
	wg      sync.WaitGroup
}

func newIndexers(x *Index) *indexers {
	ix := &indexers{x: x, nextCheck: ProgressEvery, helpers: runtime.GOMAXPROCS(0) - 1}
	if ix.helpers > 0 {
		// Buffered: handing out a batch's tokens never waits for a
		// helper still on its way back from the last batch (a token it
		// takes late finds the groups taken, and it is done).
		jobs := make(chan struct{}, ix.helpers)
		ix.jobs = jobs
		for range ix.helpers {
			go func() {
				var sc []trace.Event
				for range jobs {
					sc = ix.work(sc)
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
	if b.len() == 0 {
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
	ix.b = b
	ix.next.Store(0)
	h := 0
	if b.len() >= groupMin {
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
	ix.scratch = ix.work(ix.scratch)
	ix.wg.Wait()
	ix.b = nil
	for _, t := range ix.tracks {
		x.spill.place(&t.spill)
	}
	x.spill.ship(false)
	x.events += int64(b.len())
	x.bytes = b.bytes
	if x.spill.buffered.Load() >= maxBuffered {
		x.flushSpill(ix.all)
	}
	return nil
}

// groupBatch finds or makes the tracks of b's groups (sealed by the
// reading goroutine, see reading.seal) and takes b's order-dependent
// results.
func (ix *indexers) groupBatch(b *batch) error {
	x := ix.x
	n := b.len()
	ix.tracks, ix.start, ix.take = ix.tracks[:0], ix.start[:0], ix.take[:0]
	at := int32(0)
	for k, id := range b.gtrack {
		t := x.none
		if id != trace.NoTrack {
			for int(id) >= len(x.tracks) {
				x.tracks = append(x.tracks, nil)
			}
			if t = x.tracks[id]; t == nil {
				t = newTrack(x.store)
				x.tracks[id] = t
			}
		}
		if !t.listed {
			t.listed = true
			ix.all = append(ix.all, t)
		}
		c := b.gcount[k]
		if t.times.len()+int(c) > MaxTrackEvents {
			return fmt.Errorf("render: track %d has more than %d events", id, MaxTrackEvents)
		}
		ix.tracks = append(ix.tracks, t)
		ix.start = append(ix.start, at)
		ix.take = append(ix.take, int32(k))
		at += c
	}
	if int(at) != n || len(b.gtrack) != len(b.gcount) {
		return fmt.Errorf("render: internal error: a batch of %d events has groups of %d", n, at)
	}
	ix.start = append(ix.start, at)
	for _, ty := range b.stacked {
		x.countStacked(ty)
	}
	x.clamped += b.clamped
	if x.events == 0 {
		x.first = b.first
	}
	x.last = b.last
	return nil
}

// work indexes groups of the batch until none is left; sc is the
// calling goroutine's scratch for the events of a grouped batch, and
// work returns it.
func (ix *indexers) work(sc []trace.Event) []trace.Event {
	for {
		j := int(ix.next.Add(1) - 1)
		if j >= len(ix.take) {
			return sc
		}
		sc = ix.indexGroup(int(ix.take[j]), sc)
	}
}

// indexGroup indexes the events of group k: their spill records, their
// columns and their stacks. A grouped batch's events are made only
// where the stacks need them, in sc (batch.expand), which it returns.
func (ix *indexers) indexGroup(k int, sc []trace.Event) []trace.Event {
	t, sp, b := ix.tracks[k], ix.x.spill, ix.b
	lo, hi := int(ix.start[k]), int(ix.start[k+1])
	if !b.grouped {
		evs := b.evs[lo:hi]
		sp.addEvents(&t.spill, evs)
		sp.account(&t.spill)
		if len(b.stacked) > 0 {
			t.addStacked(int32(t.times.len()), evs)
		}
		t.pushEvents(evs)
		return sc
	}
	sp.addBased(&t.spill, b.types[lo:hi], b.offs[lo:hi], &b.base)
	sp.account(&t.spill)
	if b.base.Stack != trace.NoStack {
		sc = b.expand(sc, lo, hi, b.gtrack[k])
		t.addStacked(int32(t.times.len()), sc)
	}
	t.pushColumns(b.times[lo:hi], b.types[lo:hi])
	return sc
}
