package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"viewer/render"
	"viewer/trace"
)

// Live traces (PROTOCOL.md §live): a source's bytes are recorded into the
// library (recording.go) and indexed while they arrive; sessions see the
// index grow and, in chase mode, get frames pushed as it does. When the
// source ends, the recording is an ordinary stored trace, indexed again
// from the stored file (exactly as an upload of it would be).

// LiveSource is a live trace's producer.
type LiveSource struct {
	// Name is the trace's name in the library.
	Name string
	// R delivers the trace's bytes as they are produced. io.EOF ends the
	// trace; another error ends it cut short, with the error as notice.
	R io.Reader
	// Stop asks the producer to end (the page's Stop button, shutdown):
	// R then reaches its end after what the producer still writes
	// (StopTracing's rundown, perf's last buffers). Nil: Stop stops
	// reading R (closing it when it is an io.Closer).
	Stop func()
}

// liveTrace is a source being recorded.
type liveTrace struct {
	rec  *Recording
	src  LiveSource
	done chan struct{} // closed when the recording is stored

	mu      sync.Mutex
	stopped bool
}

// stop asks the source to end; it is safe to call more than once.
func (lt *liveTrace) stop() {
	lt.mu.Lock()
	already := lt.stopped
	lt.stopped = true
	lt.mu.Unlock()
	if already {
		return
	}
	if lt.src.Stop != nil {
		lt.src.Stop()
	} else if c, ok := lt.src.R.(io.Closer); ok {
		c.Close()
	}
}

func (lt *liveTrace) wasStopped() bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.stopped
}

// ErrTooManyLive is returned when Config.MaxLive live traces are being
// recorded already.
var ErrTooManyLive = errors.New("too many live traces are being recorded: stop one first")

// DefaultMaxLive is the default Config.MaxLive.
const DefaultMaxLive = 8

// full reports whether max live traces are being recorded.
func (ls *liveSet) full(max int) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.traces) >= max
}

// liveSet is the server's live traces, by id.
type liveSet struct {
	mu     sync.Mutex
	traces map[uuid.UUID]*liveTrace
}

func (ls *liveSet) get(id uuid.UUID) (*liveTrace, bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	lt, ok := ls.traces[id]
	return lt, ok
}

// wait waits up to d for the live traces being recorded to be stored.
func (ls *liveSet) wait(d time.Duration) {
	ls.mu.Lock()
	var done []chan struct{}
	for _, lt := range ls.traces {
		done = append(done, lt.done)
	}
	ls.mu.Unlock()
	deadline := time.After(d)
	for _, c := range done {
		select {
		case <-c:
		case <-deadline:
			return
		}
	}
}

// liveStopWait is how long closing the server waits for the live sources
// it stopped to end (a .NET runtime's rundown takes a moment).
const liveStopWait = 10 * time.Second

// Ingest records src into the library as a live trace and indexes it as
// it grows. It returns at once with the trace's entry; the recording goes
// on until src ends or is stopped ([Server.StopLive]), and the returned
// channel is closed once the recording is stored.
func (s *Server) Ingest(src LiveSource) (Entry, <-chan struct{}, error) {
	s.live.mu.Lock()
	defer s.live.mu.Unlock()
	if len(s.live.traces) >= s.cfg.MaxLive {
		return Entry{}, nil, ErrTooManyLive
	}
	rec, err := s.lib.Record(src.Name, s.cfg.MaxUpload, func(r io.ReaderAt, size int64) string {
		if f, err := trace.Sniff(r, size, s.cfg.Formats); err == nil {
			return f.Name()
		}
		return ""
	})
	if err != nil {
		return Entry{}, nil, err
	}
	lt := &liveTrace{rec: rec, src: src, done: make(chan struct{})}
	s.live.traces[rec.ID()] = lt
	e, _ := s.lib.Get(rec.ID())
	go s.record(lt)
	s.ix.get(e)
	return e, lt.done, nil
}

