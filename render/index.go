// Package render turns a trace into what a timeline draws: per-track time
// indexes built in one streaming pass, level-of-detail viewport slices,
// hit testing, lazily decoded details and search. Package render/wire
// encodes slices for the browser.
//
// # Design
//
// Memory decides everything: an index must hold 100 million events in a
// few GiB, so it keeps resident only what viewport queries touch, about
// 13–14 bytes per event:
//
//   - per track, the event times (8 bytes) and event types (2 bytes) in
//     time order, in fixed-size chunks so that growing never copies more
//     than a chunk (column.go);
//   - per track, an index pyramid: a node per aligned block of 2^k events
//     (k ≥ 4) with a majority-vote summary of the block's types (8 bytes
//     per node, n/8 nodes: 1 byte per event; pyramid.go);
//   - per track, time cells: for every power-of-two resolution from the
//     track's finest (about 4 events per cell) up, the first event index
//     and majority type of every aligned time cell (at most 3 bytes per
//     event; cells.go);
//   - per track, for the events that carry a stack only, their index in
//     the track and stack id (8 bytes per stacked event, 4 where all of a
//     track's events carry stacks; no pointers), so
//     that stack aggregation (render/stacks) reads neither the spill file
//     nor the trace (stacked.go).
//
// Build keeps these arrays out of the heap as it goes (store.go): each
// column chunk that fills up and each level of time cells once built is
// written to a temporary store file and used in place in a read-only
// mapping of it, so that building a billion events holds on the heap
// about 0.03 bytes per event (run tables, chunk lists) and a few MB per
// track (the chunks being filled, the time cells of the track being
// finished), and resident memory is otherwise what queries touch.
//
// Everything else an event carries (sequence number, CPU, stack, labels,
// payload location) goes once to a temporary spill file as delta-encoded
// runs per track, 3–10 bytes per event on disk, read back when
// details, a hit's header or a field search need it (spill.go; mapped
// read-only once complete, so that a search reads runs in place and
// Close waits for the reads in progress); the payload stays in the
// trace file and the trace.Reader decodes it.
//
// A viewport query snaps its bucket width to a power of two nanoseconds,
// at least the ns per pixel (so at most Width+1 buckets), and its start to
// a multiple of it. A bucket is then exactly one time cell: where the
// track has cells at that resolution, a bucket costs two reads. Finer
// than that, the query walks the events bucket by bucket (query.go): a
// galloping search seeded with the previous bucket's count finds where the
// bucket ends, the difference of indexes is the exact count, and the index
// pyramid merges O(log n) summaries for the dominant type. Empty buckets
// cost nothing, so the work per track is O(min(buckets, events in range) ·
// log n), never the events in range. Counts and first indexes are exact;
// the dominant type is a majority-vote candidate: it occurs in the bucket
// and is the type holding more than half of it whenever one does.
//
// Build reads the trace in a goroutine of its own, a batch ahead of the
// indexing (a reader with a ReadEvents method fills the batch in one call
// instead of one ReadEvent per event), indexes each batch track by track
// on every core (build.go), and builds the time cells on every core once
// reading has ended. An Index is immutable once Build returns and all its
// methods are safe for concurrent use, except Close, which must come last.
//
// While Build reads, it can publish snapshots to a [Live]
// (Options.Live): each is an immutable *Index over a prefix of whole
// batches, sharing the append-only chunks of the growing index and
// copying only their headers, so that a trace being written (issue #19)
// or a big trace being indexed (#21) is queried with no lock on the
// viewport path. Snapshots have no time cells; their calls into the
// reader take a per-build mutex that reading holds per batch (live.go).
//
// An Index can be written to an index file once Build returns
// ([Index.WriteFile]) and opened from it without reading the trace
// ([OpenFile]): its arrays are then used in place in a read-only mapping
// of the file, so that it is ready at once and resident memory is what
// views touch (persist.go describes the file). Such an Index answers
// everything that needs only the index at once; what needs the trace's
// reader waits for [Index.Attach] (mapped.go), which sets it once,
// atomically: the only change an Index sees after it is made.
package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/span"
)

// Options configure Build.
type Options struct {
	// SpillDir is the directory of the temporary spill file that holds
	// event records; "" means os.TempDir(). The file is unlinked at once
	// where the system allows, and closed by Index.Close.
	SpillDir string
	// Progress, when not nil, is called from Build's goroutine every
	// ProgressEvery events and once at the end.
	Progress func(Progress)
	// Symbols, when not nil, sees every event while the trace is read and
	// names stack frames afterwards: Details symbolizes with it, and
	// Stats counts the sample frames it resolves.
	Symbols SymbolSource
	// Derive, when not nil, sees every event while the trace is read and
	// derives slice and counter tracks (trace/span); Index.Spans indexes
	// them (spans.go).
	Derive span.Deriver
	// Live, when not nil, receives snapshots of the index while Build
	// reads (see [Live]), and the final Index last.
	Live *Live
	// inMemory keeps every array on the heap, without a store (tests
	// compare the two).
	inMemory bool
	// spillKeep, when not 0, is the spill's drop-behind keep and step
	// and the store's (see keepSpill, store.dropCold), for tests.
	spillKeep int64
}

