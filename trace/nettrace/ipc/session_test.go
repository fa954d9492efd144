package ipc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"viewer/trace/nettrace/ipc/ipctest"
	"viewer/trace/tracetest"
)

// realTraces returns the shared .nettrace files.
func realTraces(t *testing.T) []string {
	out := tracetest.RealFiles(t, "nettrace", ".nettrace")
	if len(out) < 5 {
		t.Fatalf("only %d .nettrace files in the shared real data", len(out))
	}
	return out
}

// wantProviders is how the stand-in should decode ps.
func wantProviders(ps []Provider) []ipctest.Provider {
	var out []ipctest.Provider
	for _, p := range ps {
		out = append(out, ipctest.Provider{Keywords: p.Keywords, Level: uint32(p.Level), Name: p.Name, FilterData: p.FilterData()})
	}
	return out
}

func equalProviders(a, b []ipctest.Provider) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestStreamRealTraces streams every shared .nettrace through the stand-in
// and checks that the client receives it byte for byte, that the stand-in
// decoded the cpu profile's providers from the CollectTracing2 request,
// and that Stop, sent after the first bytes, names the session and lets
// the stream finish.
func TestStreamRealTraces(t *testing.T) {
	providers, err := Select([]string{"cpu"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range realTraces(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			srv := ipctest.StartTest(t, ipctest.Config{Trace: data, Chunk: 32 << 10, Interval: time.Millisecond, Tail: len(data) / 3})
			s, err := Start(context.Background(), srv.Socket(), Config{Providers: providers})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got bytes.Buffer
			if _, err := io.CopyN(&got, s, int64(min(len(data), 100))); err != nil {
				t.Fatal(err)
			}
			if err := s.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(&got, s); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), data) {
				t.Fatalf("received %d bytes, not the %d of the file", got.Len(), len(data))
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("stand-in got %d requests, want CollectTracing2 and StopTracing: %+v", len(reqs), reqs)
			}
			c := reqs[0]
			if c.Err != nil || c.Set != ipctest.SetEventPipe || c.ID != ipctest.CollectTracing2 || c.BufferMB != DefaultBufferMB || c.Format != 1 || !c.Rundown {
				t.Errorf("start request %+v", c)
			}
			if !equalProviders(c.Providers, wantProviders(providers)) {
				t.Errorf("providers sent %+v, want %+v", c.Providers, wantProviders(providers))
			}
			if c.SessionID != s.ID() {
				t.Errorf("the stand-in started session %#x, the client says %#x", c.SessionID, s.ID())
			}
			if st := reqs[1]; st.Err != nil || st.Set != ipctest.SetEventPipe || st.ID != ipctest.StopTracing || st.SessionID != s.ID() {
				t.Errorf("stop request %+v, want StopTracing of session %#x", st, s.ID())
			}
		})
	}
}

// TestFallbackCollectTracing checks that a runtime that does not know
// CollectTracing2 gets CollectTracing, with the same providers.
func TestFallbackCollectTracing(t *testing.T) {
	data := []byte("Nettrace-stand-in-bytes")
	srv := ipctest.StartTest(t, ipctest.Config{Trace: data, Refuse: []uint16{ipctest.SetEventPipe<<8 | ipctest.CollectTracing2}})
	ps := []Provider{{Name: "MyEventSource", Keywords: 0x64, Level: LevelWarning, Args: []Arg{{"EventCounterIntervalSec", "1"}, {"Filter", "a=b;c"}}}}
	s, err := Start(context.Background(), srv.Socket(), Config{Providers: ps, BufferMB: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(s)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("stream %q, %v", got, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].ID != ipctest.CollectTracing2 || reqs[1].ID != ipctest.CollectTracing || reqs[2].ID != ipctest.StopTracing {
		t.Fatalf("requests %+v, want CollectTracing2 (refused), CollectTracing, StopTracing", reqs)
	}
	c := reqs[1]
	if c.Err != nil || c.BufferMB != 10 || !equalProviders(c.Providers, wantProviders(ps)) {
		t.Errorf("CollectTracing decoded as %+v", c)
	}
	if want := `EventCounterIntervalSec=1;Filter="a=b;c"`; c.Providers[0].FilterData != want {
		t.Errorf("filter data %q, want %q", c.Providers[0].FilterData, want)
	}
}

// TestErrorReply checks that an error reply names the command, the
// HRESULT and its meaning.
func TestErrorReply(t *testing.T) {
	srv := ipctest.StartTest(t, ipctest.Config{Trace: []byte("x"), HResult: ENotSupported})
	_, err := Start(context.Background(), srv.Socket(), Config{Providers: []Provider{{Name: RuntimeProvider}}})
	var e *Error
	if !errors.As(err, &e) || e.HResult != ENotSupported {
		t.Fatalf("error %v, want an *Error with 0x80131515", err)
	}
	for _, want := range []string{"CollectTracing2", "0x80131515", "not supported"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestCloseDisconnects checks that the stand-in sees the client hang up
// when it closes the session without stopping it, and ends the session.
func TestCloseDisconnects(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<14)
	srv := ipctest.StartTest(t, ipctest.Config{Trace: data, Chunk: 1024, Interval: 5 * time.Millisecond})
	s, err := Start(context.Background(), srv.Socket(), Config{Providers: []Provider{{Name: SampleProfilerProvider}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(s, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Disconnected():
		t.Fatal("disconnect seen before Close")
	default:
	}
	s.Close()
	select {
	case <-srv.Disconnected():
	case <-time.After(10 * time.Second):
		t.Fatal("the stand-in did not see the client disconnect")
	}
	<-srv.Ended()
	if n := srv.Active(); n != 0 {
		t.Errorf("%d sessions still active", n)
	}
}

// TestStopTwice checks that a second Stop sends nothing.
func TestStopTwice(t *testing.T) {
	srv := ipctest.StartTest(t, ipctest.Config{Trace: []byte("abc")})
	s, err := Start(context.Background(), srv.Socket(), Config{Providers: []Provider{{Name: RuntimeProvider}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 {
		if err := s.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	io.ReadAll(s)
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// TestProcessInfo asks the stand-in for its process's information.
func TestProcessInfo(t *testing.T) {
	srv := ipctest.StartTest(t, ipctest.Config{PID: 4242, CommandLine: "/usr/bin/dotnet app.dll --port 5000"})
	p, err := QueryProcessInfo(context.Background(), srv.Socket())
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != 4242 || p.CommandLine != "/usr/bin/dotnet app.dll --port 5000" || p.OS != "Linux" || p.Arch != "x64" {
		t.Errorf("process info %+v", p)
	}
}

// BenchmarkStream measures how fast a session's stream is read from the
// stand-in, in bytes per second: the start, 32 MiB and the stop.
func BenchmarkStream(b *testing.B) {
	data := bytes.Repeat([]byte("nettrace"), 4<<20)
	srv := ipctest.StartTest(b, ipctest.Config{Trace: data, Chunk: 256 << 10})
	buf := make([]byte, 256<<10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		s, err := Start(context.Background(), srv.Socket(), Config{Providers: []Provider{{Name: RuntimeProvider}}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(s, buf[:1]); err != nil {
			b.Fatal(err)
		}
		if err := s.Stop(context.Background()); err != nil {
			b.Fatal(err)
		}
		n, err := io.CopyBuffer(io.Discard, s, buf)
		if err != nil || n != int64(len(data))-1 {
			b.Fatalf("%d bytes, %v", n, err)
		}
		s.Close()
	}
}
