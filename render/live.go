package render

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/span"
)

// Growing indexes: snapshots of an Index while Build reads.
//
// A snapshot is an *Index like the one Build returns, over a prefix of
// the events made of whole handed-over batches, and every method works
// on it without locks on the viewport path. It is cheap because all the
// resident storage is append-only: per track, a snapshot copies the
// headers of the chunk lists (a column, the pyramid's node columns, the
// stacked columns) and the lengths; the chunks themselves are shared, and
// the indexer writes only past a snapshot's lengths (a first chunk that
// grows is copied into a new array, and clip replaces chunks in the
// indexer's own lists, which snapshots hold copies of). A track with no
// new events since the previous snapshot is shared with it.
//
// At a publication point the reading goroutine hands over, with the
// batch, a copy of the reader's Meta (its tables' elements copied:
// readers edit tracks in place when they rename them), the statistics so
// far and, with Options.Derive, a snapshot of the derived tracks
// (span.Driver.Snapshot). The indexer, which owns the tracks and their
// spill run tables between batches, indexes that batch, flushes every
// track's buffered spill records, takes copies of the run table headers
// (runs are appended, never changed), makes the snapshot once the spill
// writer has written the runs, and stores it in the Live (an atomic
// pointer: the happens-before edge). Flushing cuts runs short, so
// publication is rate-limited to Live's interval (by time, checked once
// per batch).
//
// Snapshot methods that call the trace.Reader (Details, Stack, Labels,
// Payload, the matchers of search and filters) hold the build's reader
// mutex, which the reading goroutine holds while it reads a batch (one
// lock per batch) and releases only while a live source waits for more
// bytes (Live.AroundWait). A snapshot has no time cells (they are built
// once reading ends): queries walk the events with the index pyramid, as
// they do at levels a track has no cells for. Snapshots do not
// symbolize stacks: a SymbolSource may only be asked after Finish, which
// needs the whole trace (.NET method names arrive in the rundown at its
// end). Derived tracks are indexed again for a snapshot only when that
// costs under a quarter of the time since the last indexing; otherwise
// the snapshot keeps the previous one's (older) derived tracks. Slices
// still open when a snapshot is made are not in it (derivers hold them
// until they end); Perfetto draws such incomplete slices to the end of
// the trace, which needs derivers to report what they hold open: the
// final index has them, as OpenEnd slices ending at the last event.

// DefaultLiveEvery is the publication interval of NewLive(0).
const DefaultLiveEvery = 100 * time.Millisecond

// Live receives the snapshots of an Index that Build publishes while it
// reads (Options.Live). The zero value is not usable: see [NewLive]. A
// Live serves one Build.
type Live struct {
	every time.Duration
	cur   atomic.Pointer[Index]
	// build is the reading goroutine's state while Build reads, for
	// AroundWait.
	build atomic.Pointer[reading]
	mu    sync.Mutex
	upd   chan struct{} // closed at the next publication
	ended bool
	// spansAlways (tests) snapshots the derived tracks at every
	// publication, without the back-off.
	spansAlways bool
}

// NewLive returns a Live whose snapshots come at most once per every
// (0: DefaultLiveEvery).
func NewLive(every time.Duration) *Live {
	if every <= 0 {
		every = DefaultLiveEvery
	}
	return &Live{every: every, upd: make(chan struct{})}
}

// Index returns the latest snapshot, nil before the first. Once Build
// has returned an Index, it is that Index. It is safe for use from any
// goroutine. Snapshots share the final Index's spill file and store
// (store.go): they work until it is closed (or until Build fails, which
// closes the spill file and leaves the store's arrays reading as zeros:
// queries answer, wrongly, without faulting), and Close on a snapshot
// does nothing.
func (l *Live) Index() *Index { return l.cur.Load() }

// Updated returns a channel closed when a newer snapshot is published,
// or when Build ends (returning the final Index or failing); after the
// end it returns a closed channel.
func (l *Live) Updated() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.upd
}