// SymbolSource learns names for stack addresses from a trace's own events
// (e.g. .NET method loads and rundown) while the index reads them.
type SymbolSource interface {
	// Observe is called with every event in reading order, on the
	// goroutine that reads the trace (r may be asked for details).
	Observe(r trace.Reader, e trace.Event)
	// Finish is called once, after the last event; it returns how many
	// frames of sample stacks the source saw and how many of them it
	// resolves (0, 0 when the trace has no sample stacks).
	Finish(r trace.Reader) (frames, resolved int64)
	// Symbolize names the address addr of process pid at time t; it is
	// called only after Finish, from any goroutine.
	Symbolize(pid int64, t trace.Time, addr uint64) (trace.Frame, bool)
}

// ProgressEvery is how many events Build reads between Progress calls.
const ProgressEvery = 1 << 16

// Progress says how far Build has read.
type Progress struct {
	Events int64 // events indexed
	Bytes  int64 // furthest byte of the trace file reached (end of the furthest payload seen)
	Done   bool  // the last call: reading has finished
}

// MaxTrackEvents is the most events one track can hold; Build fails past it.
const MaxTrackEvents = 1<<31 - 1

// EventID names one event of an Index: its track and its position in the
// track's time order. It is stable for the life of the Index.
type EventID struct {
	Track trace.TrackID
	Index int32
}

// OtherType is the type reported in slices for events whose TypeID does
// not fit the index's 16-bit type column (TypeID ≥ 65535); their details
// carry the real type.
const OtherType trace.TypeID = -1

const typeEscape = 0xffff

// track is the resident index of one track.
type track struct {
	times column[trace.Time]
	types column[uint16]
	nodes []column[node] // nodes[k-minLevel] summarizes aligned blocks of 2^k events
	carry []node         // while building: per level, its last node when it has an odd count (pyramid.go)
	// cells[k] are the time cells of level cellBase+k (see cells.go).
	cells    []cellLevel
	cellBase uint8
	spill    spillTrack
	// stacked lists the events that carry a stack: their index in the
	// track (ascending) and their stack id, side by side; empty for a
	// trace without stacks (stacks.go).
	stacked   column[int32]
	stackedID column[trace.StackID]
	// listed says that the indexers listed the track among those with
	// events (build.go).
	listed bool
}

// Index is the searchable, queryable index of one trace. It is built by
// [Build] and must be closed with [Index.Close].
type Index struct {
	r       trace.Reader
	meta    *trace.Meta
	tracks  []*track // by TrackID; nil for a track without events
	none    *track   // events with trace.NoTrack
	spill   *spill
	store   *store                 // the sealed arrays of an Index Build made (store.go)
	markers [nMarkerKinds][]Marker // per kind, in time order
	events  int64
	bytes   int64
	first   trace.Time
	last    trace.Time
	readErr error
	clamped int64
	counter export.Counter // written by the reading goroutine
	symbols SymbolSource   // fed by the reading goroutine; nil without one
	frames  *export.FrameCount
	// stackTypes counts the events that carry a stack, by TypeID (index
	// 0 holds OtherType and events without a type).
	stackTypes []int64
	deriving   *deriving // until reading ends; nil without Options.Derive
	spans      *Spans
	deriveTime time.Duration
	deriveErr  error
	// stats are a snapshot's statistics, gathered at its publication
	// point (nil: the counter's); growing marks a snapshot.
	stats *export.Stats
	// typeEvents is a snapshot's events per TypeID (the counter's
	// otherwise).
	typeEvents []int64
	growing    bool
	// An Index opened from a file (mapped.go): its arrays lie in a
	// mapping that unmap releases; late is what Attach gives it (the
	// reader, symbols and derived tracks), nil until then.
	mapped  bool
	mapping []byte // the mapped file
	unmap   func() error
	late    *atomic.Pointer[attached]
}

