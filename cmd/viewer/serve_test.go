package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"viewer/render/wire"
	"viewer/trace"
	"viewer/trace/tracetest"
	"viewer/ui"
	"viewer/web"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeCommand starts `viewer serve --port 0`, fetches the library
// page from the URL it prints, and stops it as Ctrl-C would.
func TestServeCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--port", "0", "--data", t.TempDir()}, &stdout, &stderr)
	}()
	re := regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
	deadline := time.Now().Add(10 * time.Second)
	var base string
	for base == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no URL printed; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v; stderr %q", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		base = re.FindString(stdout.String())
	}
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`id="traces"`)) {
		t.Errorf("library page: %d %.200s", resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestServeBadPort(t *testing.T) {
	t.Setenv("VIEWER_PORT", "http")
	err := run(context.Background(), []string{"serve", "--data", t.TempDir()}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "VIEWER_PORT") {
		t.Errorf("err = %v", err)
	}
}

// maxRealUpload bounds the real traces the web test uploads.
const maxRealUpload = 12 << 20

// TestServeRealTraces uploads every real trace input (traceInputs) of up
// to maxRealUpload bytes, each of which a registered format must
// recognize, checks that each appears in the library, that a viewport
// over its whole span arrives over the websocket and decodes to as many
// events as the trace's statistics count, and that the same viewport
// yields the same frame after a restart on the same data directory.
// Every registered format must be exercised by at least one real file.
func TestServeRealTraces(t *testing.T) {
	t.Parallel()
	var files []string
	for _, sub := range []string{"cpel", "nettrace", "perf"} {
		dir := tracetest.RealData(t, sub)
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				files = append(files, p)
			}
			return nil
		})
	}
	var picked []string
	byFormat := map[string]int{}
	for _, p := range files {
		if !traceInputs[filepath.Ext(p)] {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		format, err := trace.Sniff(f, st.Size(), formats())
		f.Close()
		if err != nil {
			t.Errorf("%s: no registered format recognizes it: %v", p, err)
			continue
		}
		if st.Size() > maxRealUpload {
			continue
		}
		picked = append(picked, p)
		byFormat[format.Name()]++
	}
	for _, f := range formats() {
		if byFormat[f.Name()] == 0 {
			t.Errorf("no real trace of format %s to upload", f.Name())
		}
	}
	if len(picked) == 0 {
		t.Fatal("no real trace to upload")
	}

	dataDir := t.TempDir()
	hs, stop := startServer(t, dataDir)
	frames := map[string][]byte{} // by trace id
	ids := map[string]string{}    // file → id
	for _, p := range picked {
		id, err := uploadFile(hs.URL, p)
		if err != nil {
			t.Error(err)
			continue
		}
		ids[p] = id
	}
	var list []web.TraceInfo
	getJSON(t, hs.URL+"/api/traces", &list)
	if len(list) == 0 {
		t.Fatal("library is empty after uploads")
	}
	for p, id := range ids {
		info := waitIndexed(t, hs.URL, id)
		if info.State != web.StateReady {
			t.Errorf("%s: %s: %s", p, info.State, info.Error)
			continue
		}
		f := viewport(t, hs.URL, id, info.Stats.FirstNS, info.Stats.LastNS+1)
		var n int64
		for _, tr := range f.Reply.Tracks {
			for _, c := range tr.Count {
				n += int64(c)
			}
		}
		tracks := 0
		if info.Stats.Events > 0 {
			tracks = len(f.Reply.Tracks)
		}
		t.Logf("%s: %s, %d events, %d tracks drawn", filepath.Base(p), info.Format, info.Stats.Events, tracks)
		if n != info.Stats.Events {
			t.Errorf("%s: the whole span draws %d events, stats count %d", p, n, info.Stats.Events)
		}
		f.Reply.Micros = 0
		frames[id] = wire.AppendReply(nil, 0, f.Reply)
	}
	stop()

	hs, stop = startServer(t, dataDir)
	defer stop()
	for p, id := range ids {
		want, ok := frames[id]
		if !ok {
			continue
		}
		info := waitIndexed(t, hs.URL, id)
		f := viewport(t, hs.URL, id, info.Stats.FirstNS, info.Stats.LastNS+1)
		f.Reply.Micros = 0
		if got := wire.AppendReply(nil, 0, f.Reply); !bytes.Equal(got, want) {
			t.Errorf("%s: a different frame after a restart", p)
		}
	}
}

