package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"viewer/render"
	"viewer/render/wire"
	"viewer/trace"
)

// Websocket session limits and timings (PROTOCOL.md §4). A viewport
// request's limits are render's ([render.MaxWidth], [render.MaxTracks],
// [render.MaxCells]); its hidden types are an id list like a URL's, at
// most [MaxViewIDs].
const (
	writeWait  = 10 * time.Second
	pongWait   = 60 * time.Second
	pingPeriod = pongWait * 9 / 10
	MaxMessage = 64 << 10 // bytes of one client message

	outQueueLength = 16
)

// sessionTime is a time in a client request: a decimal string or, when
// small enough, a JSON number.
type sessionTime trace.Time

func (t *sessionTime) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("time %s is not an integer number of nanoseconds", b)
	}
	*t = sessionTime(n)
	return nil
}

// request is a client message: a viewport request, the only type there
// is (search and event details are JSON API requests).
type request struct {
	Type   string          `json:"type"`
	Seq    uint32          `json:"seq"`
	Start  sessionTime     `json:"start"`
	End    sessionTime     `json:"end"`
	Width  int             `json:"width"`
	Tracks []trace.TrackID `json:"tracks"`
	Types  []trace.TypeID  `json:"types"`
	Mode   Mode            `json:"mode"`
	// Chase, on a live trace, asks for this view again, moved to end at
	// the newest event, whenever the index grows (live.go).
	Chase bool `json:"chase"`
}

// session is one viewer tab's websocket: a socket serving one trace's
// index (or the snapshots of its build).
type session struct {
	*socket
	e       Entry
	job     *job
	release func() // lets go of the index
	// closer is how the server ends the session (resources.closeTrace).
	closer *closeSignal

	mu       sync.Mutex
	viewport *request // newest pending viewport request ("latest wins")
	chase    *request // the view that follows a live trace's end, or nil
	// sentTables says whether the name tables went out, and tablesOf
	// what they were made of (writer only).
	sentTables bool
	tablesOf   tablesKey
	// shown is the snapshot of a stored trace's build the page was last
	// told of, and indexing says there was one: the session's live
	// messages say "indexing" (writer only).
	shown    *index
	indexing bool
}

// closeWith ends the session with a close message (see closeSignal).
func (ss *session) closeWith(code int, reason string) { ss.closer.closeWith(code, reason) }

func (s *Server) upgrader() *websocket.Upgrader {
	return &websocket.Upgrader{
		ReadBufferSize:  4096,
		WriteBufferSize: 64 << 10,
		CheckOrigin:     s.checkOrigin,
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			writeError(w, status, "websocket upgrade refused: "+reason.Error())
		},
	}
}

// checkOrigin accepts an upgrade only from the page's own origin. A
// request without Origin (not from a browser) is accepted: browsers always
// send it on websocket upgrades.
func (s *Server) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, r.Host) && s.hostAllowed(u.Host)
}

// upgrade makes a request a websocket; it replies itself when it cannot
// (503 while the server shuts down).
func (s *Server) upgrade(w http.ResponseWriter, r *http.Request) (*websocket.Conn, bool) {
	select {
	case <-s.shutdown:
		writeError(w, http.StatusServiceUnavailable, "the server is shutting down")
		return nil, false
	default:
	}
	conn, err := s.upgrader().Upgrade(w, r, nil)
	return conn, err == nil // Upgrade has replied to an error
}

func (s *Server) handleSocket(w http.ResponseWriter, r *http.Request) {
	e, ok := s.entry(w, r)
	if !ok {
		return
	}
	conn, ok := s.upgrade(w, r)
	if !ok {
		return
	}
	ss := &session{socket: newSocket(s, conn, "trace", e.ID), e: e}
	ss.closer = &ss.closing
	if ok, reason := s.res.join(ss); !ok {
		ss.refuse(reason)
		return
	}
	ss.job, ss.release = s.ix.acquire(e)
	progress, unsubscribe := ss.job.subscribe()
	ss.run(ss, progress, func() {
		unsubscribe()
		ss.release()
		s.res.leave(ss)
	})
}

// receive decodes and keeps a client message (socketView).
func (ss *session) receive(msg []byte) (uint32, error) {
	var req request
	if err := decodeMessage(msg, &req); err != nil {
		return 0, err
	}
	return req.Seq, ss.accept(&req)
}

