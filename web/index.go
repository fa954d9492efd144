package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/span"
)

// index is a trace read to its end and indexed for drawing, with its
// statistics. It is immutable and shared read-only by every session.
type index struct {
	x     *render.Index
	r     trace.Reader // the reader x was built from, read to its end
	stats export.Stats
	types []int64 // events per trace.TypeID
	// format is the format's own reader (r wraps it) when it holds
	// resources of its own to close (perf.data's decompressed data).
	format io.Closer
	// snapshot says x is a snapshot of a live trace's index: closing it
	// closes nothing (the build's final index owns the resources).
	snapshot bool
}

// close closes the index and the reader it was built from.
func (idx *index) close() {
	if idx.snapshot {
		return
	}
	idx.x.Close()
	if idx.format != nil {
		idx.format.Close()
	}
}

// State is how far a trace's index is.
type State string

const (
	StateQueued   State = "queued"
	StateIndexing State = "indexing"
	StateReady    State = "ready"
	// StateLive: the trace is still being recorded; the index is a
	// snapshot of what has arrived (live.go).
	StateLive   State = "live"
	StateFailed State = "failed"
)

// Progress is the state of an index build, as pushed to the page.
type Progress struct {
	State      State   `json:"state"`
	Percent    float64 `json:"percent"`
	Events     int64   `json:"events"`
	EventsPerS float64 `json:"events_per_s"`
	Error      string  `json:"error,omitempty"`
}

// job is the index of one trace: built once in the background, then
// shared read-only by every session.
type job struct {
	id   uuid.UUID
	done chan struct{} // closed when the build ends

	mu       sync.Mutex
	progress Progress
	idx      *index
	file     *os.File
	subs     map[chan struct{}]struct{}
	cancel   context.CancelFunc
	retry    bool // failed for a cause that may pass (a full disk): the next get tries again

	// Guarded by indexer.mu:
	refs int       // sessions and requests using the index
	used time.Time // when the last of them let go
	// dropped says the trace was deleted while the index was in use:
	// the last to let go closes it (a closed index's arrays may be
	// unmapped: no query may run on it).
	dropped bool
}

// closeIndex closes the job's index and trace file.
func (j *job) closeIndex() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.file != nil {
		j.file.Close()
		j.file = nil
	}
	if j.idx != nil {
		j.idx.close()
		j.idx = nil
	}
}

// snapshot returns the job's progress and, once ready, its index.
func (j *job) snapshot() (Progress, *index) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.progress, j.idx
}

// index returns the job's index: nil before the first snapshot of its
// build.
func (j *job) index() *index {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.idx
}

// subscribe returns a channel that receives a value whenever the job's
// progress changes after the call (coalesced), and a func to stop.
func (j *job) subscribe() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	j.mu.Lock()
	j.subs[c] = struct{}{}
	j.mu.Unlock()
	return c, func() {
		j.mu.Lock()
		delete(j.subs, c)
		j.mu.Unlock()
	}
}

