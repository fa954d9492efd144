// Package ipc is a client of the .NET runtime's diagnostics server: it
// finds the .NET processes on the machine ([Processes]), starts an
// EventPipe session in one of them ([Start]) and reads the NetTrace stream
// the runtime writes back ([Session]), until [Session.Stop] asks the
// runtime to end it.
//
// # Design
//
// The protocol is dotnet/diagnostics' documentation/design-docs/
// ipc-protocol.md. Every exchange opens its own connection to the
// process's Unix socket (dotnet-diagnostic-{pid}-{key}-socket in $TMPDIR
// or /tmp) and sends one message: a 20-byte header (the magic
// "DOTNET_IPC_V1\0", the message's total size as a uint16, a command set,
// a command id, two reserved bytes) and a command-specific payload, all
// little-endian. The runtime answers with one message of the same shape,
// Server/OK (0xFF, 0x00) or Server/Error (0xFF, 0xFF) with an HRESULT,
// and may then keep the connection for a continuation: for the
// CollectTracing commands the continuation is the trace itself, a NetTrace
// stream that ends when the runtime closes the connection.
//
// So a [Session] is the connection the session started on, read as an
// [io.Reader]; stopping it takes a second connection that sends
// StopTracing with the session's id. The runtime then writes the rundown
// (the method and module tables the stacks need), ends the stream and
// closes the connection. A session whose client disconnects is ended by
// the runtime too, which is what [Session.Close] relies on: a viewer that
// exits without stopping does not leave tracing on in the target.
//
// # Security
//
// The peer is another user's process at worst and a hostile server at
// worst of all: replies are bounded by the protocol's 16-bit size, their
// magic, command and payload size are checked before anything is decoded,
// strings in replies are length-checked against the payload, and every
// exchange before the stream ends with the context and takes at most
// [ReplyTimeout]. The stream itself is handed over
// unread: its bytes are the NetTrace reader's to check.
package ipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
)

// Wire constants of ipc-protocol.md.
const (
	headerSize = 20
	// maxMessage is the largest message the 16-bit size field can state.
	maxMessage = 1<<16 - 1

	setEventPipe = 0x02
	setProcess   = 0x04
	setServer    = 0xFF

	cmdStopTracing     = 0x01
	cmdCollectTracing  = 0x02
	cmdCollectTracing2 = 0x03
	cmdProcessInfo     = 0x00
	cmdOK              = 0x00
	cmdError           = 0xFF

	formatNetTrace = 1
)

// magic opens every message: "DOTNET_IPC_V1" and its NUL, 14 bytes.
var magic = [14]byte{'D', 'O', 'T', 'N', 'E', 'T', '_', 'I', 'P', 'C', '_', 'V', '1', 0}

// HRESULTs the diagnostics server answers with (ipc-protocol.md, "Errors").
const (
	EBadEncoding         = 0x80131384
	EUnknownCommand      = 0x80131385
	EUnknownMagic        = 0x80131386
	ENotSupported        = 0x80131515
	EFail                = 0x80004005
	ENotYetAvailable     = 0x8013135b
	ERuntimeUninitalized = 0x80131371
	EInvalidArg          = 0x80070057
)

// hresultNames says what the documented HRESULTs mean.
var hresultNames = map[uint32]string{
	EBadEncoding:         "bad encoding",
	EUnknownCommand:      "unknown command",
	EUnknownMagic:        "unknown magic",
	ENotSupported:        "not supported",
	EFail:                "failure",
	ENotYetAvailable:     "not yet available",
	ERuntimeUninitalized: "runtime not initialized",
	EInvalidArg:          "invalid argument",
}

// Error is the runtime's Server/Error reply to a command.
type Error struct {
	Command string // the command that was refused, e.g. "CollectTracing2"
	HResult uint32
}

func (e *Error) Error() string {
	what := hresultNames[e.HResult]
	if what == "" {
		what = "unknown HRESULT"
	}
	return fmt.Sprintf("the runtime refused %s: error 0x%08X (%s)", e.Command, e.HResult, what)
}

// ProtocolError is a reply that does not follow the protocol.
type ProtocolError struct {
	Msg string
}

func (e *ProtocolError) Error() string { return "diagnostics IPC: " + e.Msg }

func protocolErrorf(format string, args ...any) error {
	return &ProtocolError{Msg: fmt.Sprintf(format, args...)}
}

// header is a message's 20-byte header.
type header struct {
	size     uint16 // of the whole message
	set, cmd uint8
}

// message appends a complete message with payload to b.
func message(set, cmd uint8, payload []byte) ([]byte, error) {
	n := headerSize + len(payload)
	if n > maxMessage {
		return nil, fmt.Errorf("diagnostics IPC: the request is %d bytes, more than the protocol's %d (fewer providers or shorter filter data)", n, maxMessage)
	}
	b := make([]byte, 0, n)
	b = append(b, magic[:]...)
	b = binary.LittleEndian.AppendUint16(b, uint16(n))
	b = append(b, set, cmd, 0, 0)
	return append(b, payload...), nil
}

