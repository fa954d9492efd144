// Package ipctest is a stand-in for the .NET runtime's diagnostics server,
// for tests of diagnostics IPC clients. It listens on a Unix socket named
// as the runtime names its own (dotnet-diagnostic-{pid}-{key}-socket),
// answers CollectTracing, CollectTracing2, StopTracing and ProcessInfo as
// dotnet/diagnostics' ipc-protocol.md describes, and streams a given
// NetTrace file as the session's continuation at a controlled rate.
//
// It decodes requests with its own decoder, written from the protocol
// document rather than shared with the client, so that a test compares
// what the client sent with what the protocol says it means. It records
// every request for assertions and can misbehave on request: refuse a
// command, answer with an error, die in the middle of the stream.
//
// Like the runtime, it holds the end of the stream (Config.Tail, standing
// for the rundown) until StopTracing arrives, then writes it at full speed
// and closes the connection; it notices a client that hangs up before the
// stream has ended.
package ipctest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unicode/utf16"
)

// The protocol's constants, restated from ipc-protocol.md.
const (
	headerLen = 20

	SetEventPipe = 0x02 // command sets
	SetProcess   = 0x04
	SetServer    = 0xFF

	StopTracing     = 0x01 // EventPipe command ids
	CollectTracing  = 0x02
	CollectTracing2 = 0x03
	ProcessInfo     = 0x00 // Process command id

	ok         = 0x00 // Server command ids
	errorReply = 0xFF

	HResultUnknownCommand = 0x80131385
	HResultBadEncoding    = 0x80131384
	HResultInvalidArg     = 0x80070057
)

var ipcMagic = []byte("DOTNET_IPC_V1\x00")

// Config says what the stand-in does.
type Config struct {
	Dir   string // where the socket goes
	PID   int    // in the socket's name; 0 means this process
	Key   uint64 // the disambiguation key in the name; 0 means 1
	Trace []byte // the NetTrace bytes each session streams

	Chunk    int           // bytes written at a time; 0 means 64 KiB
	Interval time.Duration // pause between chunks: the rate
	// Tail is the number of bytes at the end of Trace held back until
	// StopTracing, as the runtime writes the rundown only then.
	Tail int
	// DieAfter, when positive, closes the stream abruptly after that
	// many bytes, StopTracing or not.
	DieAfter int
	// Refuse answers these EventPipe/Process commands (set<<8 | id) with
	// the error "unknown command", as an older runtime does.
	Refuse []uint16
	// HResult, when not 0, answers CollectTracing commands with this
	// error.
	HResult uint32
	// CommandLine is ProcessInfo's answer.
	CommandLine string
}

// Provider is a provider of a CollectTracing request, as decoded.
type Provider struct {
	Keywords   uint64
	Level      uint32
	Name       string
	FilterData string
}

// Request is one message the stand-in received.
type Request struct {
	Set, ID uint8
	// For CollectTracing and CollectTracing2:
	BufferMB  uint32
	Format    uint32
	Rundown   bool // always true for CollectTracing
	Providers []Provider
	// For StopTracing, the session to stop; for a CollectTracing that
	// started one, its id.
	SessionID uint64
	Err       error // why the request could not be decoded
}

// Server is a running stand-in.
type Server struct {
	cfg    Config
	socket string
	ln     net.Listener

	mu       sync.Mutex
	requests []Request
	sessions map[uint64]*session
	nextID   uint64
	sent     int64

	disconnected chan struct{}
	discOnce     sync.Once
	ended        chan struct{}
	endOnce      sync.Once
	wg           sync.WaitGroup
}

type session struct {
	conn    net.Conn
	stop    chan struct{}
	stopped sync.Once
}

// Start listens on cfg.Dir/dotnet-diagnostic-{pid}-{key}-socket and serves
// until Close.
func Start(cfg Config) (*Server, error) {
	if cfg.PID == 0 {
		cfg.PID = os.Getpid()
	}
	if cfg.Key == 0 {
		cfg.Key = 1
	}
	if cfg.Chunk <= 0 {
		cfg.Chunk = 64 << 10
	}
	cfg.Tail = min(max(cfg.Tail, 0), len(cfg.Trace))
	name := filepath.Join(cfg.Dir, "dotnet-diagnostic-"+strconv.Itoa(cfg.PID)+"-"+strconv.FormatUint(cfg.Key, 10)+"-socket")
	ln, err := net.Listen("unix", name)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, socket: name, ln: ln,
		sessions:     map[uint64]*session{},
		nextID:       0x5E55_0000_0001,
		disconnected: make(chan struct{}),
		ended:        make(chan struct{}),
	}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Socket returns the socket's path.
