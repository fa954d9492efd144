package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"viewer/trace/export"
	"viewer/trace/nettrace/ipc"
	"viewer/trace/nettrace/ipc/ipctest"
	"viewer/trace/tracetest"
	"viewer/ui"
	"viewer/web"
)

// sharedNetTraces returns the shared .nettrace files.
func sharedNetTraces(t *testing.T) []string {
	out := tracetest.RealFiles(t, "nettrace", ".nettrace")
	if len(out) < 5 {
		t.Fatalf("only %d shared .nettrace files", len(out))
	}
	return out
}

func runCapture(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	err = run(ctx, args, &o, &e)
	return o.String(), e.String(), err
}

// statsJSON returns `viewer stats --json FILE`.
func statsJSON(t *testing.T, file string) string {
	t.Helper()
	out, errOut, err := runCapture(context.Background(), "stats", "--json", file)
	if err != nil {
		t.Fatalf("stats %s: %v\n%s", file, err, errOut)
	}
	return out
}

// checkStopped checks that the stand-in has no session left and saw one
// StopTracing, of the session the CollectTracing2 started, with the cpu
// profile's providers.
func checkStopped(t *testing.T, srv *ipctest.Server, profile string) {
	t.Helper()
	if n := srv.Active(); n != 0 {
		t.Errorf("%d sessions still running in the stand-in", n)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].ID != ipctest.CollectTracing2 || reqs[1].ID != ipctest.StopTracing {
		t.Fatalf("requests %+v, want CollectTracing2 then StopTracing", reqs)
	}
	if reqs[1].SessionID != reqs[0].SessionID {
		t.Errorf("StopTracing of session %#x, the session started was %#x", reqs[1].SessionID, reqs[0].SessionID)
	}
	want, _ := ipc.Select([]string{profile}, nil)
	got := reqs[0].Providers
	if len(got) != len(want) {
		t.Fatalf("providers %+v, want the %s profile's %v", got, profile, want)
	}
	for i, p := range want {
		if got[i].Name != p.Name || got[i].Keywords != p.Keywords || got[i].Level != uint32(p.Level) || got[i].FilterData != "" {
			t.Errorf("provider %d: %+v, want %v", i, got[i], p)
		}
	}
}

// TestAttachRealTraces attaches with --output and --duration to a stand-in
// streaming each shared .nettrace, slowly enough that the duration ends
// mid-stream: the file written equals the source, `viewer stats` of both
// agree, and the session was stopped with StopTracing.
func TestAttachRealTraces(t *testing.T) {
	t.Parallel()
	for _, src := range sharedNetTraces(t) {
		t.Run(filepath.Base(src), func(t *testing.T) {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			srv := ipctest.StartTest(t, ipctest.Config{Trace: data, Chunk: 16 << 10, Interval: 2 * time.Millisecond, Tail: len(data) / 4})
			out := filepath.Join(t.TempDir(), "out.nettrace")
			_, errOut, err := runCapture(context.Background(), "attach", "--socket", srv.Socket(), "--output", out, "--duration", "30ms", "--profile", "exceptions")
			if err != nil {
				t.Fatalf("attach: %v\n%s", err, errOut)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("wrote %d bytes, not the source's %d", len(got), len(data))
			}
			if left, _ := os.ReadDir(filepath.Dir(out)); len(left) != 1 {
				t.Errorf("the output directory holds %v, want only the output", left)
			}
			if a, b := statsJSON(t, out), statsJSON(t, src); a != b {
				t.Errorf("stats differ:\n%s\nsource:\n%s", a, b)
			}
			checkStopped(t, srv, "exceptions")
			if !strings.Contains(errOut, "after 30ms") {
				t.Errorf("stderr does not say the duration stopped it:\n%s", errOut)
			}
		})
	}
}

