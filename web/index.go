package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"viewer/trace"
)

// Index is a trace read to its end and indexed for drawing: what a viewer
// session queries. The render package provides the real one; tests pass
// their own. An Index is immutable once built and safe for concurrent use.
type Index interface {
	// Reader is the reader the index was built from, read to its end: its
	// Meta is complete and Details may be called concurrently.
	Reader() trace.Reader
	// Stats are the statistics of the whole trace.
	Stats() trace.Stats
	// Event returns the event with the given ordinal.
	Event(ev int64) (trace.Event, bool)
	// AppendViewport appends the render wire frame for q to dst.
	AppendViewport(ctx context.Context, dst []byte, q ViewportQuery) ([]byte, error)
	// Hit returns the event drawn at q, or false when there is none.
	Hit(ctx context.Context, q HitQuery) (ev int64, ok bool, err error)
	// Search calls yield with the events matching query (PROTOCOL.md §5)
	// that come after event after (-1: from the start), in time order,
	// until yield returns false. It returns the number of matches it
	// passed to yield. A query that does not parse is an error.
	Search(ctx context.Context, query string, after int64, yield func(SearchHit) bool) (total int64, err error)
}

// ViewportQuery asks for what one viewer tab shows.
type ViewportQuery struct {
	Start, End trace.Time
	Width      int             // pixels across
	Tracks     []trace.TrackID // the visible tracks
	HideTypes  []trace.TypeID  // event types not drawn
	Mode       Mode
}

// HitQuery asks which event is drawn at a point.
type HitQuery struct {
	Time    trace.Time
	Track   trace.TrackID
	NsPerPx float64
}

// SearchHit is one matching event.
type SearchHit struct {
	Ev    int64         `json:"ev"`
	Time  trace.Time    `json:"time,string"`
	Track trace.TrackID `json:"track"`
}

// Build reads r to its end and indexes it. It calls progress from time to
// time with the number of events read so far, and stops when ctx is done.
type Build func(ctx context.Context, r trace.Reader, progress func(events int64)) (Index, error)

// State is how far a trace's index is.
type State string

const (
	StateQueued   State = "queued"
	StateIndexing State = "indexing"
	StateReady    State = "ready"
	StateFailed   State = "failed"
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
	idx      Index
	file     *os.File
	subs     map[chan struct{}]struct{}
	cancel   context.CancelFunc
}

// snapshot returns the job's progress and, once ready, its index.
func (j *job) snapshot() (Progress, Index) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.progress, j.idx
}

// subscribe returns a channel that receives a value whenever the job's
// progress changes (coalesced), and a func to stop.
func (j *job) subscribe() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	j.mu.Lock()
	j.subs[c] = struct{}{}
	j.mu.Unlock()
	c <- struct{}{} // the current state
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
	formats []trace.Format
	build   Build
	log     *slog.Logger
	sem     chan struct{} // builds run one at a time: the machine is small

	mu   sync.Mutex
	jobs map[uuid.UUID]*job
	ctx  context.Context // ends at shutdown
}

// progressEvery is how often a build reports progress.
const progressEvery = 200 * time.Millisecond

// get returns the job of a trace, starting its build if it has none.
func (ix *indexer) get(e Entry) *job {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if j, ok := ix.jobs[e.ID]; ok {
		return j
	}
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

// peek returns the job of a trace without starting one.
func (ix *indexer) peek(id uuid.UUID) (*job, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	j, ok := ix.jobs[id]
	return j, ok
}

// drop stops and forgets the job of a deleted trace.
func (ix *indexer) drop(id uuid.UUID) {
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
	j.mu.Lock()
	if j.file != nil {
		j.file.Close()
		j.file = nil
	}
	j.idx = nil
	j.mu.Unlock()
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
		j.mu.Lock()
		if j.file != nil {
			j.file.Close()
		}
		j.mu.Unlock()
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
		j.update(func(p *Progress) { p.State, p.Error = StateFailed, err.Error() })
		return
	}
	st := idx.Stats()
	if err := ix.lib.SaveStats(e.ID, st); err != nil && !errors.Is(err, ErrNotFound) {
		ix.log.Warn("saving index cache", "trace", e.ID, "err", err)
	}
	j.mu.Lock()
	j.idx, j.file = idx, f
	j.mu.Unlock()
	j.update(func(p *Progress) {
		p.State, p.Percent, p.Events = StateReady, 100, st.Events
	})
}

func (ix *indexer) buildOne(ctx context.Context, j *job, e Entry) (idx Index, f *os.File, err error) {
	select {
	case ix.sem <- struct{}{}:
		defer func() { <-ix.sem }()
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	defer func() {
		if p := recover(); p != nil {
			ix.log.Error("panic while indexing", "trace", e.ID, "panic", p, "stack", string(debug.Stack()))
			idx, err = nil, fmt.Errorf("internal error while indexing: %v", p)
		}
	}()
	f, err = ix.lib.Open(e.ID)
	if err != nil {
		return nil, nil, err
	}
	format := formatByName(ix.formats, e.Format)
	if format == nil {
		return nil, f, fmt.Errorf("this viewer has no reader for the %q format any more", e.Format)
	}
	cr := &countingReaderAt{r: f}
	r, err := format.Open(cr, e.Size)
	if err != nil {
		return nil, f, err
	}
	start := time.Now()
	var last time.Time
	j.update(func(p *Progress) { p.State = StateIndexing })
	idx, err = ix.build(ctx, r, func(events int64) {
		now := time.Now()
		if now.Sub(last) < progressEvery {
			return
		}
		last = now
		pct := 0.0
		if e.Size > 0 {
			pct = min(99.9, 100*float64(cr.max.Load())/float64(e.Size))
		}
		rate := float64(events) / now.Sub(start).Seconds()
		j.update(func(p *Progress) {
			p.Percent, p.Events, p.EventsPerS = pct, events, rate
		})
	})
	if err != nil {
		return nil, f, err
	}
	return idx, f, nil
}

func formatByName(formats []trace.Format, name string) trace.Format {
	for _, f := range formats {
		if f.Name() == name {
			return f
		}
	}
	return nil
}

// countingReaderAt records the furthest byte read, for progress.
type countingReaderAt struct {
	r   io.ReaderAt
	max atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	end := off + int64(n)
	for {
		m := c.max.Load()
		if end <= m || c.max.CompareAndSwap(m, end) {
			break
		}
	}
	return n, err
}