func (j *job) update(f func(p *Progress)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	f(&j.progress)
	for c := range j.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// indexer builds and holds the indexes of the library's traces.
type indexer struct {
	lib     *Library
	stats   *statsCache // the indexed traces' statistics
	formats []trace.Format
	symbols func(r trace.Reader) render.SymbolSource // Config.Symbols
	derive  func(r trace.Reader) span.Deriver        // Config.Derive
	spill   string                                   // directory of the render indexes' spill files
	log     *slog.Logger
	sem     chan struct{} // builds run one at a time: the machine is small

	// resident is how many built indexes stay in memory while no one
	// uses them; the least recently used beyond it are closed.
	resident int
	// budget is the bytes of indexes (render.Index.Bytes) that stay in
	// memory while no one uses them (Config.MemoryBudget).
	budget int64
	// every is how often a build reports progress.
	every time.Duration
	// minFree is the disk space a build needs free in spill to start.
	minFree int64
	// live is the server's live traces (live.go).
	live *liveSet

	mu   sync.Mutex
	jobs map[uuid.UUID]*job
	ctx  context.Context // ends at shutdown
	// persist is the background work on index files (persist.go).
	persist persister
}

// progressEvery is how often a build reports progress.
const progressEvery = 200 * time.Millisecond

// get returns the job of a trace, starting its build if it has none.
func (ix *indexer) get(e Entry) *job {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if j, ok := ix.jobs[e.ID]; ok && !j.retryable(false) {
		return j
	}
	return ix.startLocked(e)
}

// retryable reports whether a job has failed and may be started again:
// any failure when force is set, else one for a cause that may pass.
func (j *job) retryable(force bool) bool {
	select {
	case <-j.done:
	default:
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.progress.State == StateFailed && (force || j.retry)
}

// retry starts a failed job again (the API's retry), whatever its cause.
// It returns false when the job has not failed.
func (ix *indexer) retry(e Entry) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if j, ok := ix.jobs[e.ID]; ok && !j.retryable(true) {
		return false
	}
	ix.startLocked(e)
	return true
}

// startLocked starts the build of a trace; ix.mu is held.
func (ix *indexer) startLocked(e Entry) *job {
	ctx, cancel := context.WithCancel(ix.ctx)
	j := &job{
		id:       e.ID,
		done:     make(chan struct{}),
		progress: Progress{State: StateQueued},
		subs:     map[chan struct{}]struct{}{},
		cancel:   cancel,
	}
	ix.jobs[e.ID] = j
	go ix.run(ctx, j, e)
	return j
}

// acquire returns the job of a trace, starting its build if it has none,
// and keeps its index in memory until release is called.
func (ix *indexer) acquire(e Entry) (j *job, release func()) {
	j = ix.get(e)
	ix.mu.Lock()
	j.refs++
	ix.mu.Unlock()
	var once sync.Once
	return j, func() { once.Do(func() { ix.unref(j) }) }
}

// unref lets go of a job's index that acquire (or a reader pass) held.
func (ix *indexer) unref(j *job) {
	ix.mu.Lock()
	j.refs--
	j.used = time.Now()
	last := j.refs == 0 && j.dropped
	ix.mu.Unlock()
	if last {
		j.closeIndex()
		return
	}
	ix.evict()
}

// evict closes the least recently used indexes that no one uses, beyond
// the resident limit and the memory budget (counted in the indexes' own
// bytes). A trace evicted is indexed again when next opened.
func (ix *indexer) evict() {
	ix.mu.Lock()
	var idle []*job
	resident, bytes := 0, int64(0)
	size := map[*job]int64{}
	for _, j := range ix.jobs {
		p, idx := j.snapshot()
		if idx == nil || p.State == StateLive || p.State == StateIndexing {
			continue // building (a live trace's has an index already), or failed
		}
		resident++
		size[j] = idx.x.Resident() // a mapped index: the pages its views touched
		bytes += size[j]
		if j.refs == 0 {
			idle = append(idle, j)
		}
	}
	slices.SortFunc(idle, func(a, b *job) int { return a.used.Compare(b.used) })
	var out []*job
	for _, j := range idle {
		if resident <= ix.resident && bytes <= ix.budget {
			break
		}
		delete(ix.jobs, j.id)
		out = append(out, j)
		resident--
		bytes -= size[j]
	}
	ix.mu.Unlock()
	for _, j := range out {
		ix.log.Info("closing an idle index", "trace", j.id)
		j.closeIndex()
	}
}

// peek returns the job of a trace without starting one.
func (ix *indexer) peek(id uuid.UUID) (*job, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	j, ok := ix.jobs[id]
	return j, ok
}

// drop stops and forgets the job of a deleted trace.
func (ix *indexer) drop(id uuid.UUID) {
	ix.stats.drop(id)
	ix.mu.Lock()
	j, ok := ix.jobs[id]
	delete(ix.jobs, id)
	ix.mu.Unlock()
	if !ok {
		return
	}
	j.cancel()
	<-j.done
	j.update(func(p *Progress) {
		p.State, p.Error = StateFailed, "the trace was deleted"
	})
	ix.mu.Lock()
	j.dropped = true
	busy := j.refs > 0
	ix.mu.Unlock()
	if !busy { // else the last to let go closes it
		j.closeIndex()
	}
}

// closeAll stops every build and closes the trace files.
func (ix *indexer) closeAll() {
	ix.mu.Lock()
	jobs := ix.jobs
	ix.jobs = map[uuid.UUID]*job{}
	ix.mu.Unlock()
	for _, j := range jobs {
		j.cancel()
		<-j.done
	}
	// A job that ended may have started writing its index file, which
	// reads the index: wait for that before closing the indexes, and
	// before returning (the data directory may be removed next).
	ix.persist.wait()
	for _, j := range jobs {
		j.closeIndex()
	}
}

func (ix *indexer) run(ctx context.Context, j *job, e Entry) {
	defer close(j.done)
	idx, f, err := ix.buildOne(ctx, j, e)
	if err != nil {
		if f != nil {
			f.Close()
		}
		ix.log.Warn("indexing failed", "trace", e.ID, "err", err)
		j.update(func(p *Progress) {
			p.State, p.Error = StateFailed, publicError(err)
			j.retry = transient(err)
		})
		return
	}
	st := idx.stats
	err = ix.lib.SaveStats(e.ID, st)
	if err != nil && !errors.Is(err, ErrNotFound) {
		ix.log.Warn("saving index cache", "trace", e.ID, "err", err)
	}
	if !errors.Is(err, ErrNotFound) {
		ix.stats.set(e.ID, st)
	}
	j.mu.Lock()
	j.idx, j.file = idx, f
	j.mu.Unlock()
	j.update(func(p *Progress) {
		p.State, p.Percent, p.Events = StateReady, 100, st.Events
	})
	ix.mu.Lock()
	j.used = time.Now()
	ix.mu.Unlock()
	ix.evict()
}

func (ix *indexer) buildOne(ctx context.Context, j *job, e Entry) (idx *index, f *os.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			ix.log.Error("panic while indexing", "trace", e.ID, "panic", p, "stack", string(debug.Stack()))
			idx, err = nil, fmt.Errorf("internal error while indexing: %v", p)
		}
	}()
	if rec, ok := ix.lib.recording(e.ID); ok {
		return ix.buildLive(ctx, j, e, rec)
	}
	if err := ix.acquireBuild(ctx); err != nil {
		return nil, nil, err
	}
	defer func() { <-ix.sem }()
	if err := checkFree(ix.spill, ix.minFree); err != nil {
		return nil, nil, err
	}
	return ix.buildStored(ctx, j, e)
}