// Build reads r to its end and indexes every event. A damaged trace is not
// an error: Build keeps the events before the damage and records the
// reader's error (see [Index.ReadErr]) and a [MarkerTruncated] at the time
// of the last event read with the error's byte offset. Build fails on
// context cancellation, on spill-file I/O errors, and when a reader error
// is not a *trace.FormatError. Events whose track id does not resolve in
// Meta().Tracks are indexed on trace.NoTrack; events out of time order
// are indexed at the previous event's time (see [Index.Clamped]).
func Build(ctx context.Context, r trace.Reader, opts Options) (*Index, error) {
	keep, step := int64(keepSpill), int64(dropStep)
	if opts.spillKeep > 0 {
		keep, step = opts.spillKeep, opts.spillKeep
	}
	sp, err := newSpillKeeping(opts.SpillDir, keep, step)
	if err != nil {
		return nil, err
	}
	x := &Index{r: r, meta: r.Meta(), spill: sp, symbols: opts.Symbols}
	if !opts.inMemory {
		x.store = newStore(opts.SpillDir, keep, step)
		x.store.reuse = opts.Live == nil
	}
	x.none = newTrack(x.store)
	if opts.Derive != nil {
		x.deriving = &deriving{v: span.NewDriver(r, opts.Derive)}
	}
	err = x.read(ctx, opts.Progress, opts.Live)
	if err == nil {
		err = x.store.failed()
	}
	if err != nil {
		sp.close()
		if opts.Live != nil {
			x.store.abandon()
		} else {
			x.store.close()
		}
		if opts.Live != nil {
			opts.Live.publish(nil, true)
		}
		return nil, err
	}
	if opts.Live != nil {
		opts.Live.publish(x, true)
	}
	return x, nil
}

// batch is a run of events read ahead by the reading goroutine.
type batch struct {
	evs   []trace.Event // capacity batchEvents once sealed, but for a grouped batch or one that only publishes
	bytes int64         // furthest payload end up to the batch's last event
	err   error         // the error that ended reading, with the last batch
	pub   *publication  // with Options.Live: publish a snapshot after this batch
	// The events' groups (build.go): the gcount[k] events of group k
	// are those of track gtrack[k], groups numbered in the order of their
	// first events; gid[i] is the group of the batch's i-th event read.
	// Once sealed (reading.seal), evs holds the events in group order,
	// their times clamped (clamped of them), and first, last and stacked
	// are the first and last times and the types of the events that
	// carry a stack.
	gid     []int32
	gtrack  []trace.TrackID
	gcount  []int32
	clamped int64
	first   trace.Time
	last    trace.Time
	stacked []trace.TypeID
	// grouped says that a trackOrderReader filled the batch, sealed as
	// it was (addGrouped), without gid: its events, in group order, are
	// base with the times, types and payload offsets in times, types and
	// offs, an offset less base's (evs is not used).
	grouped bool
	times   []trace.Time
	types   []trace.TypeID
	offs    []uint32
	base    trace.Event
}

// len returns the number of events of the batch.
func (b *batch) len() int {
	if b.grouped {
		return len(b.times)
	}
	return len(b.evs)
}

// expand returns events lo..hi-1 of a grouped batch, of track id, in dst
// (grown as needed).
func (b *batch) expand(dst []trace.Event, lo, hi int, id trace.TrackID) []trace.Event {
	dst = slices.Grow(dst[:0], hi-lo)[:hi-lo]
	base := b.base
	base.Track = id
	times, types, offs := b.times[lo:hi], b.types[lo:hi], b.offs[lo:hi]
	for i := range dst {
		// The base copied whole, then the fields set in place: copying
		// an event just assembled field by field would load its fields
		// in wider words than they were stored in, which the processor
		// does not forward from the pending stores (a stall per event).
		e := &dst[i]
		*e = base
		e.Time, e.Type, e.Payload.Off = times[i], types[i], base.Payload.Off+int64(offs[i])
	}
	return dst
}

// grouper numbers the tracks of a batch as the reading goroutine fills
// it.
type grouper struct {
	group   []int32 // by track id + 1: its group in the batch + 1, 0 for none
	touched []int32 // the entries of group that are set
}

// add records an event of track id as the next of b.
func (g *grouper) add(b *batch, id trace.TrackID) {
	b.gid, b.gcount = g.addTo(b, id, b.gid, b.gcount)
}

// addTo is add for a caller that holds b.gid and b.gcount in gid and
// gcount (add's loop in Index.add), and returns them.
func (g *grouper) addTo(b *batch, id trace.TrackID, gid, gcount []int32) ([]int32, []int32) {
	k := int(id) + 1
	for k >= len(g.group) {
		g.group = append(g.group, 0)
	}
	n := g.group[k]
	if n == 0 {
		b.gtrack, gcount = append(b.gtrack, id), append(gcount, 0)
		n = int32(len(b.gtrack))
		g.group[k] = n
		g.touched = append(g.touched, int32(k))
	}
	gcount[n-1]++
	return append(gid, n-1), gcount
}

// seen marks track id as seen in the batch, and says whether it was
// already (for a batch read by track, see Index.addGrouped).
func (g *grouper) seen(id trace.TrackID) bool {
	k := int(id) + 1
	for k >= len(g.group) {
		g.group = append(g.group, 0)
	}
	if g.group[k] != 0 {
		return true
	}
	g.group[k] = 1
	g.touched = append(g.touched, int32(k))
	return false
}