// TestAttachDiesMidStream has the stand-in close the stream half way:
// attach fails saying the trace is truncated, the file holds the bytes
// received (a prefix of the source), and `viewer stats` on it reports the
// reader's truncation notice.
func TestAttachDiesMidStream(t *testing.T) {
	t.Parallel()
	src := filepath.Join(tracetest.RealData(t, "nettrace"), "perfview", "only_managed_samples.nettrace")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	cut := len(data) / 2
	srv := ipctest.StartTest(t, ipctest.Config{Trace: data, Chunk: 8 << 10, Interval: time.Millisecond, DieAfter: cut})
	out := filepath.Join(t.TempDir(), "cut.nettrace")
	_, errOut, attachErr := runCapture(context.Background(), "attach", "--socket", srv.Socket(), "--output", out)
	if attachErr == nil || !strings.Contains(attachErr.Error(), "truncated at byte") || !strings.Contains(attachErr.Error(), out) {
		t.Fatalf("attach: %v, want an error saying the trace is truncated and where it is\n%s", attachErr, errOut)
	}
	t.Logf("attach: %v", attachErr)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != cut || !bytes.Equal(got, data[:cut]) {
		t.Fatalf("file of %d bytes, want the source's first %d", len(got), cut)
	}
	var st export.Stats
	if err := json.Unmarshal([]byte(statsJSON(t, out)), &st); err != nil {
		t.Fatal(err)
	}
	if !st.Truncated || st.TruncatedAt <= 0 || st.TruncatedAt > int64(cut) || st.Error == "" || st.Events == 0 {
		t.Errorf("stats of the cut trace: truncated %v at %d, %q, %d events", st.Truncated, st.TruncatedAt, st.Error, st.Events)
	}
	if !strings.Contains(attachErr.Error(), st.Error) {
		t.Errorf("attach's error %q does not carry the reader's notice %q", attachErr, st.Error)
	}
	if n := srv.Active(); n != 0 {
		t.Errorf("%d sessions still running", n)
	}
}

// TestAttachErrorReply checks that a refused session gives a clear error
// and leaves no file behind.
func TestAttachErrorReply(t *testing.T) {
	t.Parallel()
	srv := ipctest.StartTest(t, ipctest.Config{Trace: []byte("x"), HResult: ipc.ENotSupported})
	dir := t.TempDir()
	_, _, err := runCapture(context.Background(), "attach", "--socket", srv.Socket(), "--output", filepath.Join(dir, "x.nettrace"))
	if err == nil || !strings.Contains(err.Error(), "refused CollectTracing2: error 0x80131515 (not supported)") {
		t.Fatalf("error %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left %v behind", left)
	}
}