// readReply reads one message from r: its header, checked, and its
// payload. It never allocates more than the 16-bit size allows.
func readReply(r io.Reader) (header, []byte, error) {
	var hb [headerSize]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		if err == io.EOF {
			return header{}, nil, protocolErrorf("the connection closed before a reply")
		}
		if err == io.ErrUnexpectedEOF {
			return header{}, nil, protocolErrorf("the connection closed inside a reply header")
		}
		return header{}, nil, err
	}
	if !bytes.Equal(hb[:14], magic[:]) {
		return header{}, nil, protocolErrorf("the reply does not start with DOTNET_IPC_V1 (%q)", hb[:14])
	}
	h := header{size: binary.LittleEndian.Uint16(hb[14:]), set: hb[16], cmd: hb[17]}
	if h.size < headerSize {
		return header{}, nil, protocolErrorf("reply size %d is less than its header", h.size)
	}
	payload := make([]byte, int(h.size)-headerSize)
	if _, err := io.ReadFull(r, payload); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return header{}, nil, protocolErrorf("the connection closed inside a reply of %d bytes", h.size)
		}
		return header{}, nil, err
	}
	return h, payload, nil
}

// okPayload checks that a reply to command is Server/OK and returns its
// payload; a Server/Error reply becomes an [*Error].
func okPayload(command string, h header, payload []byte) ([]byte, error) {
	if h.set != setServer {
		return nil, protocolErrorf("reply to %s has command set 0x%02X, not Server (0xFF)", command, h.set)
	}
	switch h.cmd {
	case cmdOK:
		return payload, nil
	case cmdError:
		if len(payload) < 4 {
			return nil, protocolErrorf("error reply to %s has a %d-byte payload, too short for an HRESULT", command, len(payload))
		}
		return nil, &Error{Command: command, HResult: binary.LittleEndian.Uint32(payload)}
	}
	return nil, protocolErrorf("reply to %s has command 0x%02X, neither OK nor Error", command, h.cmd)
}

// sessionID decodes the payload of the OK reply to CollectTracing and
// StopTracing.
func sessionID(command string, payload []byte) (uint64, error) {
	if len(payload) != 8 {
		return 0, protocolErrorf("OK reply to %s has a %d-byte payload, want an 8-byte session id", command, len(payload))
	}
	return binary.LittleEndian.Uint64(payload), nil
}

// appendString appends a protocol string: a uint32 count of UTF-16 code
// units including a terminating NUL, then the units; "" is a zero count.
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

// readBuf decodes a reply payload front to back; a read past its end
// sets err and yields zeros.
type readBuf struct {
	b   []byte
	err error
}

func (r *readBuf) take(n int) []byte {
	if r.err != nil || n > len(r.b) || n < 0 {
		if r.err == nil {
			r.err = errors.New("payload too short")
		}
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *readBuf) uint32() uint32 {
	if v := r.take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (r *readBuf) uint64() uint64 {
	if v := r.take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

// string reads a protocol string. Its count is checked against the bytes
// left before anything is allocated; a missing terminator is tolerated.
func (r *readBuf) string() string {
	n := r.uint32()
	if r.err != nil || n == 0 {
		return ""
	}
	if uint64(n)*2 > uint64(len(r.b)) {
		r.err = fmt.Errorf("string of %d UTF-16 units in %d bytes", n, len(r.b))
		return ""
	}
	v := r.take(int(n) * 2)
	u := make([]uint16, 0, n)
	for i := 0; i < len(v); i += 2 {
		u = append(u, binary.LittleEndian.Uint16(v[i:]))
	}
	if len(u) > 0 && u[len(u)-1] == 0 {
		u = u[:len(u)-1]
	}
	return string(utf16.Decode(u))
}

// ProcessInfo is what the runtime says about its process (ProcessInfo,
// command 0x0400).
type ProcessInfo struct {
	PID           uint64
	RuntimeCookie [16]byte // a GUID unique across PID namespaces
	CommandLine   string
	OS            string
	Arch          string
}

// parseProcessInfo decodes the OK payload of ProcessInfo.
func parseProcessInfo(payload []byte) (ProcessInfo, error) {
	r := readBuf{b: payload}
	var p ProcessInfo
	p.PID = r.uint64()
	copy(p.RuntimeCookie[:], r.take(16))
	p.CommandLine = r.string()
	p.OS = r.string()
	p.Arch = r.string()
	if r.err != nil {
		return ProcessInfo{}, protocolErrorf("ProcessInfo reply: %v", r.err)
	}
	return p, nil
}