// record copies a live source into its recording until the source ends,
// then stores it.
func (s *Server) record(lt *liveTrace) {
	defer close(lt.done)
	defer func() {
		s.live.mu.Lock()
		delete(s.live.traces, lt.rec.ID())
		s.live.mu.Unlock()
	}()
	stopAtShutdown := context.AfterFunc(s.ctx, lt.stop)
	defer stopAtShutdown()
	var cause error
	buf := make([]byte, 64<<10)
	for {
		n, err := lt.src.R.Read(buf)
		if n > 0 {
			if _, werr := lt.rec.Write(buf[:n]); werr != nil {
				cause = werr
				lt.stop()
				break
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if !lt.wasStopped() || lt.src.Stop != nil {
				cause = err
			}
			break
		}
	}
	e, err := lt.rec.Finish(cause)
	switch {
	case errors.Is(err, ErrNotFound):
		s.log.Info("a live trace ended without a trace", "trace", lt.rec.ID())
	case err != nil:
		s.log.Error("storing a live trace", "trace", lt.rec.ID(), "err", err)
	default:
		s.log.Info("live trace stored", "trace", e.ID, "bytes", e.Size, "cause", cause)
	}
}

// StopLive asks a live trace's source to end. It returns false when the
// trace is not live.
func (s *Server) StopLive(id uuid.UUID) bool {
	lt, ok := s.live.get(id)
	if ok {
		lt.stop()
	}
	return ok
}

// liveEvery is how often a live trace's index publishes what it has.
const liveEvery = 100 * time.Millisecond

// buildLive indexes a live trace while it is recorded, publishing
// snapshots as the job's index, then, once the source has ended and the
// recording is stored, indexes the stored trace as any other (the live
// index, built from a file that was still growing, may have events
// clamped into order). The live index is shown until that one is ready.
func (ix *indexer) buildLive(ctx context.Context, j *job, e Entry, rec *Recording) (*index, *os.File, error) {
	j.update(func(p *Progress) { p.State = StateLive })
	live, err := ix.indexLive(ctx, j, e, rec)
	if err != nil {
		ix.log.Warn("live indexing failed", "trace", e.ID, "err", err)
	}
	// The source may go on after the trace's own end (a followed file),
	// or after a trace it cannot read: stop it, and wait for the
	// recording to be stored.
	if lt, ok := ix.live.get(e.ID); ok {
		lt.stop()
		select {
		case <-lt.done:
		case <-ctx.Done():
		}
	}
	if live != nil {
		j.mu.Lock()
		j.idx = live
		j.mu.Unlock()
	}
	stored, ok := ix.lib.Get(e.ID)
	if !ok || stored.Live {
		if err == nil {
			err = errors.New("the live trace was not stored")
		}
		if live != nil {
			live.close()
		}
		return nil, nil, err
	}
	if err := ix.acquireBuild(ctx); err != nil {
		if live != nil {
			return live, nil, nil
		}
		return nil, nil, err
	}
	defer func() { <-ix.sem }()
	idx, f, err := ix.buildStored(ctx, j, stored)
	if live != nil {
		if err != nil {
			ix.log.Warn("indexing a stored live trace", "trace", e.ID, "err", err)
			if f != nil {
				f.Close()
			}
			return live, nil, nil // what was seen live stays
		}
		// Sessions may still be querying the live index: close it later.
		time.AfterFunc(retireAfter, live.close)
	}
	return idx, f, err
}

// retireAfter is how long a replaced index stays open for the queries
// that may still run on it.
const retireAfter = time.Minute

// indexLive indexes a live trace until its reader ends, publishing each
// snapshot as the job's index, and returns the final index.
func (ix *indexer) indexLive(ctx context.Context, j *job, e Entry, rec *Recording) (*index, error) {
	rf, err := ix.lib.Open(e.ID)
	if err != nil {
		return nil, err
	}
	f := rec.File(rf)
	// A build cancelled (shutdown) while its reader waits for bytes: end
	// the wait (render cannot interrupt it).
	defer context.AfterFunc(ctx, func() { f.End(ctx.Err()) })()
	format, err := trace.Sniff(f, f.Limit(), ix.formats) // waits for the first bytes
	if err != nil {
		rf.Close()
		return nil, err
	}
	if err := rec.SetFormat(format.Name()); err != nil {
		rf.Close()
		return nil, err
	}
	r, err := format.Open(f, f.Limit())
	if err != nil {
		rf.Close()
		return nil, err
	}
	closer := closers{rf}
	if c, ok := r.(io.Closer); ok {
		closer = append(closer, c)
	}
	lv := render.NewLive(liveEvery)
	f.OnWait(lv.AroundWait)
	defer f.OnWait(nil)
	opts := ix.options(r)
	opts.Live = lv
	built := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		ix.watchLive(j, lv, r, built, StateLive)
	}()
	x, err := render.Build(ctx, r, opts)
	close(built)
	<-watched
	if err != nil {
		closer.Close()
		return nil, err
	}
	return &index{x: x, r: r, stats: capStats(x.Stats()), types: x.TypeEvents(), format: closer}, nil
}