// reset starts a new batch.
func (g *grouper) reset() {
	for _, k := range g.touched {
		g.group[k] = 0
	}
	g.touched = g.touched[:0]
}

// batchEvents is how many events the reading goroutine hands over at once.
const batchEvents = 8192

// groupedEvents is batchEvents for a batch a trackOrderReader fills: at
// 16 bytes an event rather than a whole event's, a batch four times as
// long is as large, and the indexers hand over, wake and wait for each
// other a fourth as often.
const groupedEvents = 4 * batchEvents

// readAhead is the reading goroutine: it reads events into batches,
// counts them and shows them to the symbol source and the deriver, and
// hands the batches over, so that decoding uses one core while the
// indexers (index, on the cores left) spill and index the batch before.
// It is the only user of the reader until it returns (with Options.Live,
// snapshots share the reader under the reader mutex, see live.go); stop
// makes it return early, and done is closed when it has.
func (x *Index) readAhead(rs *reading, done chan<- struct{}) {
	defer close(done)
	defer close(rs.out)
	if rs.live != nil {
		rs.live.l.build.Store(rs)
		defer rs.live.l.build.Store(nil)
	}
	for {
		rs.b = rs.next()
		err := x.fill(rs)
		b := rs.b
		if serr := rs.seal(b); err == nil {
			err = serr
		}
		b.err, b.bytes = err, rs.bytes
		if !rs.send(b) || err != nil {
			return
		}
	}
}

// reading is the reading goroutine's state.
type reading struct {
	x     *Index
	out   chan<- *batch
	free  <-chan *batch
	stop  <-chan struct{}
	bytes int64  // furthest payload end
	b     *batch // the batch being filled
	// scratch holds the events read for b, in reading order, until seal
	// moves them into b.evs; evs is its unused rest, being read into.
	scratch []trace.Event
	evs     []trace.Event
	n       int        // events read into evs
	g       grouper    // the tracks of b
	last    trace.Time // the time of the last event sealed
	starts  []int32    // seal's cursors
	live    *liveRead  // nil without Options.Live
}

// next returns an empty batch, recycled when one is free.
func (rs *reading) next() *batch {
	rs.g.reset()
	select {
	case b := <-rs.free:
		b.evs, b.pub = b.evs[:0], nil
		b.gid, b.gtrack, b.gcount = b.gid[:0], b.gtrack[:0], b.gcount[:0]
		b.clamped, b.stacked, b.grouped = 0, b.stacked[:0], false
		b.times, b.types, b.offs = b.times[:0], b.types[:0], b.offs[:0]
		return b
	default:
		return &batch{} // its arrays grow for the kind of batch it holds
	}
}

// rest points rs.evs at the unused rest of the scratch.
func (rs *reading) rest() {
	rs.evs, rs.n = rs.scratch[len(rs.scratch):cap(rs.scratch)], 0
}

// seal moves the events read for b from the scratch into b.evs, in group
// order (a counting sort, stable), making on the way the one pass in
// reading order that what depends on the order of all events needs:
// clamping times, the first and last times, the types of the events
// with stacks (build.go).
func (rs *reading) seal(b *batch) error {
	if b.grouped {
		return nil // sealed as it was read (addGrouped)
	}
	n := len(rs.scratch)
	b.evs = slices.Grow(b.evs[:0], max(n, batchEvents))[:n]
	starts, at := rs.starts[:0], int32(0)
	for _, c := range b.gcount {
		starts = append(starts, at)
		at += c
	}
	rs.starts = starts
	if len(b.gid) != n || int(at) != n {
		rs.scratch = rs.scratch[:0]
		return fmt.Errorf("render: internal error: a batch of %d events has %d group ids and groups of %d", n, len(b.gid), at)
	}
	// In locals, and the stacked types gathered with a counted store
	// rather than a branch (whether an event has a stack is often in no
	// pattern).
	scratch, evs, gid := rs.scratch, b.evs, b.gid[:n]
	stacked := slices.Grow(b.stacked, n)
	ns := len(stacked)
	stacked = stacked[:ns+n]
	last, clamped := rs.last, int64(0)
	for i := range scratch {
		e := &scratch[i]
		if e.Time < last {
			// Readers promise time order; keep the index sorted if one
			// breaks it, and say so.
			e.Time = last
			clamped++
		}
		last = e.Time
		stacked[ns] = e.Type
		ns += int(uint32(e.Stack|-e.Stack) >> 31) // 1 when e.Stack != trace.NoStack
		k := gid[i]
		evs[starts[k]] = *e
		starts[k]++
	}
	b.stacked, b.clamped = stacked[:ns], b.clamped+clamped
	if n > 0 {
		b.first, b.last = scratch[0].Time, last
	}
	rs.last = last
	rs.scratch = scratch[:0]
	return nil
}

