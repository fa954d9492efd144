package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
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

// session is one viewer tab's websocket.
type session struct {
	srv  *Server
	conn *websocket.Conn
	e    Entry
	job  *job

	release func()          // lets go of the index
	ctx     context.Context // ends with the session
	cancel  context.CancelFunc
	out     chan []byte   // JSON messages for the writer
	wake    chan struct{} // a request is pending

	// closing is closed by closeWith: the writer sends a close message
	// with closeCode and closeText and ends the session.
	closing   chan struct{}
	closeOnce sync.Once
	closeCode int
	closeText string

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

func (s *Server) handleSocket(w http.ResponseWriter, r *http.Request) {
	e, ok := s.entry(w, r)
	if !ok {
		return
	}
	select {
	case <-s.shutdown:
		writeError(w, http.StatusServiceUnavailable, "the server is shutting down")
		return
	default:
	}
	conn, err := s.upgrader().Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has replied
	}
	ss := &session{
		srv:     s,
		conn:    conn,
		e:       e,
		out:     make(chan []byte, outQueueLength),
		wake:    make(chan struct{}, 1),
		closing: make(chan struct{}),
	}
	if ok, reason := s.res.join(ss); !ok {
		// A browser sees no HTTP status of a refused upgrade, only a close
		// code and reason: accept, then close at once saying why.
		conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(CloseTryAgainLater, reason), time.Now().Add(writeWait))
		conn.Close()
		return
	}
	ss.ctx, ss.cancel = context.WithCancel(s.ctx)
	ss.job, ss.release = s.ix.acquire(e)
	s.sessions.Add(2)
	go ss.readLoop()
	go ss.writeLoop()
}

// closeWith ends the session with a close message: code and a reason for
// the user (at most 123 bytes, the most a close frame holds).
func (ss *session) closeWith(code int, reason string) {
	ss.closeOnce.Do(func() {
		if len(reason) > 123 {
			reason = reason[:123]
		}
		ss.closeCode, ss.closeText = code, reason
		close(ss.closing)
	})
}

// guard recovers a panic in a session goroutine, logs it with the trace
// id and ends the session.
func (ss *session) guard(what string) {
	if p := recover(); p != nil {
		ss.srv.log.Error("panic in websocket session", "trace", ss.e.ID, "in", what, "panic", p, "stack", string(debug.Stack()))
		ss.cancel()
		ss.conn.Close()
	}
}

func (ss *session) readLoop() {
	defer ss.srv.sessions.Done()
	defer ss.cancel()
	defer ss.guard("reader")
	ss.conn.SetReadLimit(MaxMessage)
	ss.conn.SetReadDeadline(time.Now().Add(pongWait))
	ss.conn.SetPongHandler(func(string) error {
		return ss.conn.SetReadDeadline(time.Now().Add(pongWait))
	})
	for {
		typ, msg, err := ss.conn.ReadMessage()
		if err != nil {
			return
		}
		ss.conn.SetReadDeadline(time.Now().Add(pongWait))
		if typ != websocket.TextMessage {
			ss.send(map[string]any{"type": "error", "error": "binary messages are not understood"})
			continue
		}
		var req request
		if err := json.Unmarshal(msg, &req); err != nil {
			ss.send(map[string]any{"type": "error", "error": "bad message: " + err.Error()})
			continue
		}
		if err := ss.accept(&req); err != nil {
			ss.send(map[string]any{"type": "error", "seq": req.Seq, "error": err.Error()})
		} else if ss.srv.accepted != nil {
			ss.srv.accepted(req.Seq)
		}
	}
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
	select {
	case ss.wake <- struct{}{}:
	default:
	}
	return nil
}

// send queues a JSON message for the writer; it gives up when the session
// ends.
func (ss *session) send(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		ss.srv.log.Error("encoding websocket message", "trace", ss.e.ID, "err", err)
		return false
	}
	select {
	case ss.out <- b:
		return true
	case <-ss.ctx.Done():
		return false
	}
}

func (ss *session) writeLoop() {
	defer ss.srv.sessions.Done()
	defer ss.srv.res.leave(ss)
	defer ss.release()
	defer ss.conn.Close()
	defer ss.cancel()
	defer ss.guard("writer")
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	progress, unsubscribe := ss.job.subscribe()
	defer unsubscribe()
	if err := ss.writeProgress(); err != nil { // the state at connection
		return
	}
	for {
		var err error
		select {
		case <-ss.ctx.Done():
			return
		case <-ss.srv.shutdown:
			ss.conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"),
				time.Now().Add(writeWait))
			return
		case <-ss.closing:
			ss.conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(ss.closeCode, ss.closeText),
				time.Now().Add(writeWait))
			return
		case <-ping.C:
			err = ss.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait))
		case <-progress:
			err = ss.writeProgress()
		case msg := <-ss.out:
			err = ss.write(websocket.TextMessage, msg)
		case <-ss.wake:
			err = ss.serve()
		}
		if err != nil {
			return
		}
	}
}

func (ss *session) write(typ int, msg []byte) error {
	ss.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return ss.conn.WriteMessage(typ, msg)
}

func (ss *session) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return ss.write(websocket.TextMessage, b)
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
		select {
		case bigBuf = <-ss.srv.res.big:
			defer ss.srv.res.putBig(bigBuf)
		case <-ss.ctx.Done():
			return ss.ctx.Err()
		case <-ss.srv.shutdown:
			return nil
		}
	}
	// Wait for a query slot before taking the requests, so that a session
	// that waited answers the newest request it has by then.
	var buf *replyBuffers
	select {
	case buf = <-ss.srv.res.slots:
		defer ss.srv.res.putSlot(buf)
	case <-ss.ctx.Done():
		return ss.ctx.Err()
	case <-ss.srv.shutdown:
		return nil
	}
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
		if ss.ctx.Err() != nil {
			return err
		}
		if ctx.Err() != nil {
			return ss.writeJSON(map[string]any{"type": "error", "seq": vp.Seq, "cut_off": true,
				"error": fmt.Sprintf("the view took longer than %v to draw and was cut off; show fewer tracks or a shorter time", ss.srv.res.timeout)})
		}
		return ss.writeJSON(map[string]any{"type": "error", "seq": vp.Seq, "error": err.Error()})
	}
	buf.frame = wire.AppendSlice(buf.frame[:0], vp.Seq, &buf.slice, time.Since(start), idx.maxType())
	return ss.write(websocket.BinaryMessage, buf.frame)
}
