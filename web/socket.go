package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// socket is the websocket plumbing that a trace's session and a combined
// view's session share (PROTOCOL.md §4): a reader goroutine that hands
// every text message to the view, and a writer goroutine, the only one
// that writes to the connection, which sends queued JSON messages, pings,
// the view's progress, its replies to pending requests and, when asked or
// at shutdown, a close message.
type socket struct {
	srv   *Server
	conn  *websocket.Conn
	label []any // names the session in logs: slog key-value pairs

	ctx     context.Context // ends with the session
	cancel  context.CancelFunc
	out     chan []byte   // JSON messages for the writer
	wake    chan struct{} // a request is pending
	closing closeSignal
}

// socketView is what a socket serves.
type socketView interface {
	// receive decodes, checks and keeps a client message, on the reader
	// goroutine; an error goes back to the client with the message's seq
	// (without one for a [badMessage]). The writer is then woken.
	receive(msg []byte) (seq uint32, err error)
	// writeProgress writes the state of the view's indexes: when the
	// writer starts and whenever the run's progress channel signals.
	writeProgress() error
	// serve answers the pending request, if any.
	serve() error
}

// badMessage is a client message that is not one.
type badMessage struct{ err error }

func (b badMessage) Error() string { return "bad message: " + b.err.Error() }

// decodeMessage unmarshals a client message into v.
func decodeMessage(msg []byte, v any) error {
	if err := json.Unmarshal(msg, v); err != nil {
		return badMessage{err}
	}
	return nil
}

// closeSignal asks, once, for a websocket to end with a close message.
type closeSignal struct {
	once sync.Once
	done chan struct{} // closed by close
	code int
	text string
}

func newCloseSignal() *closeSignal { return &closeSignal{done: make(chan struct{})} }

// closeWith asks for a close message with code and a reason for the user
// (at most 123 bytes, the most a close frame holds).
func (c *closeSignal) closeWith(code int, reason string) {
	c.once.Do(func() {
		if len(reason) > 123 {
			reason = reason[:123]
		}
		c.code, c.text = code, reason
		close(c.done)
	})
}

// newSocket wraps an upgraded connection; label names it in logs.
func newSocket(s *Server, conn *websocket.Conn, label ...any) *socket {
	sk := &socket{
		srv:     s,
		conn:    conn,
		label:   label,
		out:     make(chan []byte, outQueueLength),
		wake:    make(chan struct{}, 1),
		closing: closeSignal{done: make(chan struct{})},
	}
	sk.ctx, sk.cancel = context.WithCancel(s.ctx)
	return sk
}

// refuse ends a socket that will not run: a browser sees no HTTP status
// of a refused upgrade, only a close code and reason, so the upgrade was
// accepted and is closed at once saying why.
func (sk *socket) refuse(reason string) {
	sk.writeClose(CloseTryAgainLater, reason)
	sk.conn.Close()
	sk.cancel()
}

// run starts the socket's goroutines serving v. progress signals that the
// view's indexes changed; cleanup runs when the writer ends, after the
// connection is closed.
func (sk *socket) run(v socketView, progress <-chan struct{}, cleanup func()) {
	sk.srv.sessions.Add(2)
	go sk.readLoop(v)
	go sk.writeLoop(v, progress, cleanup)
}

// guard recovers a panic in a session goroutine, logs it and ends the
// session.
func (sk *socket) guard(what string) {
	if p := recover(); p != nil {
		sk.srv.log.Error("panic in websocket session", append(sk.label, "in", what, "panic", p, "stack", string(debug.Stack()))...)
		sk.cancel()
		sk.conn.Close()
	}
}

func (sk *socket) readLoop(v socketView) {
	defer sk.srv.sessions.Done()
	defer sk.cancel()
	defer sk.guard("reader")
	sk.conn.SetReadLimit(MaxMessage)
	sk.conn.SetReadDeadline(time.Now().Add(pongWait))
	sk.conn.SetPongHandler(func(string) error {
		return sk.conn.SetReadDeadline(time.Now().Add(pongWait))
	})
	for {
		typ, msg, err := sk.conn.ReadMessage()
		if err != nil {
			return
		}
		sk.conn.SetReadDeadline(time.Now().Add(pongWait))
		if typ != websocket.TextMessage {
			sk.send(map[string]any{"type": "error", "error": "binary messages are not understood"})
			continue
		}
		seq, err := v.receive(msg)
		if _, bad := errors.AsType[badMessage](err); bad {
			sk.send(map[string]any{"type": "error", "error": err.Error()})
			continue
		}
		if err != nil {
			sk.send(map[string]any{"type": "error", "seq": seq, "error": err.Error()})
			continue
		}
		if sk.srv.accepted != nil {
			sk.srv.accepted(seq)
		}
		select {
		case sk.wake <- struct{}{}:
		default:
		}
	}
}

// send queues a JSON message for the writer; it gives up when the session
// ends.
func (sk *socket) send(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		sk.srv.log.Error("encoding websocket message", append(sk.label, "err", err)...)
		return false
	}
	select {
	case sk.out <- b:
		return true
	case <-sk.ctx.Done():
		return false
	}
}

func (sk *socket) writeLoop(v socketView, progress <-chan struct{}, cleanup func()) {
	defer sk.srv.sessions.Done()
	defer cleanup()
	defer sk.conn.Close()
	defer sk.cancel()
	defer sk.guard("writer")
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	if err := v.writeProgress(); err != nil { // the state at connection
		return
	}
	for {
		var err error
		select {
		case <-sk.ctx.Done():
			return
		case <-sk.srv.shutdown:
			sk.writeClose(websocket.CloseGoingAway, "server shutting down")
			return
		case <-sk.closing.done:
			sk.writeClose(sk.closing.code, sk.closing.text)
			return
		case <-ping.C:
			err = sk.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait))
		case <-progress:
			err = v.writeProgress()
		case msg := <-sk.out:
			err = sk.write(websocket.TextMessage, msg)
		case <-sk.wake:
			err = v.serve()
		}
		if err != nil {
			return
		}
	}
}

func (sk *socket) writeClose(code int, reason string) {
	sk.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(writeWait))
}

func (sk *socket) write(typ int, msg []byte) error {
	sk.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return sk.conn.WriteMessage(typ, msg)
}

func (sk *socket) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return sk.write(websocket.TextMessage, b)
}

// writeQueryError answers request seq whose query failed with err: cut
// off when ctx (the query's) ran out, else err's message. It returns an
// error only when the session itself has ended.
func (sk *socket) writeQueryError(ctx context.Context, seq uint32, err error) error {
	switch {
	case sk.ctx.Err() != nil:
		return err
	case ctx.Err() != nil:
		return sk.writeJSON(map[string]any{"type": "error", "seq": seq, "cut_off": true,
			"error": fmt.Sprintf("the view took longer than %v to draw and was cut off; show fewer tracks or a shorter time", sk.srv.res.timeout)})
	}
	return sk.writeJSON(map[string]any{"type": "error", "seq": seq, "error": err.Error()})
}

// takeSlot waits for a query slot (the buffers a reply is made in), or
// returns nil when the session ends (with its error) or the server shuts
// down (nil error).
func (sk *socket) takeSlot(slots chan *replyBuffers) (*replyBuffers, error) {
	select {
	case buf := <-slots:
		return buf, nil
	case <-sk.ctx.Done():
		return nil, sk.ctx.Err()
	case <-sk.srv.shutdown:
		return nil, nil
	}
}