// send hands b to the indexer; false when Build stopped.
func (rs *reading) send(b *batch) bool {
	select {
	case rs.out <- b:
		return true
	case <-rs.stop:
		return false
	}
}

// batchReader is a trace.Reader that can also return many events per
// call (trace/synth does): ReadEvents fills dst with the next events and
// returns how many; err, nil while events remain, is the error that
// ended reading after them.
type batchReader interface {
	ReadEvents(dst []trace.Event) (n int, err error)
}

// fill reads events into b until it is full or reading ends, and returns
// the error that ended it. A panic in the reader becomes an error, so
// that a reader bug fails the load of one trace rather than the process
// (this runs on the read-ahead goroutine, where no caller could recover
// it).
//
// With Options.Live it holds the reader mutex while it reads (a live
// source's wait releases it, see Live.AroundWait), and prepares a
// publication when the interval has passed since the last one.
func (x *Index) fill(rs *reading) (err error) {
	lr := rs.live
	if lr != nil {
		lr.mu.Lock()
		defer lr.mu.Unlock()
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: the %s reader panicked: %v", x.meta.Format, p)
		}
	}()
	rs.rest()
	if gr, ok := x.r.(trackOrderReader); ok && x.symbols == nil && x.deriving == nil && len(rs.scratch) == 0 && (lr == nil || !lr.perEvent) {
		if lr != nil {
			lr.inBatch = true
		}
		b := rs.b
		times := slices.Grow(b.times[:0], groupedEvents)[:groupedEvents]
		types := slices.Grow(b.types[:0], groupedEvents)[:groupedEvents]
		offs := slices.Grow(b.offs[:0], groupedEvents)[:groupedEvents]
		n, gtrack, gcount, rerr := gr.ReadEventsByTrack(times, types, offs, b.gtrack[:0], b.gcount[:0])
		if lr != nil {
			lr.inBatch = false
		}
		n = min(max(n, 0), groupedEvents)
		b.times, b.types, b.offs, b.base = times[:n], types[:n], offs[:n], gr.EventBase()
		b.gtrack, b.gcount, err = gtrack, gcount, rerr
		if gerr := x.addGrouped(b, rs); gerr != nil {
			return gerr
		}
	} else if br, ok := x.r.(batchReader); ok && (lr == nil || !lr.perEvent) {
		if lr != nil {
			lr.inBatch = true
		}
		n, rerr := br.ReadEvents(rs.evs)
		if lr != nil {
			lr.inBatch = false
		}
		rs.n, err = min(max(n, 0), len(rs.evs)), rerr
	} else {
		for rs.n < len(rs.evs) {
			e, rerr := x.r.ReadEvent() // may hand rs.evs[:rs.n] over and move on to another batch (Live.AroundWait)
			if rerr != nil {
				err = rerr
				break
			}
			rs.evs[rs.n] = e
			rs.n++
		}
	}
	if !rs.b.grouped {
		x.add(rs.b, rs, rs.n)
	}
	rs.rest()
	if lr != nil && err == nil && lr.unpub > 0 && time.Since(lr.last) >= lr.l.every {
		rs.b.pub = x.prepare(rs)
	}
	return err
}

// trackOrderReader is a reader whose events differ only in their time,
// track, type and payload offset (trace/cpel's): EventBase returns their
// other fields, for the batch last read. ReadEventsByTrack reads at most
// min(len(times), len(types), len(offs)) of the next events, at least
// one while events remain, and stores them grouped by track, as the
// reading goroutine would group them: their times, types and payload
// offsets in times, types and offs, an offset less EventBase's (a
// batch's payloads lie within 4 GB), and it appends to tracks and counts
// the tracks of the groups, in the order of their first events, and
// their sizes; each group is in reading order; err is as for
// ReadEvents. Such a batch skips the reading goroutine's copy of every
// event into group order (seal), and is 16 bytes an event to hand over
// to the indexers rather than a whole event's, which they index as they
// are; unless a symbol source or a deriver must see the events in
// reading order.
type trackOrderReader interface {
	EventBase() trace.Event
	ReadEventsByTrack(times []trace.Time, types []trace.TypeID, offs []uint32, tracks []trace.TrackID, counts []int32) (n int, _ []trace.TrackID, _ []int32, err error)
}