// startServer starts the web server with the registered formats on a
// data directory; stop closes it.
func startServer(t *testing.T, dataDir string) (hs *httptest.Server, stop func()) {
	t.Helper()
	return startServerWith(t, dataDir, maxRealUpload)
}

// startServerWith is startServer with an upload limit of maxUpload bytes.
func startServerWith(t *testing.T, dataDir string, maxUpload int64) (hs *httptest.Server, stop func()) {
	t.Helper()
	s, err := web.New(web.Config{
		DataDir: dataDir, Formats: formats(), Symbols: symbolSource, Static: ui.Static(),
		MaxUpload: maxUpload, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	hs = httptest.NewServer(s.Handler())
	return hs, func() {
		s.CloseSessions()
		hs.Close()
		s.Close()
	}
}

// TestServeDamagedUploads uploads damaged copies of real traces of every
// format (cut short, bytes and bits changed): each is refused with a 4xx
// and a message, or stored and then indexed or failed with an error, and
// the server keeps serving: afterwards a good trace uploads and draws.
func TestServeDamagedUploads(t *testing.T) {
	root := tracetest.RealData(t, "")
	sources := []string{
		"nettrace/perfview/only_managed_samples.nettrace",
		"nettrace/perfview/eventpipe-dotnetcore2.1-linux-x64-tracelogging.netperf",
		"cpel/vpp_rich.cpel",
		"cpel/vpp_rich.elog",
		"perf/local-recordings/sched-zstd.data",
		"perf/LinuxTracepoints/TestOutput/pipe.data",
	}
	hs, stop := startServer(t, t.TempDir())
	defer stop()
	rng := rand.New(rand.NewPCG(9, 9))
	upload := func(name string, data []byte) (int, string, string) {
		resp, err := http.Post(hs.URL+"/api/traces?name="+name, "application/octet-stream", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct{ ID, Error string }
		json.NewDecoder(resp.Body).Decode(&r)
		return resp.StatusCode, r.ID, r.Error
	}
	stored, refused := 0, 0
	for _, src := range sources {
		data, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		var damaged [][]byte
		for _, cut := range []int{len(data) / 3, len(data) * 2 / 3, len(data) - 1} {
			damaged = append(damaged, data[:cut])
		}
		for range 6 {
			b := bytes.Clone(data)
			for range 1 + rng.IntN(8) {
				b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
			}
			damaged = append(damaged, b)
		}
		for i, b := range damaged {
			code, id, msg := upload(fmt.Sprintf("damaged-%d-%s", i, filepath.Base(src)), b)
			switch {
			case code >= 400 && code < 500 && msg != "":
				refused++
			case code == 200 || code == 201:
				stored++
				if info := waitIndexed(t, hs.URL, id); info.State == web.StateFailed && info.Error == "" {
					t.Errorf("%s copy %d: failed without a message", src, i)
				}
			default:
				t.Errorf("%s copy %d: status %d, message %q", src, i, code, msg)
			}
		}
	}
	t.Logf("%d damaged uploads stored (shown with what is readable), %d refused with a message", stored, refused)
	good, err := os.ReadFile(filepath.Join(root, "cpel/vpp_new.cpel"))
	if err != nil {
		t.Fatal(err)
	}
	code, id, msg := upload("good.cpel", good)
	if code != 200 && code != 201 {
		t.Fatalf("good upload after damaged ones: %d %s", code, msg)
	}
	info := waitIndexed(t, hs.URL, id)
	f := viewport(t, hs.URL, id, info.Stats.FirstNS, info.Stats.LastNS+1)
	var n int64
	for _, tr := range f.Reply.Tracks {
		for _, c := range tr.Count {
			n += int64(c)
		}
	}
	if n != info.Stats.Events || n == 0 {
		t.Errorf("good trace after damaged uploads draws %d events, stats %d", n, info.Stats.Events)
	}
}

// uploadFile uploads the file at path to the library under its base name
// and returns the trace's id.
func uploadFile(base, path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	name := filepath.Base(path)
	resp, err := http.Post(base+"/api/traces?name="+url.QueryEscape(name), "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r struct{ ID, Error string }
	json.NewDecoder(resp.Body).Decode(&r)
	if resp.StatusCode != 201 && resp.StatusCode != 200 {
		return "", fmt.Errorf("%s: upload %d: %s", name, resp.StatusCode, r.Error)
	}
	return r.ID, nil
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

func waitIndexed(t *testing.T, base, id string) web.TraceInfo {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		// The websocket or the viewer page starts indexing a trace that is
		// not loaded; the API only reports.
		var info web.TraceInfo
		getJSON(t, base+"/api/traces/"+id+"/meta", &struct{}{})
		getJSON(t, base+"/api/traces/"+id, &info)
		if info.Progress != nil && (info.Progress.State == web.StateReady || info.Progress.State == web.StateFailed) {
			if info.Progress.State == web.StateFailed {
				info.State = web.StateFailed
			}
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s not indexed: %+v", id, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// viewport asks for the whole range of every track over a websocket.
func viewport(t *testing.T, base, id string, start, end int64) wire.Frame {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/api/traces/"+id+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var meta struct {
		Tracks []struct{ ID int } `json:"tracks"`
	}
	// The index may have been closed (beyond the resident count) since it
	// was built: /meta answers once it is built again.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/api/traces/" + id + "/meta")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			err = json.NewDecoder(resp.Body).Decode(&meta)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("%s: /meta answers %s", id, resp.Status)
		}
	}
	ids := []string{"-1"}
	for _, tr := range meta.Tracks {
		ids = append(ids, fmt.Sprint(tr.ID))
	}
	req := fmt.Sprintf(`{"type":"viewport","seq":1,"start":"%d","end":"%d","width":1000,"tracks":[%s]}`, start, end, strings.Join(ids, ","))
	if err := c.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(time.Minute))
	for {
		typ, b, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if typ == websocket.TextMessage {
			if bytes.Contains(b, []byte(`"type":"error"`)) || bytes.Contains(b, []byte(`"type":"failed"`)) {
				t.Fatalf("%s", b)
			}
			continue
		}
		f, err := wire.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if f.Kind == wire.KindReply {
			return f
		}
	}
}

// TestServeAllowAttach: the page may attach to .NET processes when the
// viewer listens on loopback, not beyond it unless --allow-attach.
func TestServeAllowAttach(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // where the processes are looked for
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--port", "0"}, http.StatusOK},
		{[]string{"--listen", "127.0.0.1:0"}, http.StatusOK},
		{[]string{"--listen", "0.0.0.0:0", "--no-auth"}, http.StatusForbidden},
		{[]string{"--listen", "0.0.0.0:0", "--no-auth", "--allow-attach"}, http.StatusOK},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		var stdout, stderr syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, append([]string{"serve", "--data", t.TempDir()}, c.args...), &stdout, &stderr)
		}()
		re := regexp.MustCompile(`http://\S*?:(\d+)/(\?token=\w+)?`)
		var m []string
		for deadline := time.Now().Add(10 * time.Second); m == nil; m = re.FindStringSubmatch(stdout.String()) {
			if time.Now().After(deadline) {
				t.Fatalf("%v: no URL printed; stderr %q", c.args, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		resp, err := http.Get("http://127.0.0.1:" + m[1] + "/api/dotnet/processes" + m[2])
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("serve %v: processes %d %s, want %d", c.args, resp.StatusCode, b, c.want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve %v: %v", c.args, err)
		}
	}
}
