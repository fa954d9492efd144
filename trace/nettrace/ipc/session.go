package ipc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ReplyTimeout bounds an exchange (connecting, sending a command, reading
// its reply) whose context has no deadline.
const ReplyTimeout = 30 * time.Second

// DefaultBufferMB is the runtime's buffer for a session, as dotnet-trace's
// default.
const DefaultBufferMB = 256

// Config says what a session traces.
type Config struct {
	Providers []Provider
	BufferMB  uint32 // the runtime's circular buffer; 0 means DefaultBufferMB
	// NoRundown asks the runtime not to write the rundown when the
	// session stops: smaller traces whose stacks do not resolve.
	NoRundown bool
}

// payload encodes c as the payload of CollectTracing2 (rundown true) or
// CollectTracing (rundown false): circularBufferMB, format, [rundown],
// then the providers as (keywords, level, name, filter data).
func (c Config) payload(withRundown bool) []byte {
	mb := c.BufferMB
	if mb == 0 {
		mb = DefaultBufferMB
	}
	b := binary.LittleEndian.AppendUint32(nil, mb)
	b = binary.LittleEndian.AppendUint32(b, formatNetTrace)
	if withRundown {
		r := byte(1)
		if c.NoRundown {
			r = 0
		}
		b = append(b, r)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.Providers)))
	for _, p := range c.Providers {
		b = binary.LittleEndian.AppendUint64(b, p.Keywords)
		b = binary.LittleEndian.AppendUint32(b, uint32(p.Level))
		b = appendString(b, p.Name)
		b = appendString(b, p.FilterData())
	}
	return b
}

// Session is an EventPipe session running in a process: reading it reads
// the NetTrace stream, which ends (io.EOF) when the runtime has finished
// the session. It is safe to call Stop and Close while another goroutine
// reads.
type Session struct {
	conn   net.Conn
	socket string
	id     uint64

	mu      sync.Mutex
	stopped bool
}

// Start opens a session on the diagnostics socket (see [Find] for a
// process's) with CollectTracing2, or with CollectTracing when the runtime
// does not know CollectTracing2 (.NET Core 3.0 and earlier). ctx bounds
// the start only, not the session.
func Start(ctx context.Context, socket string, cfg Config) (*Session, error) {
	if len(cfg.Providers) == 0 {
		return nil, errors.New("a session needs at least one provider")
	}
	s, err := start(ctx, socket, cfg, cmdCollectTracing2, "CollectTracing2")
	var e *Error
	if errors.As(err, &e) && e.HResult == EUnknownCommand {
		s, err = start(ctx, socket, cfg, cmdCollectTracing, "CollectTracing")
	}
	return s, err
}

func start(ctx context.Context, socket string, cfg Config, cmd uint8, name string) (*Session, error) {
	msg, err := message(setEventPipe, cmd, cfg.payload(cmd == cmdCollectTracing2))
	if err != nil {
		return nil, err
	}
	conn, payload, err := exchange(ctx, socket, name, msg)
	if err != nil {
		return nil, err
	}
	id, err := sessionID(name, payload)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &Session{conn: conn, socket: socket, id: id}, nil
}

// exchange connects to socket, sends msg and reads an OK reply, within
// ctx (or ReplyTimeout). It returns the connection, for a continuation.
func exchange(ctx context.Context, socket, command string, msg []byte) (net.Conn, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, ReplyTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", command, err)
	}
	// The context's end (cancellation or deadline) interrupts a blocked
	// read or write at once; ctx.Err() is set by then, so the error says
	// which.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (net.Conn, []byte, error) {
		stop()
		conn.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, nil, fmt.Errorf("%s: %w", command, err)
	}
	if _, err := conn.Write(msg); err != nil {
		return fail(err)
	}
	h, payload, err := readReply(conn)
	if err != nil {
		return fail(err)
	}
	if payload, err = okPayload(command, h, payload); err != nil {
		return fail(err)
	}
	if !stop() {
		return fail(ctx.Err())
	}
	conn.SetDeadline(time.Time{})
	return conn, payload, nil
}

// ID returns the session's id in the runtime.
func (s *Session) ID() uint64 { return s.id }

// Read reads the NetTrace stream.
func (s *Session) Read(p []byte) (int, error) { return s.conn.Read(p) }

// Stop asks the runtime to end the session (StopTracing on a second
// connection) and waits for its reply, within ctx. The runtime then
// writes the rundown and ends the stream: read on to io.EOF. Stopping
// again does nothing.
func (s *Session) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	s.mu.Unlock()
	msg, err := message(setEventPipe, cmdStopTracing, binary.LittleEndian.AppendUint64(nil, s.id))
	if err != nil {
		return err
	}
	conn, payload, err := exchange(ctx, s.socket, "StopTracing", msg)
	if err != nil {
		return err
	}
	conn.Close()
	// The runtime echoes the id; an empty payload is accepted as well.
	if len(payload) > 0 {
		id, err := sessionID("StopTracing", payload)
		if err != nil {
			return err
		}
		if id != s.id {
			return protocolErrorf("StopTracing of session %#x was answered for session %#x", s.id, id)
		}
	}
	return nil
}

// Close closes the stream's connection; the runtime ends a session whose
// client is gone. A Read in progress returns an error.
func (s *Session) Close() error { return s.conn.Close() }

// QueryProcessInfo asks the runtime behind socket about its process
// (ProcessInfo).
func QueryProcessInfo(ctx context.Context, socket string) (ProcessInfo, error) {
	msg, err := message(setProcess, cmdProcessInfo, nil)
	if err != nil {
		return ProcessInfo{}, err
	}
	conn, payload, err := exchange(ctx, socket, "ProcessInfo", msg)
	if err != nil {
		return ProcessInfo{}, err
	}
	conn.Close()
	return parseProcessInfo(payload)
}