// addGrouped checks, counts and seals a batch a trackOrderReader filled
// (b.times, b.types, b.offs, b.base, b.gtrack and b.gcount set): it does
// what add and seal do for a batch read in reading order, but for
// clamping times, which it does per group, against the group's previous
// event and the last time sealed; for a reader whose events come in time
// order, as they must, that is the same.
func (x *Index) addGrouped(b *batch, rs *reading) error {
	n := len(b.times)
	if len(b.gtrack) != len(b.gcount) {
		return fmt.Errorf("render: internal error: a batch read by track has %d tracks and %d counts", len(b.gtrack), len(b.gcount))
	}
	// Each group's track, checked as add checks an event's, and once:
	// rs.g marks the tracks seen so that two groups of one track fail.
	tracks := trace.TrackID(len(x.meta.Tracks))
	at := 0
	var err error
	for k, id := range b.gtrack {
		c := int(b.gcount[k])
		if c <= 0 || c > n-at {
			err = fmt.Errorf("render: internal error: a batch of %d events read by track has a group of %d at %d", n, c, at)
			break
		}
		if id < 0 || id >= tracks {
			id = trace.NoTrack
			b.gtrack[k] = id
		}
		if rs.g.seen(id) {
			err = fmt.Errorf("render: internal error: a batch read by track has two groups of track %d", id)
			break
		}
		at += c
	}
	rs.g.reset()
	if err == nil && at != n {
		err = fmt.Errorf("render: internal error: a batch of %d events read by track has groups of %d", n, at)
	}
	if err != nil {
		b.times, b.types, b.offs, b.gtrack, b.gcount = b.times[:0], b.types[:0], b.offs[:0], b.gtrack[:0], b.gcount[:0]
		return err
	}
	b.stacked, b.clamped, b.grouped = b.stacked[:0], 0, true
	if n == 0 {
		return nil
	}
	clamped := int64(0)
	last0, last := rs.last, rs.last
	times, offs := b.times, b.offs
	first := times[0] // before clamping: the counter's, as add's
	maxOff := uint32(0)
	at = 0
	for _, c := range b.gcount {
		g, o := times[at:at+int(c)], offs[at:at+int(c)]
		at += int(c)
		prev := last0
		for i, t := range g {
			if t < prev {
				g[i] = prev
				clamped++
			}
			prev = g[i]
			maxOff = max(maxOff, o[i])
		}
		last = max(last, prev)
	}
	// The latest time clamped is the latest read, or the last sealed
	// before, which the counter has seen: its last time either way.
	x.counter.AddTypes(b.types, first, last)
	stacked := b.stacked[:0]
	if b.base.Stack != trace.NoStack {
		stacked = append(stacked, b.types...)
	}
	b.first, b.last = times[0], last
	rs.last = last
	rs.bytes = max(rs.bytes, b.base.Payload.Off+int64(maxOff)+int64(b.base.Payload.Len))
	b.stacked, b.clamped = stacked, clamped
	if rs.live != nil {
		rs.live.unpub += n
	}
	return nil
}

// add counts and groups the n events read into the rest of the scratch
// (rs.evs), shows them to the symbol source and the deriver, and adds
// them to the batch's.
func (x *Index) add(b *batch, rs *reading, n int) {
	evs := rs.scratch[len(rs.scratch) : len(rs.scratch)+n]
	tracks := trace.TrackID(len(x.meta.Tracks))
	gid, gcount := b.gid, b.gcount
	bytes := rs.bytes
	for i := range evs {
		e := &evs[i]
		if e.Track < 0 || e.Track >= tracks {
			if tracks = trace.TrackID(len(x.meta.Tracks)); e.Track < 0 || e.Track >= tracks {
				e.Track = trace.NoTrack
			}
		}
		bytes = max(bytes, e.Payload.Off+int64(e.Payload.Len))
		gid, gcount = rs.g.addTo(b, e.Track, gid, gcount)
		if x.symbols != nil {
			x.symbols.Observe(x.r, *e)
		}
	}
	rs.bytes = bytes
	b.gid, b.gcount = gid, gcount
	x.counter.AddEvents(evs)
	rs.scratch = rs.scratch[:len(rs.scratch)+n]
	if rs.live != nil {
		rs.live.unpub += len(evs)
	}
	x.observe(evs)
}