// watchLive makes each snapshot lv publishes the job's index until the
// build ends. A live trace's state is live and its events those of the
// snapshot; a stored trace's build (state indexing) reports its progress
// itself, and the snapshot is only news to the sessions.
func (ix *indexer) watchLive(j *job, lv *render.Live, r trace.Reader, built <-chan struct{}, state State) {
	for {
		select {
		case <-lv.Updated():
		case <-built:
			return
		}
		x := lv.Index()
		if x == nil || !x.Growing() {
			<-built
			return
		}
		snap := &index{x: x, r: metaReader{r, x.Meta()}, stats: capStats(x.Stats()), types: x.TypeEvents(), snapshot: true}
		j.mu.Lock()
		j.idx = snap
		j.mu.Unlock()
		j.update(func(p *Progress) {
			if state == StateLive {
				p.State, p.Events = StateLive, x.Events()
			}
		})
	}
}

// metaReader is a reader whose Meta is a snapshot's: the encoders of
// event JSON ask it only for names.
type metaReader struct {
	trace.Reader
	m *trace.Meta
}

func (r metaReader) Meta() *trace.Meta { return r.m }

// tablesKey is what a session's name tables were made of: a live
// trace's index sends them again when it has more tracks or types.
type tablesKey struct {
	live          bool
	tracks, types int
	indexedTracks int
}

func tablesKeyOf(idx *index) tablesKey {
	m := idx.x.Meta()
	return tablesKey{live: idx.snapshot, tracks: len(m.Tracks), types: len(m.Types), indexedTracks: len(idx.x.Tracks())}
}

// liveJSON is the message a session gets whenever a live trace's index
// grows, and once when it has ended (PROTOCOL.md §live); likewise while a
// stored trace indexes, each snapshot of the prefix (Indexing).
type liveJSON struct {
	Type  string `json:"type"` // "live"
	Ended bool   `json:"ended"`
	// Indexing says the index grows because a stored trace is being
	// indexed, not recorded: no Follow, no Stop.
	Indexing bool       `json:"indexing,omitempty"`
	Events   int64      `json:"events"`
	First    trace.Time `json:"first,string"`
	Last     trace.Time `json:"last,string"`
	Tracks   int        `json:"tracks"`
	Types    int        `json:"types"`
}

// serveLive tells the page how far a live trace has grown (the tables
// again when they grew), and answers the pending request, or else the
// chased view moved to the new end. ended says the trace is no longer
// live: its stored index has replaced the live one.
func (ss *session) serveLive(idx *index, ended bool) error {
	if err := ss.writeReady(idx); err != nil {
		return err
	}
	if ended || tablesKeyOf(idx) != ss.tablesOf {
		if err := ss.writeTables(idx); err != nil {
			return err
		}
		ss.tablesOf.live = !ended
	}
	first, last := idx.x.Span()
	m := idx.x.Meta()
	if err := ss.writeJSON(liveJSON{Type: "live", Ended: ended, Indexing: ss.indexing, Events: idx.x.Events(), First: first, Last: last, Tracks: len(m.Tracks), Types: len(m.Types)}); err != nil {
		return err
	}
	ss.mu.Lock()
	if ss.viewport == nil && ss.chase != nil && idx.x.Events() > 0 {
		vp := *ss.chase
		d := vp.End - vp.Start
		vp.End = sessionTime(last) + d/50 + 1 // a margin after the newest event
		vp.Start = vp.End - d
		ss.viewport, ss.chase = &vp, &vp
	}
	ss.mu.Unlock()
	return ss.serve()
}