func (s *Server) Socket() string { return s.socket }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Sent returns the stream bytes written so far, over all sessions.
func (s *Server) Sent() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// Active returns the number of sessions whose stream has not ended.
func (s *Server) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Disconnected is closed when a client hangs up on a session before its
// stream has ended.
func (s *Server) Disconnected() <-chan struct{} { return s.disconnected }

// Ended is closed when a session's stream has ended, whichever way.
func (s *Server) Ended() <-chan struct{} { return s.ended }

// Close stops listening, ends the sessions and waits for them.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	for _, ss := range s.sessions {
		ss.conn.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	os.Remove(s.socket)
	return err
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(c)
		}()
	}
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
}

// reply writes a Server message with payload.
func reply(c net.Conn, id uint8, payload []byte) error {
	b := append([]byte(nil), ipcMagic...)
	b = binary.LittleEndian.AppendUint16(b, uint16(headerLen+len(payload)))
	b = append(b, SetServer, id, 0, 0)
	_, err := c.Write(append(b, payload...))
	return err
}

func replyError(c net.Conn, hr uint32) {
	reply(c, errorReply, binary.LittleEndian.AppendUint32(nil, hr))
}

// handle serves one connection: one request, its reply, and for a
// session the stream.
func (s *Server) handle(c net.Conn) {
	streaming := false
	defer func() {
		if !streaming {
			c.Close()
		}
	}()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var h [headerLen]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		s.record(Request{Err: fmt.Errorf("reading the header: %w", err)})
		return
	}
	if !bytes.Equal(h[:14], ipcMagic) {
		s.record(Request{Err: fmt.Errorf("bad magic %q", h[:14])})
		replyError(c, 0x80131386)
		return
	}
	size := int(binary.LittleEndian.Uint16(h[14:]))
	req := Request{Set: h[16], ID: h[17]}
	if size < headerLen || h[18] != 0 || h[19] != 0 {
		req.Err = fmt.Errorf("size %d, reserved %x", size, h[18:20])
		s.record(req)
		replyError(c, HResultBadEncoding)
		return
	}
	body := make([]byte, size-headerLen)
	if _, err := io.ReadFull(c, body); err != nil {
		req.Err = fmt.Errorf("reading a %d-byte payload: %w", len(body), err)
		s.record(req)
		return
	}
	c.SetReadDeadline(time.Time{})
	for _, r := range s.cfg.Refuse {
		if r == uint16(req.Set)<<8|uint16(req.ID) {
			s.record(req)
			replyError(c, HResultUnknownCommand)
			return
		}
	}
	switch {
	case req.Set == SetEventPipe && (req.ID == CollectTracing || req.ID == CollectTracing2):
		req.Err = decodeCollect(&req, body)
		if req.Err != nil {
			s.record(req)
			replyError(c, HResultBadEncoding)
			return
		}
		if s.cfg.HResult != 0 {
			s.record(req)
			replyError(c, s.cfg.HResult)
			return
		}
		streaming = true
		s.stream(c, req)
	case req.Set == SetEventPipe && req.ID == StopTracing:
		if len(body) != 8 {
			req.Err = fmt.Errorf("StopTracing payload of %d bytes", len(body))
			s.record(req)
			replyError(c, HResultBadEncoding)
			return
		}
		req.SessionID = binary.LittleEndian.Uint64(body)
		s.record(req)
		s.mu.Lock()
		ss := s.sessions[req.SessionID]
		s.mu.Unlock()
		if ss == nil {
			replyError(c, HResultInvalidArg)
			return
		}
		reply(c, ok, body)
		ss.stopped.Do(func() { close(ss.stop) })
	case req.Set == SetProcess && req.ID == ProcessInfo:
		s.record(req)
		p := binary.LittleEndian.AppendUint64(nil, uint64(s.cfg.PID))
		p = append(p, make([]byte, 16)...) // runtime cookie
		p = appendString(p, s.cfg.CommandLine)
		p = appendString(p, "Linux")
		p = appendString(p, "x64")
		reply(c, ok, p)
	default:
		s.record(req)
		replyError(c, HResultUnknownCommand)
	}
}