func (x *Index) read(ctx context.Context, progress func(Progress), live *Live) error {
	batches, free := make(chan *batch, 2), make(chan *batch, 4)
	stop, done := make(chan struct{}), make(chan struct{})
	rs := &reading{x: x, out: batches, free: free, stop: stop, scratch: make([]trace.Event, 0, batchEvents), last: -1 << 63}
	var li liveIndex
	if live != nil {
		rs.live = &liveRead{l: live, mu: new(sync.Mutex), last: time.Now()}
	}
	go x.readAhead(rs, done)
	defer func() {
		close(stop)
		<-done // the reader is ours again
	}()
	ix := newIndexers(x)
	defer ix.stop()
	for b := range batches {
		if err := ix.index(ctx, progress, b); err != nil {
			return err
		}
		if b.pub != nil {
			x.flushSpill(ix.all)
			b.pub.spillEnd = x.spill.off
			live.publish(x.snapshot(b.pub, &li, rs.live), false)
		}
		if err := b.err; err != nil {
			if err != io.EOF {
				fe, ok := errors.AsType[*trace.FormatError](err)
				if !ok {
					return fmt.Errorf("render: reading event %d: %w", x.events, err)
				}
				x.readErr = err
				at := trace.Time(-1 << 63) // before any event: none was read
				if x.events > 0 {
					at = x.last
				}
				x.addMarker(Marker{Kind: MarkerTruncated, Time: at, Track: trace.NoTrack, Off: fe.Off})
			}
			break
		}
		if cap(b.evs) >= batchEvents || cap(b.times) >= groupedEvents {
			select {
			case free <- b:
			default:
			}
		}
	}
	<-done
	ix.stop()
	spills := make([]*spillTrack, len(ix.all))
	for i, t := range ix.all {
		spills[i] = &t.spill
	}
	if err := x.spill.finish(spills); err != nil {
		return err
	}
	if x.symbols != nil {
		if frames, resolved := x.symbols.Finish(x.r); frames > 0 {
			x.frames = &export.FrameCount{Total: frames, Resolved: resolved}
		}
	}
	x.finishDerive()
	finishTracks(ix.all)
	x.collectMarkers()
	if progress != nil {
		progress(Progress{Events: x.events, Bytes: x.bytes, Done: true})
	}
	return nil
}

// flushSpill writes every track's buffered spill records as runs, so
// that the run tables cover every event indexed (for a snapshot), or so
// that the buffers shrink back under maxBuffered.
func (x *Index) flushSpill(all []*track) {
	for _, t := range all {
		x.spill.flush(&t.spill)
	}
	x.spill.ship(true)
}

// finishTracks clips the tracks' columns and builds their time cells,
// one track at a time on each of up to GOMAXPROCS goroutines: the pass
// over every event's time runs after reading has ended, so it is the
// part of Build that spreads over the cores.
func finishTracks(all []*track) {
	// Largest first, so that the last track to finish is a small one.
	all = slices.SortedFunc(slices.Values(all), func(a, b *track) int { return b.times.len() - a.times.len() })
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(all)) {
		wg.Go(func() {
			var sc cellScratch
			for i := next.Add(1) - 1; i < int64(len(all)); i = next.Add(1) - 1 {
				all[i].clip()
				all[i].buildCells(&sc)
			}
		})
	}
	wg.Wait()
}

// newTrack returns an empty track whose columns seal their full chunks
// into st (nil: they stay on the heap).
func newTrack(st *store) *track {
	t := &track{}
	t.times.store, t.types.store = st, st
	t.stacked.store, t.stackedID.store = st, st
	t.stacked.cold, t.stackedID.cold = true, true
	return t
}

// pushEvents appends the times and type codes of evs to the track's
// columns and grows its pyramid over the blocks they complete.
func (t *track) pushEvents(evs []trace.Event) {
	t.push(len(evs), func(tc []trace.Time, yc []uint16, i int) {
		for q := range tc {
			e := &evs[i+q]
			tc[q], yc[q] = e.Time, typeCode(e.Type)
		}
	})
}

// pushColumns is pushEvents for events given by their times and types
// (a grouped batch's, see batch.expand).
func (t *track) pushColumns(times []trace.Time, types []trace.TypeID) {
	types = types[:len(times)]
	t.push(len(times), func(tc []trace.Time, yc []uint16, i int) {
		copy(tc, times[i:])
		for q, ty := range types[i : i+len(yc)] {
			yc[q] = typeCode(ty)
		}
	})
}

// push appends n events to the columns, fill writing the times and type
// codes of events i, i+1, … into tc and yc (of one length), a chunk's
// free room at a time, and grows the pyramid over the blocks they
// complete.
func (t *track) push(n int, fill func(tc []trace.Time, yc []uint16, i int)) {
	for i := 0; i < n; {
		at := t.times.n
		tc, yc := t.free()
		m := min(n-i, len(tc))
		if m == 0 { // the chunks are full: the next event starts new ones
			var one [1]trace.Time
			var code [1]uint16
			fill(one[:], code[:], i)
			t.times.pushSlow(one[0])
			t.types.pushSlow(code[0])
			m = 1
		} else {
			fill(tc[:m], yc[:m], i)
			t.times.n, t.types.n = at+m, at+m
		}
		t.grown(at, at+m)
		i += m
	}
}

// free returns the unfilled rest of the columns' chunks being filled:
// the columns have the same length and chunk sizes, so one index
// computation and one capacity check serve both. They are empty when
// the chunks are full.
func (t *track) free() ([]trace.Time, []uint16) {
	n := t.times.n
	k, j := n>>chunkBits, n&chunkMask
	if k < len(t.times.chunks) && k < len(t.types.chunks) {
		tc, yc := t.times.chunks[k], t.types.chunks[k]
		if e := min(len(tc), len(yc)); j < e {
			return tc[j:e], yc[j:e]
		}
	}
	return nil, nil
}