// closers closes several things.
type closers []io.Closer

func (cs closers) Close() error {
	var err error
	for _, c := range cs {
		err = errors.Join(err, c.Close())
	}
	return err
}

// handleLive records the request body, streamed (chunked) by a producer
// as it writes, as a live trace (PROTOCOL.md §live): the reply's first
// line, {"id": …}, is sent at once; the reply ends when the body does and
// the trace is stored.
func (s *Server) handleLive(w http.ResponseWriter, r *http.Request) {
	release, ok := s.acquireUpload(w, r, false)
	if !ok {
		return
	}
	defer release()
	// Refused before full duplex is on: a full-duplex handler that
	// returns without reading the body races the server's own read of
	// what is left of it ("invalid concurrent Body.Read call").
	if s.live.full(s.cfg.MaxLive) {
		writeErr(w, http.StatusTooManyRequests, ErrTooManyLive)
		return
	}
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil {
		writeError(w, http.StatusInternalServerError, "this server cannot stream a live trace: "+err.Error())
		return
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		name = "live"
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxUpload)
	e, stored, err := s.Ingest(LiveSource{Name: name, R: body})
	if errors.Is(err, ErrTooManyLive) {
		writeErr(w, http.StatusTooManyRequests, err)
		return
	}
	if err != nil {
		status, msg := s.uploadStatus(err, r, s.cfg.MaxUpload)
		writeError(w, status, msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{"id": e.ID})
	rc.Flush()
	<-stored
}

// handleStop asks a live trace's source to end (the page's Stop).
func (s *Server) handleStop(w http.ResponseWriter, r *http.Request) {
	e, ok := s.entry(w, r)
	if !ok {
		return
	}
	if !s.StopLive(e.ID) {
		writeError(w, http.StatusConflict, "the trace is not live")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"stopping": true})
}

// handleLiveDemo starts the live demo: the demo trace written a little at
// a time, as a running program would (the library page's "Live demo").
func (s *Server) handleLiveDemo(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Demo == nil {
		writeError(w, http.StatusNotFound, "this viewer has no demo trace")
		return
	}
	name, data := s.cfg.Demo()
	if data == nil {
		writeError(w, http.StatusNotFound, "this viewer has no demo trace")
		return
	}
	d := s.cfg.LiveDemoTime
	if d <= 0 {
		d = DefaultLiveDemoTime
	}
	src := newPaced(data, d)
	e, _, err := s.Ingest(LiveSource{Name: "live-" + name, R: src, Stop: src.stop})
	if errors.Is(err, ErrTooManyLive) {
		writeErr(w, http.StatusTooManyRequests, err)
		return
	}
	if err != nil {
		writeError(w, http.StatusInsufficientStorage, publicError(err))
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": e.ID})
}

// DefaultLiveDemoTime is how long the live demo takes to write the demo
// trace.
const DefaultLiveDemoTime = 30 * time.Second

// paced delivers data evenly over a duration, in chunks of a 20th of a
// second; stop ends it early (a trace cut short).
type paced struct {
	data  []byte
	start time.Time
	total time.Duration
	off   int
	done  chan struct{}
	once  sync.Once
}

func newPaced(data []byte, total time.Duration) *paced {
	return &paced{data: data, start: time.Now(), total: total, done: make(chan struct{})}
}

func (p *paced) stop() { p.once.Do(func() { close(p.done) }) }

func (p *paced) Read(b []byte) (int, error) {
	for {
		if p.off >= len(p.data) {
			return 0, io.EOF
		}
		due := int(float64(len(p.data)) * min(1, float64(time.Since(p.start))/float64(p.total)))
		if due > p.off {
			n := copy(b, p.data[p.off:due])
			p.off += n
			return n, nil
		}
		select {
		case <-p.done:
			return 0, errors.New("the live demo was stopped")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