// check validates a viewport request within the limits, and sets its
// default mode.
func (req *request) check() error {
	switch {
	case req.End <= req.Start:
		return errors.New("viewport: end must be after start")
	case req.Width < 1 || req.Width > render.MaxWidth:
		return fmt.Errorf("viewport: width must be from 1 to %d", render.MaxWidth)
	case len(req.Tracks) > render.MaxTracks:
		return fmt.Errorf("viewport: more than %d tracks", render.MaxTracks)
	case len(req.Types) > MaxViewIDs:
		return fmt.Errorf("viewport: more than %d hidden types", MaxViewIDs)
	case len(req.Tracks)*(req.Width+1) > render.MaxCells:
		return fmt.Errorf("viewport: tracks × (width+1) exceeds %d", render.MaxCells)
	}
	switch req.Mode {
	case "":
		req.Mode = ModeEvent
	case ModeEvent, ModeSummary:
	default:
		return errors.New("viewport: mode must be event or summary")
	}
	return nil
}

// accept validates a request and queues it.
func (ss *session) accept(req *request) error {
	switch req.Type {
	case "viewport":
		if err := req.check(); err != nil {
			return err
		}
		ss.mu.Lock()
		ss.viewport = req
		ss.chase = nil
		if req.Chase {
			ss.chase = req
		}
		ss.mu.Unlock()
	default:
		return fmt.Errorf("unknown message type %q", req.Type)
	}
	return nil
}

// writeProgress pushes the index's state, and serves a request that was
// waiting for the index.
func (ss *session) writeProgress() error {
	p, idx := ss.job.snapshot()
	switch p.State {
	case StateReady:
		if idx != nil {
			if ss.tablesOf.live {
				ss.shown = nil // the prefix's snapshot may go
				return ss.serveLive(idx, true)
			}
			return ss.serve() // sends ready and the tables first
		}
	case StateLive:
		if idx != nil {
			return ss.serveLive(idx, false)
		}
	case StateIndexing:
		// A stored trace's prefix: shown as it grows, with the progress.
		if idx != nil && idx.snapshot && idx != ss.shown {
			ss.shown, ss.indexing = idx, true
			if err := ss.serveLive(idx, false); err != nil {
				return err
			}
		}
	case StateFailed:
		return ss.writeJSON(map[string]any{"type": "failed", "error": p.Error})
	}
	return ss.writeJSON(struct {
		Type string `json:"type"`
		Progress
	}{"progress", p})
}

// writeReady tells the page the index is built and sends the name tables
// every reply refers to; once per session, before any reply.
func (ss *session) writeReady(idx *index) error {
	if ss.sentTables {
		return nil
	}
	ss.sentTables = true
	if err := ss.writeJSON(map[string]any{"type": "ready", "info": ss.srv.listInfo(ss.e)}); err != nil {
		return err
	}
	return ss.writeTables(idx)
}

// writeTables sends the name tables of idx.
func (ss *session) writeTables(idx *index) error {
	ss.tablesOf = tablesKeyOf(idx)
	return ss.write(websocket.BinaryMessage, wire.AppendTables(nil, 0, idx.tables()))
}

// serve answers the newest pending viewport request, once the index is
// ready.
func (ss *session) serve() error {
	_, idx := ss.job.snapshot()
	if idx == nil {
		return nil // kept pending until the index is ready
	}
	if err := ss.writeReady(idx); err != nil {
		return err
	}
	ss.mu.Lock()
	pending := ss.viewport
	ss.mu.Unlock()
	if pending == nil {
		return nil
	}
	var bigBuf *replyBuffers
	if len(pending.Tracks)*(pending.Width+1) > bigCells {
		var err error
		if bigBuf, err = ss.takeSlot(ss.srv.res.big); bigBuf == nil {
			return err
		}
		defer ss.srv.res.putBig(bigBuf)
	}
	// Wait for a query slot before taking the requests, so that a session
	// that waited answers the newest request it has by then.
	buf, err := ss.takeSlot(ss.srv.res.slots)
	if buf == nil {
		return err
	}
	defer ss.srv.res.putSlot(buf)
	ss.mu.Lock()
	vp := ss.viewport
	ss.viewport = nil
	ss.mu.Unlock()
	if vp == nil {
		return nil
	}
	if bigBuf != nil {
		buf = bigBuf
	}
	return ss.serveViewport(idx, vp, buf)
}

// serveViewport answers one request within the query timeout, in the
// buffers of its query slot. A query cut off by the timeout is answered
// with an error message flagged "cut_off".
func (ss *session) serveViewport(idx *index, vp *request, buf *replyBuffers) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ss.ctx, ss.srv.res.timeout)
	defer cancel()
	err := idx.x.QueryInto(ctx, render.Viewport{
		Start:  trace.Time(vp.Start),
		End:    trace.Time(vp.End),
		Width:  vp.Width,
		Tracks: vp.Tracks,
	}, &buf.slice)
	if err != nil {
		return ss.writeQueryError(ctx, vp.Seq, err)
	}
	buf.frame = wire.AppendSlice(buf.frame[:0], vp.Seq, &buf.slice, time.Since(start), idx.maxType())
	return ss.write(websocket.BinaryMessage, buf.frame)
}