// publish makes x the latest snapshot; final ends the Live.
func (l *Live) publish(x *Index, final bool) {
	if x != nil {
		l.cur.Store(x)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	close(l.upd)
	if final {
		l.ended = true
	} else {
		l.upd = make(chan struct{})
	}
}

// AroundWait is called by a live source, on the goroutine that reads the
// trace (from inside its ReadEvent), before it blocks waiting for more
// bytes: it hands the events read so far to the indexer, so that they
// are published without waiting for a full batch (at once when the
// interval has passed since the last publication, else when it passes
// during the wait), releases the reader mutex so that snapshots can read
// the trace, calls wait, and takes the mutex back. The source must be
// ready for its other methods (Details, Stack, Labels, Meta) to be called
// while wait runs. Outside a Build it just calls wait.
func (l *Live) AroundWait(wait func()) {
	rs := l.build.Load()
	if rs == nil {
		wait()
		return
	}
	rs.x.aroundWait(rs, wait)
}

// liveRead is the reading goroutine's part of live publication.
type liveRead struct {
	l        *Live
	mu       *sync.Mutex // the reader mutex
	adding   bool        // aroundWait is handing events over (add)
	last     time.Time   // the last publication
	unpub    int         // events handed over since it
	waiting  bool        // in AroundWait's wait (under mu)
	perEvent bool        // a wait came inside ReadEvents: read event by event from now on
	inBatch  bool        // inside ReadEvents
	// spansAt is when the indexer wants the next snapshot of the derived
	// tracks (unix ns), set by the indexer's back-off.
	spansAt atomic.Int64
	// own copies of the reader's append-only tables, grown as they grow
	lost    []trace.Gap
	markers []trace.Marker
}

// publication is what the reading goroutine hands over, with a batch, for
// a snapshot of the index after that batch.
type publication struct {
	meta     *trace.Meta
	stats    export.Stats
	types    []int64   // events per TypeID
	spillEnd int64     // spill bytes the runs need written (set by the indexer)
	derived  *span.Set // nil: keep the previous snapshot's
	took     time.Duration
	deriveEr error
}

// aroundWait is Live.AroundWait for the build reading with rs.
func (x *Index) aroundWait(rs *reading, wait func()) {
	lr := rs.live
	if lr.inBatch {
		// The events ReadEvents has written so far are not known: they
		// go with the batch; later fills read event by event.
		lr.perEvent = true
		lr.waiting = true
		lr.mu.Unlock()
		defer func() { lr.mu.Lock(); lr.waiting = false }()
		wait()
		return
	}
	if lr.adding {
		// A wait from inside add (a deriver reading a payload ahead):
		// the events are being handed over already.
		lr.mu.Unlock()
		defer lr.mu.Lock()
		wait()
		return
	}
	lr.adding = true
	x.add(rs.b, rs, rs.n)
	lr.adding = false
	rs.rest()
	due := time.Since(lr.last) >= lr.l.every
	if due && lr.unpub > 0 {
		rs.b.pub = x.prepare(rs)
	}
	if len(rs.scratch) > 0 || rs.b.pub != nil {
		rs.b.bytes = rs.bytes
		if err := rs.seal(rs.b); err != nil {
			rs.b.err = err // the indexer fails with it
		}
		if !rs.send(rs.b) {
			rs.b = &batch{} // stopping: what comes is dropped
		} else {
			rs.b = rs.next()
		}
		rs.rest()
	}
	var timer *time.Timer
	if lr.unpub > 0 {
		// Publish when the interval has passed, if still waiting then.
		timer = time.AfterFunc(time.Until(lr.last.Add(lr.l.every)), func() {
			lr.mu.Lock()
			defer lr.mu.Unlock()
			if lr.waiting && lr.unpub > 0 {
				rs.send(&batch{pub: x.prepare(rs), bytes: rs.bytes})
			}
		})
	}
	lr.waiting = true
	lr.mu.Unlock()
	defer func() {
		lr.mu.Lock()
		lr.waiting = false
		if timer != nil {
			timer.Stop()
		}
	}()
	wait()
}

// prepare makes a publication of everything read so far: on the reading
// goroutine, or under the reader mutex while it waits.
func (x *Index) prepare(rs *reading) *publication {
	lr := rs.live
	p := &publication{}
	p.meta = lr.copyMeta(x.meta)
	p.stats = x.counter.Stats(p.meta, nil)
	p.types = x.counter.PerType()
	if dv := x.deriving; dv != nil {
		p.took = dv.took
		if lr.l.spansAlways || time.Now().UnixNano() >= lr.spansAt.Load() {
			p.derived = dv.v.Snapshot()
		}
	}
	p.deriveEr = x.deriveErr
	lr.last, lr.unpub = time.Now(), 0
	return p
}

// copyMeta returns a copy of m that the reader's later changes do not
// touch: the tables' elements are copied, the lost-event gaps and markers
// (which readers only append to) grow a copy of the reading goroutine's
// own, whose prefix a snapshot shares.
func (lr *liveRead) copyMeta(m *trace.Meta) *trace.Meta {
	c := *m
	c.Info = slices.Clone(m.Info)
	c.Tracks = slices.Clone(m.Tracks)
	for i := range c.Tracks {
		c.Tracks[i].Names = slices.Clip(c.Tracks[i].Names)
	}
	c.Types = slices.Clone(m.Types)
	c.Notices = slices.Clone(m.Notices)
	lr.lost = appendNew(lr.lost, m.Lost)
	lr.markers = appendNew(lr.markers, m.Markers)
	c.Lost, c.Markers = slices.Clip(lr.lost), slices.Clip(lr.markers)
	return &c
}

// appendNew brings own up to date with cur, a table that only grows:
// own's elements are never written again once a snapshot holds them.
func appendNew[T any](own, cur []T) []T {
	if len(cur) < len(own) { // replaced: start over, in a new array
		own = nil
	}
	return append(own, cur[len(own):]...)
}

// liveIndex is the indexer's part of live publication.
type liveIndex struct {
	prev      *Index
	spans     *Spans
	spansTook time.Duration
}

// snapshot returns the index of the events indexed so far, as published
// by p.
func (x *Index) snapshot(p *publication, li *liveIndex, lr *liveRead) *Index {
	x.spill.waitWritten(p.spillEnd)
	s := &Index{
		r:          newLockedReader(x.r, lr.mu, p.meta),
		meta:       p.meta,
		spill:      x.spill,
		events:     x.events,
		bytes:      x.bytes,
		first:      x.first,
		last:       x.last,
		clamped:    x.clamped,
		stackTypes: slices.Clone(x.stackTypes),
		stats:      &p.stats,
		typeEvents: p.types,
		deriveTime: p.took,
		deriveErr:  p.deriveEr,
		growing:    true,
	}
	prev := li.prev
	s.none = x.none.snapshot(prevTrack(prev, trace.NoTrack))
	s.tracks = make([]*track, len(x.tracks))
	for i, t := range x.tracks {
		if t != nil {
			s.tracks[i] = t.snapshot(prevTrack(prev, trace.TrackID(i)))
		}
	}
	s.collectMarkers()
	if p.derived != nil {
		t0 := time.Now()
		li.spans = NewSpans(p.derived)
		took := time.Since(t0)
		// Index again only when it costs under a quarter of the time
		// between two indexings.
		lr.spansAt.Store(time.Now().Add(3 * took).UnixNano())
		li.spansTook = took
	}
	s.spans = li.spans
	li.prev = s
	return s
}

func prevTrack(prev *Index, id trace.TrackID) *track {
	if prev == nil {
		return nil
	}
	return prev.track(id)
}

// snapshot returns a copy of t that t's growth does not change, with its
// spill run table as far as it has been flushed (all of it at a
// publication point); prev is the previous snapshot's copy (nil if none),
// returned when t has not grown since.
func (t *track) snapshot(prev *track) *track {
	if prev != nil && prev.times.n == t.times.n {
		return prev
	}
	c := &track{
		times:     t.times.snapshot(),
		types:     t.types.snapshot(),
		stacked:   t.stacked.snapshot(),
		stackedID: t.stackedID.snapshot(),
		spill:     spillTrack{runs: slices.Clip(t.spill.runs), n: t.spill.n},
		nodes:     make([]column[node], len(t.nodes)),
	}
	for i := range t.nodes {
		c.nodes[i] = t.nodes[i].snapshot()
	}
	return c
}

// snapshot returns a copy of c sharing its chunks: c's later pushes
// write past the copy's length, or into chunk lists the copy does not
// hold.
func (c *column[T]) snapshot() column[T] {
	return column[T]{chunks: slices.Clone(c.chunks), n: c.n, sealed: c.sealed}
}

// Growing reports whether x is a snapshot of an index Build is still
// reading (see [Live]); false for the Index Build returns.
func (x *Index) Growing() bool { return x.growing }

// lockedReader is a snapshot's view of the trace.Reader: the Meta
// copied at the publication point, and the reader's other methods under
// the build's reader mutex.
type lockedReader struct {
	r    trace.Reader
	mu   *sync.Mutex
	meta *trace.Meta
}

// newLockedReader wraps r, keeping the optional interfaces the matchers
// use.
func newLockedReader(r trace.Reader, mu *sync.Mutex, m *trace.Meta) trace.Reader {
	lr := &lockedReader{r: r, mu: mu, meta: m}
	_, fd := r.(trace.FieldsDecoder)
	_, da := r.(trace.DetailsAppender)
	switch {
	case fd && da:
		return lockedBoth{lr}
	case fd:
		return lockedFields{lr}
	case da:
		return lockedAppender{lr}
	}
	return lr
}

func (r *lockedReader) Meta() *trace.Meta { return r.meta }

func (r *lockedReader) ReadEvent() (trace.Event, error) {
	return trace.Event{}, errors.New("render: internal error: a snapshot's reader read an event")
}

func (r *lockedReader) Stack(id trace.StackID) []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Stack(id)
}

func (r *lockedReader) Labels(id trace.LabelsID) []trace.Label {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Labels(id)
}

func (r *lockedReader) Details(e trace.Event) (trace.Details, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Details(e)
}

type lockedFields struct{ *lockedReader }

func (r lockedFields) DecodeFields(e trace.Event, idx []int, vals []trace.Value) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.(trace.FieldsDecoder).DecodeFields(e, idx, vals)
}

type lockedAppender struct{ *lockedReader }

func (r lockedAppender) AppendDetails(fields []trace.Field, label []byte, e trace.Event) ([]trace.Field, []byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.(trace.DetailsAppender).AppendDetails(fields, label, e)
}

type lockedBoth struct{ *lockedReader }

func (r lockedBoth) DecodeFields(e trace.Event, idx []int, vals []trace.Value) error {
	return lockedFields(r).DecodeFields(e, idx, vals)
}

func (r lockedBoth) AppendDetails(fields []trace.Field, label []byte, e trace.Event) ([]trace.Field, []byte, error) {
	return lockedAppender(r).AppendDetails(fields, label, e)
}