// stream answers a CollectTracing with OK and the session id, then writes
// the trace until the end (less the tail), waits for StopTracing, writes
// the tail and closes.
func (s *Server) stream(c net.Conn, req Request) {
	ss := &session{conn: c, stop: make(chan struct{})}
	s.mu.Lock()
	id := s.nextID
	s.nextID++
	s.sessions[id] = ss
	req.SessionID = id
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.sessions, id)
		s.mu.Unlock()
		s.endOnce.Do(func() { close(s.ended) })
	}()
	if err := reply(c, ok, binary.LittleEndian.AppendUint64(nil, id)); err != nil {
		return
	}
	// The client sends nothing more: a read that returns means it hung
	// up (or the stream ended and this side closed).
	gone := make(chan struct{})
	go func() {
		var b [1]byte
		c.Read(b[:])
		close(gone)
	}()
	hungUp := func() {
		s.discOnce.Do(func() { close(s.disconnected) })
	}
	data := s.cfg.Trace
	body := len(data) - s.cfg.Tail
	off := 0
	write := func(end int) bool {
		if s.cfg.DieAfter > 0 && end > s.cfg.DieAfter {
			end = s.cfg.DieAfter
		}
		if end <= off {
			return true
		}
		n, err := c.Write(data[off:end])
		off += n
		s.mu.Lock()
		s.sent += int64(n)
		s.mu.Unlock()
		return err == nil
	}
	dead := func() bool { return s.cfg.DieAfter > 0 && off >= s.cfg.DieAfter }
	stopped := false
	for off < body && !stopped {
		if !write(min(off+s.cfg.Chunk, body)) {
			hungUp()
			return
		}
		if dead() {
			return
		}
		if s.cfg.Interval <= 0 {
			select {
			case <-ss.stop:
				stopped = true
			case <-gone:
				hungUp()
				return
			default:
			}
			continue
		}
		t := time.NewTimer(s.cfg.Interval)
		select {
		case <-ss.stop:
			stopped = true
		case <-gone:
			t.Stop()
			hungUp()
			return
		case <-t.C:
		}
		t.Stop()
	}
	if !stopped {
		select {
		case <-ss.stop:
		case <-gone:
			hungUp()
			return
		}
	}
	// Stopped: the rest at full speed (the rundown), then the end.
	if !write(len(data)) {
		hungUp()
	}
}

// decodeCollect decodes a CollectTracing or CollectTracing2 payload.
func decodeCollect(r *Request, b []byte) error {
	d := decoder{b: b}
	r.BufferMB = d.u32()
	r.Format = d.u32()
	r.Rundown = true
	if r.ID == CollectTracing2 {
		switch d.u8() {
		case 0:
			r.Rundown = false
		case 1:
		default:
			return errors.New("requestRundown is neither 0 nor 1")
		}
	}
	n := d.u32()
	if d.err == nil && uint64(n)*24 > uint64(len(d.b)) { // 8+4+4+4 at least
		return fmt.Errorf("%d providers in %d bytes", n, len(d.b))
	}
	for range n {
		var p Provider
		p.Keywords = d.u64()
		p.Level = d.u32()
		p.Name = d.str()
		p.FilterData = d.str()
		r.Providers = append(r.Providers, p)
	}
	if d.err == nil && len(d.b) != 0 {
		return fmt.Errorf("%d bytes after the providers", len(d.b))
	}
	return d.err
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) next(n int) []byte {
	if d.err != nil {
		return make([]byte, n)
	}
	if len(d.b) < n {
		d.err = fmt.Errorf("payload ends %d bytes early", n-len(d.b))
		return make([]byte, n)
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8() uint8   { return d.next(1)[0] }
func (d *decoder) u32() uint32 { return binary.LittleEndian.Uint32(d.next(4)) }
func (d *decoder) u64() uint64 { return binary.LittleEndian.Uint64(d.next(8)) }

// str decodes a string: a count of UTF-16 units, the last a NUL, or 0.
func (d *decoder) str() string {
	n := d.u32()
	if n == 0 || d.err != nil {
		return ""
	}
	if uint64(n)*2 > uint64(len(d.b)) {
		d.err = fmt.Errorf("string of %d units in %d bytes", n, len(d.b))
		return ""
	}
	raw := d.next(int(n) * 2)
	u := make([]uint16, n)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	if u[n-1] != 0 {
		d.err = errors.New("string without its terminating NUL")
		return ""
	}
	return string(utf16.Decode(u[:n-1]))
}

func appendString(b []byte, s string) []byte {
	if s == "" {
		return binary.LittleEndian.AppendUint32(b, 0)
	}
	u := utf16.Encode([]rune(s))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(u)+1))
	for _, c := range u {
		b = binary.LittleEndian.AppendUint16(b, c)
	}
	return binary.LittleEndian.AppendUint16(b, 0)
}
