package ipc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"viewer/trace/nettrace/ipc/ipctest"
	"viewer/trace/tracetest"
)

func rawReply(set, cmd uint8, payload []byte) []byte {
	b := append([]byte("DOTNET_IPC_V1\x00"), 0, 0, set, cmd, 0, 0)
	binary.LittleEndian.PutUint16(b[14:], uint16(len(b)+len(payload)))
	return append(b, payload...)
}

// hostile serves one reply per connection on a socket: whatever answer
// writes, after reading the request.
func hostile(t *testing.T, answer func(c net.Conn)) string {
	t.Helper()
	sock := filepath.Join(ipctest.TempDir(t), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				h := make([]byte, 20)
				io.ReadFull(c, h)
				io.ReadFull(c, make([]byte, int(binary.LittleEndian.Uint16(h[14:]))-20))
				answer(c)
			}()
		}
	}()
	return sock
}

// TestHostileReplies checks that replies which break the protocol give
// errors that say how, and that a server that never answers is given up
// on when the context ends.
func TestHostileReplies(t *testing.T) {
	cfg := Config{Providers: []Provider{{Name: RuntimeProvider}}}
	cases := []struct {
		name  string
		reply []byte
		want  string
	}{
		{"bad magic", append([]byte("DOTNET_IPC_V2\x00\x1c\x00\xff\x00\x00\x00"), make([]byte, 8)...), "DOTNET_IPC_V1"},
		{"size below header", []byte("DOTNET_IPC_V1\x00\x05\x00\xff\x00\x00\x00"), "less than its header"},
		{"short payload", rawReply(0xFF, 0, []byte{1, 2, 3}), "8-byte session id"},
		{"cut payload", rawReply(0xFF, 0, make([]byte, 8))[:25], "closed inside a reply of 28 bytes"},
		{"cut header", rawReply(0xFF, 0, nil)[:10], "inside a reply header"},
		{"nothing", nil, "closed before a reply"},
		{"other command set", rawReply(0x02, 0, make([]byte, 8)), "command set 0x02"},
		{"other command", rawReply(0xFF, 7, make([]byte, 8)), "command 0x07"},
		{"error without hresult", rawReply(0xFF, 0xFF, []byte{1}), "too short for an HRESULT"},
		{"unknown hresult", rawReply(0xFF, 0xFF, []byte{1, 0, 0, 0x80}), "0x80000001 (unknown HRESULT)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sock := hostile(t, func(conn net.Conn) { conn.Write(c.reply) })
			_, err := Start(context.Background(), sock, cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	t.Run("silent", func(t *testing.T) {
		sock := hostile(t, func(conn net.Conn) { time.Sleep(10 * time.Second) })
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := Start(ctx, sock, cfg)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v, want the context's deadline", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("gave up after %v", d)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		sock := hostile(t, func(conn net.Conn) { time.Sleep(10 * time.Second) })
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		if _, err := Start(ctx, sock, cfg); !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
	})
}

// FuzzReply feeds arbitrary bytes to the reply decoder and the payload
// decoders behind it: no panic, a payload exactly as long as the header
// says, never more than the protocol's 64 KiB, and errors of the
// package's kinds.
func FuzzReply(f *testing.F) {
	f.Add(rawReply(0xFF, 0, make([]byte, 8)))
	f.Add(rawReply(0xFF, 0xFF, binary.LittleEndian.AppendUint32(nil, EUnknownCommand)))
	info := binary.LittleEndian.AppendUint64(nil, 42)
	info = append(info, make([]byte, 16)...)
	info = appendString(appendString(appendString(info, "/usr/bin/dotnet app.dll"), "Linux"), "x64")
	f.Add(rawReply(0xFF, 0, info))
	f.Add([]byte("DOTNET_IPC_V1\x00\xff\xff\xff\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		h, payload, err := readReply(r)
		if err != nil {
			if _, ok := errors.AsType[*ProtocolError](err); !ok {
				t.Fatalf("readReply: %v is not a *ProtocolError", err)
			}
			return
		}
		if len(payload) != int(h.size)-headerSize || len(b)-r.Len() != int(h.size) {
			t.Fatalf("size %d, payload %d, read %d", h.size, len(payload), len(b)-r.Len())
		}
		p, err := okPayload("X", h, payload)
		if err != nil {
			_, pe := errors.AsType[*ProtocolError](err)
			_, ee := errors.AsType[*Error](err)
			if !pe && !ee {
				t.Fatalf("okPayload: %v", err)
			}
			return
		}
		if _, err := sessionID("X", p); err != nil && len(p) == 8 {
			t.Fatalf("8-byte payload refused: %v", err)
		}
		pi, err := parseProcessInfo(p)
		if err == nil && len(pi.CommandLine)+len(pi.OS)+len(pi.Arch) > 3*len(p) {
			t.Fatalf("strings longer than their payload")
		}
	})
}

// TestParseProvider checks dotnet-trace's --providers syntax.
func TestParseProvider(t *testing.T) {
	cases := []struct {
		in   string
		want Provider
		err  string
	}{
		{"MyEventSource", Provider{Name: "MyEventSource", Level: LevelInformational}, ""},
		{"Microsoft-Windows-DotNETRuntime:0x8000:2", Provider{Name: RuntimeProvider, Keywords: 0x8000, Level: LevelError}, ""},
		{"P:ff", Provider{Name: "P", Keywords: 0xff, Level: LevelInformational}, ""},
		{"P::verbose", Provider{Name: "P", Level: LevelVerbose}, ""},
		{"P::9", Provider{Name: "P", Level: LevelVerbose}, ""},
		{"P:1:Warning:EventCounterIntervalSec=1", Provider{Name: "P", Keywords: 1, Level: LevelWarning, Args: []Arg{{"EventCounterIntervalSec", "1"}}}, ""},
		{`P:0:5:a=1;b="x;y=z";c=`, Provider{Name: "P", Level: LevelVerbose, Args: []Arg{{"a", "1"}, {"b", "x;y=z"}, {"c", ""}}}, ""},
		{"P:0:5:a=1;", Provider{Name: "P", Level: LevelVerbose, Args: []Arg{{"a", "1"}}}, ""},
		{"P:0:5:k:v=w", Provider{Name: "P", Level: LevelVerbose, Args: []Arg{{"k:v", "w"}}}, ""},
		{"", Provider{}, "no name"},
		{"P:xyz", Provider{}, "not a hex number"},
		{"P:1:loud", Provider{}, "unknown event level"},
		{"P:1:4:novalue", Provider{}, "has no '='"},
		{`P:1:4:a="b`, Provider{}, "unterminated quote"},
	}
	for _, c := range cases {
		got, err := ParseProvider(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got.String() != c.want.String() {
			t.Errorf("%q: %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		// String writes what ParseProvider reads back.
		again, err := ParseProvider(got.String())
		if err != nil || again.String() != got.String() {
			t.Errorf("%q: round trip %q gives %+v, %v", c.in, got.String(), again, err)
		}
	}
}

// TestSelect checks how profiles and --providers combine.
func TestSelect(t *testing.T) {
	got, err := Select([]string{"gc", "exceptions", "CPU"}, []Provider{{Name: "MyEventSource", Level: LevelVerbose}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Provider{
		{Name: RuntimeProvider, Keywords: KeywordGC | KeywordException | KeywordsDefault, Level: LevelVerbose},
		{Name: SampleProfilerProvider, Level: LevelInformational},
		{Name: "MyEventSource", Level: LevelVerbose},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i].String() {
			t.Errorf("provider %d: %v, want %v", i, got[i], want[i])
		}
	}
	over, _ := Select([]string{"cpu"}, []Provider{{Name: "microsoft-windows-dotnetruntime", Keywords: 1, Level: LevelError}})
	if len(over) != 2 || over[1].Keywords != 1 || over[1].Level != LevelError {
		t.Errorf("--providers did not replace the profile's provider: %v", over)
	}
	if _, err := Select([]string{"nope"}, nil); err == nil || !strings.Contains(err.Error(), "cpu, gc, exceptions, contention") {
		t.Errorf("unknown profile: %v", err)
	}
}

// TestKeywordsManifest checks the keyword constants against the runtime's
// event manifest (ClrEtwAll.man in the shared real data), and
// KeywordsDefault against the value dotnet-trace's cpu-sampling profile
// sends.
func TestKeywordsManifest(t *testing.T) {
	if KeywordsDefault != 0x14C14FCCBD {
		t.Errorf("KeywordsDefault = %#x, want 0x14C14FCCBD", KeywordsDefault)
	}
	ours := map[string]uint64{
		"GCKeyword": KeywordGC, "GCHandleKeyword": KeywordGCHandle, "AssemblyLoaderKeyword": KeywordAssemblyLoader,
		"LoaderKeyword": KeywordLoader, "JitKeyword": KeywordJit, "NGenKeyword": KeywordNGen,
		"EndEnumerationKeyword": KeywordEndEnumeration, "SecurityKeyword": KeywordSecurity,
		"AppDomainResourceManagementKeyword": KeywordAppDomainResourceMgmt, "ContentionKeyword": KeywordContention,
		"ExceptionKeyword": KeywordException, "ThreadingKeyword": KeywordThreading,
		"JittedMethodILToNativeMapKeyword":     KeywordJittedMethodILToNativeMap,
		"OverrideAndSuppressNGenEventsKeyword": KeywordOverrideAndSuppressNGen, "TypeKeyword": KeywordType,
		"GCHeapSurvivalAndMovementKeyword": KeywordGCHeapSurvivalAndMovement,
		"GCHeapAndTypeNamesKeyword":        KeywordGCHeapAndTypeNames, "StackKeyword": KeywordStack,
		"ThreadTransferKeyword": KeywordThreadTransfer, "CodeSymbolsKeyword": KeywordCodeSymbols,
		"CompilationKeyword": KeywordCompilation,
	}
	man, err := os.ReadFile(filepath.Join(tracetest.RealData(t, "nettrace"), "schemas", "ClrEtwAll.runtime.man"))
	if err != nil {
		t.Fatal(err)
	}
	// The runtime provider's keywords come first in the manifest, before
	// the rundown provider's (which reuse some names with other masks).
	runtime, _, _ := strings.Cut(string(man), "Microsoft-Windows-DotNETRuntimeRundown")
	masks := map[string]uint64{}
	for _, m := range regexp.MustCompile(`<keyword name="(\w+)" mask="0x([0-9a-fA-F]+)"`).FindAllStringSubmatch(runtime, -1) {
		v, err := strconv.ParseUint(m[2], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := masks[m[1]]; !dup {
			masks[m[1]] = v
		}
	}
	if len(masks) < 30 {
		t.Fatalf("found only %d runtime keywords in the manifest", len(masks))
	}
	for name, v := range ours {
		if masks[name] != v {
			t.Errorf("%s: ours %#x, the manifest's %#x", name, v, masks[name])
		}
	}
	for _, p := range Profiles() {
		for _, pr := range p.Providers {
			if pr.Name != RuntimeProvider {
				continue
			}
			rest := pr.Keywords
			for _, v := range masks {
				rest &^= v
			}
			if rest != 0 {
				t.Errorf("profile %s: keywords %#x hold bits %#x the manifest does not name", p.Name, pr.Keywords, rest)
			}
		}
	}
}

// TestProcesses checks that a stand-in socket with this process's pid is
// listed, with the command line /proc gives, and the newest socket of a
// pid wins, and that sockets of a pid that does not exist, and files
// that are not sockets, are not listed.
func TestProcesses(t *testing.T) {
	dir := ipctest.TempDir(t)
	old := ipctest.StartTest(t, ipctest.Config{Dir: dir, Key: 100})
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old.Socket(), past, past); err != nil {
		t.Fatal(err)
	}
	srv := ipctest.StartTest(t, ipctest.Config{Dir: dir, Key: 200})
	const noPID = 1 << 30 // above the kernel's pid_max
	ipctest.StartTest(t, ipctest.Config{Dir: dir, PID: noPID})
	os.WriteFile(filepath.Join(dir, "dotnet-diagnostic-1-5-socket"), nil, 0o600) // pid 1 lives, but this is no socket
	ps, err := Processes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].PID != os.Getpid() || ps[0].Socket != srv.Socket() {
		t.Fatalf("Processes = %+v, want only pid %d at %s", ps, os.Getpid(), srv.Socket())
	}
	exe, _ := os.Executable()
	if !strings.HasPrefix(ps[0].CommandLine, os.Args[0]) || !strings.Contains(ps[0].CommandLine, filepath.Base(exe)) {
		t.Errorf("command line %q, want this test binary's", ps[0].CommandLine)
	}
	if p, err := Find(dir, os.Getpid()); err != nil || p.Socket != srv.Socket() {
		t.Errorf("Find: %+v, %v", p, err)
	}
	if _, err := Find(dir, noPID); err == nil || !strings.Contains(err.Error(), "no process") {
		t.Errorf("Find of a dead pid: %v", err)
	}
	if _, err := Find(dir, 1); err == nil || !strings.Contains(err.Error(), "no diagnostics socket") {
		t.Errorf("Find of a pid without a socket: %v", err)
	}
	for _, name := range []string{"dotnet-diagnostic-12-34-socket", "dotnet-diagnostic-12-socket", "dotnet-diagnostic--1-socket", "dotnet-diagnostic-0-1-socket", "dotnet-diagnostic-1-x-socket", "dotnet-diagnostic-99999999999999999999-1-socket"} {
		_, ok := socketPID(name)
		if ok != (name == "dotnet-diagnostic-12-34-socket") {
			t.Errorf("socketPID(%q) ok = %v", name, ok)
		}
	}
}