// TestAttachInterrupted ends the context (Ctrl-C) mid-stream: attach stops
// the session, waits for the rest of the stream and writes all of it.
func TestAttachInterrupted(t *testing.T) {
	t.Parallel()
	src := filepath.Join(tracetest.RealData(t, "nettrace"), "msperftools", "HelloWorld_GC_Threads_Exception.nettrace")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	srv := ipctest.StartTest(t, ipctest.Config{Trace: data, Chunk: 1 << 10, Interval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for srv.Sent() < 4<<10 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	out := filepath.Join(t.TempDir(), "out.nettrace")
	_, errOut, err := runCapture(ctx, "attach", "--socket", srv.Socket(), "--output", out)
	if err != nil {
		t.Fatalf("attach: %v\n%s", err, errOut)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, data) {
		t.Errorf("wrote %d bytes, want the source's %d", len(got), len(data))
	}
	if srv.Sent() != int64(len(data)) {
		t.Errorf("stand-in sent %d bytes", srv.Sent())
	}
	checkStopped(t, srv, "cpu")
	if !strings.Contains(errOut, "interrupted") {
		t.Errorf("stderr does not say it was interrupted:\n%s", errOut)
	}
}

// closedPort returns a local port nothing listens on.
func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// TestAttachLibrary attaches without --output: with no viewer serving,
// the trace goes into the library in --data; with one, to that viewer.
// Either way attach prints the id and the trace's URL, and the stored
// trace is the stream's bytes.
func TestAttachLibrary(t *testing.T) {
	t.Parallel()
	src := filepath.Join(tracetest.RealData(t, "nettrace"), "perfview", "mixed_managed_external_samples.nettrace")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(t *testing.T, out string, port int) uuid.UUID {
		t.Helper()
		f := strings.Fields(out)
		if len(f) != 2 {
			t.Fatalf("stdout %q, want ID URL", out)
		}
		id, err := uuid.Parse(f[0])
		if err != nil || f[1] != "http://127.0.0.1:"+strconv.Itoa(port)+"/t/"+id.String() {
			t.Fatalf("stdout %q", out)
		}
		return id
	}

	t.Run("library", func(t *testing.T) {
		srv := ipctest.StartTest(t, ipctest.Config{Trace: data, Chunk: 64 << 10, PID: 4242})
		dataDir := t.TempDir()
		port := closedPort(t)
		out, errOut, err := runCapture(context.Background(), "attach", "--socket", srv.Socket(), "--duration", "1ms", "--data", dataDir, "--port", strconv.Itoa(port))
		if err != nil {
			t.Fatalf("attach: %v\n%s", err, errOut)
		}
		id := parse(t, out, port)
		lib, err := web.OpenLibrary(dataDir, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		e, ok := lib.Get(id)
		if !ok || e.Size != int64(len(data)) || e.Format != "nettrace" || !strings.HasSuffix(e.Name, ".nettrace") {
			t.Fatalf("library entry %+v, %v", e, ok)
		}
		f, err := lib.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if got, _ := io.ReadAll(f); !bytes.Equal(got, data) {
			t.Errorf("stored %d bytes, not the stream's %d", len(got), len(data))
		}
	})

	t.Run("refused", func(t *testing.T) {
		srv := ipctest.StartTest(t, ipctest.Config{Trace: data, Chunk: 64 << 10})
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", http.StatusUnauthorized)
		}))
		defer hs.Close()
		port := hs.Listener.Addr().(*net.TCPAddr).Port
		_, errOut, err := runCapture(context.Background(), "attach", "--socket", srv.Socket(), "--duration", "1ms", "--port", strconv.Itoa(port))
		_, kept, ok := strings.Cut(fmt.Sprint(err), "; it is in ")
		if !ok {
			t.Fatalf("attach: %v, want an error naming where the trace was kept\n%s", err, errOut)
		}
		defer os.Remove(kept)
		if got, _ := os.ReadFile(kept); !bytes.Equal(got, data) {
			t.Errorf("kept %d bytes in %s, want the stream's %d", len(got), kept, len(data))
		}
	})

	t.Run("viewer", func(t *testing.T) {
		srv := ipctest.StartTest(t, ipctest.Config{Trace: data, Chunk: 64 << 10})
		s, err := web.New(web.Config{
			DataDir: t.TempDir(), Formats: formats(), Symbols: symbolSource, Static: ui.Static(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		defer func() { s.CloseSessions(); hs.Close(); s.Close() }()
		port := hs.Listener.Addr().(*net.TCPAddr).Port
		out, errOut, err := runCapture(context.Background(), "attach", "--socket", srv.Socket(), "--duration", "1ms", "--data", t.TempDir(), "--port", strconv.Itoa(port))
		if err != nil {
			t.Fatalf("attach: %v\n%s", err, errOut)
		}
		id := parse(t, out, port)
		resp, err := http.Get(hs.URL + "/api/traces/" + id.String())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e web.Entry
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusOK || e.Size != int64(len(data)) {
			t.Fatalf("the viewer's entry: %s %+v %v", resp.Status, e, err)
		}
	})
}

// TestAttachArgs checks the command line's refusals.
func TestAttachArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "one PID"},
		{[]string{"abc"}, "not a process id"},
		{[]string{"--socket", "/nonexistent", "--profile", "nope"}, "unknown profile"},
		{[]string{"--socket", "/nonexistent", "--providers", "P:zz"}, "not a hex number"},
		{[]string{"--dir", "/nonexistent-dir", "1"}, "no such file"},
		{[]string{"--socket", "/nonexistent", "--output", "/nonexistent-dir/x"}, "no such file"},
	} {
		_, _, err := runCapture(context.Background(), append([]string{"attach"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("attach %q: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestAttachProviders checks that --providers and --profile reach the
// runtime as the stand-in decodes them, a quoted value keeping its comma.
func TestAttachProviders(t *testing.T) {
	t.Parallel()
	srv := ipctest.StartTest(t, ipctest.Config{Trace: []byte("not a trace")})
	_, _, err := runCapture(context.Background(), "attach", "--socket", srv.Socket(), "--output", filepath.Join(t.TempDir(), "x"),
		"--duration", "1ms", "--profile", "gc,contention", "--providers", `MyEventSource:0x10:5:a="x,y;z",Other::warning`, "--buffer", "64")
	if err == nil || !strings.Contains(err.Error(), "does not read") {
		t.Fatalf("attach: %v, want it to say the bytes are not a trace", err)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 || reqs[0].BufferMB != 64 {
		t.Fatalf("requests %+v", reqs)
	}
	want := []ipctest.Provider{
		{Keywords: ipc.KeywordGC | ipc.KeywordContention, Level: 5, Name: ipc.RuntimeProvider},
		{Keywords: 0x10, Level: 5, Name: "MyEventSource", FilterData: `a="x,y;z"`},
		{Level: 3, Name: "Other"},
	}
	if got := reqs[0].Providers; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("providers %+v, want %+v", got, want)
	}
}