func (t *track) clip() {
	t.times.clip()
	t.types.clip()
	t.stacked.clip()
	t.stackedID.clip()
	for i := range t.nodes {
		t.nodes[i].clip()
	}
	t.carry = nil
}

// ErrClosed is returned by what reads an Index's spilled records (a
// field search, details) once Close has begun.
var ErrClosed = errors.New("render: the index is closed")

// Close releases the spill file. It waits for the reads of spilled
// records in progress (a search reads a run at a time); those that would
// start afterwards fail with [ErrClosed]. The Index should not be used
// afterwards, nor its snapshots (see [Live]); Close on a snapshot does
// nothing.
func (x *Index) Close() error {
	if x.growing {
		return nil
	}
	err := x.spill.close()
	if serr := x.store.close(); err == nil {
		err = serr
	}
	if x.unmap != nil {
		if uerr := x.unmap(); err == nil {
			err = uerr
		}
		x.unmap = nil
	}
	return err
}

// Meta returns the trace's tables (complete: Build read to the end; a
// snapshot's, as they were when it was published).
func (x *Index) Meta() *trace.Meta { return x.meta }

// Events returns the number of events indexed.
func (x *Index) Events() int64 { return x.events }

// Span returns the times of the first and last events.
func (x *Index) Span() (first, last trace.Time) { return x.first, x.last }

// Stats returns the trace's statistics (`viewer stats`), gathered while
// indexing.
func (x *Index) Stats() export.Stats {
	if x.stats != nil {
		st := *x.stats
		st.Counts = slices.Clone(st.Counts)
		st.Notices = slices.Clone(st.Notices)
		return st
	}
	st := x.counter.Stats(x.meta, x.readErr)
	st.Frames = x.frames
	return st
}

// TypeEvents returns the number of events of each TypeID.
func (x *Index) TypeEvents() []int64 {
	if x.stats != nil {
		return slices.Clone(x.typeEvents)
	}
	return x.counter.PerType()
}

// ReadErr returns the error that ended reading early, or nil when the
// trace was read to its end.
func (x *Index) ReadErr() error { return x.readErr }

// Clamped returns how many events came out of time order from the reader
// and were indexed at the previous event's time.
func (x *Index) Clamped() int64 { return x.clamped }

// Tracks returns the ids of the tracks that have events, in id order,
// with trace.NoTrack first when events without a track exist.
func (x *Index) Tracks() []trace.TrackID {
	var ids []trace.TrackID
	if x.none.times.len() > 0 {
		ids = append(ids, trace.NoTrack)
	}
	for i, t := range x.tracks {
		if t != nil {
			ids = append(ids, trace.TrackID(i))
		}
	}
	return ids
}

// TrackEvents returns the number of events on a track.
func (x *Index) TrackEvents(id trace.TrackID) int {
	if t := x.track(id); t != nil {
		return t.times.len()
	}
	return 0
}

func (x *Index) track(id trace.TrackID) *track {
	if id == trace.NoTrack {
		return x.none
	}
	if id < 0 || int(id) >= len(x.tracks) {
		return nil
	}
	return x.tracks[id]
}

// Resident returns the memory the index holds: Bytes, and the pages of
// its mappings that are in memory (of the index file for an Index
// opened from one, of the store for one Build made: those the queries
// touched or that were written lately; the system may drop them again).
func (x *Index) Resident() int64 {
	if !x.mapped {
		return x.Bytes() + x.store.resident()
	}
	return x.heapBytes() + residentBytes(x.mapping)
}

// Bytes returns the memory the index holds on the heap: its columns,
// pyramids, time cells and run tables (not the spill file, not the
// reader's tables), less the arrays that lie in a mapping, as the sealed
// ones of an Index Build made (store.go) and all of an Index opened from
// a file: for these it counts the chunk lists, run tables and markers.
func (x *Index) Bytes() int64 {
	if x.mapped {
		return x.heapBytes()
	}
	n := int64(cap(x.tracks)) * 8
	for _, t := range append(slices.Clip(x.tracks), x.none) {
		if t == nil {
			continue
		}
		n += 200 + t.times.bytes(8) + t.types.bytes(2) + int64(cap(t.spill.runs))*24 + int64(cap(t.nodes))*32
		n += t.stacked.bytes(4) + t.stackedID.bytes(4)
		for i := range t.nodes {
			n += t.nodes[i].bytes(8)
		}
		for _, c := range t.cells {
			n += 56
			if !c.stored {
				n += int64(cap(c.firsts))*4 + int64(cap(c.types))*2
			}
		}
	}
	for _, m := range x.markers {
		n += int64(cap(m)) * 40
	}
	return n
}