// acquireBuild waits for a build slot (ix.sem).
func (ix *indexer) acquireBuild(ctx context.Context) error {
	select {
	case ix.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// buildStored indexes a stored trace. While it reads, snapshots of the
// prefix indexed so far are the job's index (watchLive), the state
// staying "indexing".
func (ix *indexer) buildStored(ctx context.Context, j *job, e Entry) (idx *index, f *os.File, err error) {
	if idx, f, ok := ix.openStored(ctx, j, e); ok {
		return idx, f, nil
	}
	f, err = ix.lib.Open(e.ID)
	if err != nil {
		return nil, nil, err
	}
	format := formatByName(ix.formats, e.Format)
	if format == nil {
		return nil, f, fmt.Errorf("this viewer has no reader for the %q format any more", e.Format)
	}
	r, err := format.Open(f, e.Size)
	if err != nil {
		return nil, f, err
	}
	total := int64(0) // events, when the reader knows them in advance
	if t, ok := r.(interface{ TotalEvents() int64 }); ok {
		total = t.TotalEvents()
	}
	start := time.Now()
	var last time.Time
	j.update(func(p *Progress) { p.State = StateIndexing })
	opts := ix.options(r)
	opts.Progress = func(rp render.Progress) {
		now := time.Now()
		if now.Sub(last) < ix.every && !rp.Done {
			return
		}
		last = now
		pct := progressPercent(rp, e.Size, total)
		rate := float64(rp.Events) / now.Sub(start).Seconds()
		j.update(func(p *Progress) {
			p.Percent, p.Events, p.EventsPerS = pct, rp.Events, rate
		})
	}
	// The prefix indexed so far is the job's index while the build runs
	// (progressive first paint, PROTOCOL.md §4), unless the job shows an
	// index already (a live trace's, until this one replaces it). A build
	// that ends before the first snapshot (liveEvery) publishes none.
	prefix := j.index() == nil
	var built, watched chan struct{}
	if prefix {
		lv := render.NewLive(liveEvery)
		opts.Live = lv
		built, watched = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(watched)
			ix.watchLive(j, lv, r, built, StateIndexing)
		}()
	}
	x, err := render.Build(ctx, r, opts)
	if prefix {
		close(built)
		<-watched
	}
	closer, _ := r.(io.Closer)
	if err != nil {
		if prefix {
			// The snapshots share the failed build's spill file, closed.
			j.mu.Lock()
			j.idx = nil
			j.mu.Unlock()
		}
		if closer != nil {
			closer.Close()
		}
		return nil, f, err
	}
	ix.saveIndex(j, e, x)
	return &index{x: x, r: r, stats: capStats(x.Stats()), types: x.TypeEvents(), format: closer}, f, nil
}

// options returns the build options for the trace r reads (the format's
// own reader).
func (ix *indexer) options(r trace.Reader) render.Options {
	opts := render.Options{SpillDir: ix.spill}
	if ix.symbols != nil {
		opts.Symbols = ix.symbols(r)
	}
	if ix.derive != nil {
		opts.Derive = ix.derive(r)
	}
	return opts
}

// progressPercent is how far a build is, never 100 before it is ready:
// the share of the events when the reader knows their number, else of the
// file's bytes up to the furthest payload indexed (rp.Bytes, not the
// furthest byte read: readers read ahead, and the file is read to its end
// well before its last events are indexed). 99 once reading has ended and
// the tracks are being finished.
func progressPercent(rp render.Progress, size, total int64) float64 {
	pct := 0.0
	switch {
	case rp.Done:
		pct = 99
	case total > 0:
		pct = 100 * float64(rp.Events) / float64(total)
	case size > 0:
		pct = 100 * float64(min(rp.Bytes, size)) / float64(size)
	}
	return min(99, pct)
}

func formatByName(formats []trace.Format, name string) trace.Format {
	for _, f := range formats {
		if f.Name() == name {
			return f
		}
	}
	return nil
}
