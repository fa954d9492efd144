package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gorilla/websocket"

	"viewer/render"
	"viewer/render/wire"
	"viewer/trace"
	"viewer/trace/synth"
)

// synthFile is a trace/synth synthetic trace of 8 tracks.
func synthFile(events int64, seed uint64) []byte { return synth.File(events, seed, 8) }

var testStatic = fstest.MapFS{
	"viewer.js":  {Data: []byte("console.log('viewer')\n")},
	"library.js": {Data: []byte("console.log('library')\n")},
	"viewer.css": {Data: []byte("body{}\n")},
}

type testServer struct {
	t   *testing.T
	s   *Server
	hs  *httptest.Server
	dir string
}

func newTestServer(t *testing.T, dir string, mod func(*Config)) *testServer {
	t.Helper()
	cfg := Config{
		DataDir:   dir,
		Formats:   []trace.Format{synth.Format{}},
		Static:    testStatic,
		MaxUpload: 1 << 20,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(s.Handler())
	hs.Config.RegisterOnShutdown(s.CloseSessions)
	hs.Start()
	ts := &testServer{t: t, s: s, hs: hs, dir: dir}
	t.Cleanup(ts.close)
	return ts
}

func (ts *testServer) close() {
	if ts.hs == nil {
		return
	}
	ts.s.CloseSessions()
	ts.hs.Close()
	ts.s.Close()
	ts.hs = nil
}

func (ts *testServer) do(method, path string, body io.Reader, hdr ...string) (*http.Response, []byte) {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.hs.URL+path, body)
	if err != nil {
		ts.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := ts.hs.Client().Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp, b
}

func (ts *testServer) upload(name string, data []byte) (status int, id string, msg string) {
	ts.t.Helper()
	resp, b := ts.do("POST", "/api/traces?name="+name, bytes.NewReader(data))
	var r struct {
		ID    string `json:"id"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		ts.t.Fatalf("upload reply %q: %v", b, err)
	}
	return resp.StatusCode, r.ID, r.Error
}

func (ts *testServer) list() []TraceInfo {
	ts.t.Helper()
	resp, b := ts.do("GET", "/api/traces", nil)
	if resp.StatusCode != 200 {
		ts.t.Fatalf("list: %d %s", resp.StatusCode, b)
	}
	var out []TraceInfo
	if err := json.Unmarshal(b, &out); err != nil {
		ts.t.Fatal(err)
	}
	return out
}

// waitReady polls until the trace is indexed.
func (ts *testServer) waitReady(id string) TraceInfo {
	ts.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, b := ts.do("GET", "/api/traces/"+id, nil)
		if resp.StatusCode != 200 {
			ts.t.Fatalf("get %s: %d %s", id, resp.StatusCode, b)
		}
		var ti TraceInfo
		if err := json.Unmarshal(b, &ti); err != nil {
			ts.t.Fatal(err)
		}
		if ti.State == StateReady && ti.Progress != nil && ti.Progress.State == StateReady {
			return ti
		}
		if ti.State == StateFailed {
			ts.t.Fatalf("indexing failed: %s", ti.Error)
		}
		if time.Now().After(deadline) {
			ts.t.Fatalf("trace %s not ready: %+v", id, ti)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (ts *testServer) dial(id string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	u := "ws" + strings.TrimPrefix(ts.hs.URL, "http") + "/api/traces/" + id + "/ws"
	return websocket.DefaultDialer.Dial(u, hdr)
}

// libraryFiles lists what the data directory holds, to check that a
// refused upload left nothing behind.
func libraryFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, sub := range []string{tracesDir, tmpDir} {
		des, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range des {
			out = append(out, sub+"/"+de.Name())
		}
	}
	return out
}

// readUntilReply reads messages until a viewport reply frame, returning
// the JSON messages and the tables frames seen before it.
func readUntilReply(t *testing.T, c *websocket.Conn) (wire.Frame, []byte, []map[string]any, []*wire.Tables) {
	t.Helper()
	var msgs []map[string]any
	var tables []*wire.Tables
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		typ, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("reading websocket: %v (after %v)", err, msgs)
		}
		if typ == websocket.BinaryMessage {
			f, err := wire.Decode(b)
			if err != nil {
				t.Fatalf("binary message: %v", err)
			}
			if f.Kind == wire.KindTables {
				tables = append(tables, f.Tables)
				continue
			}
			return f, b, msgs, tables
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m["type"] == "error" || m["type"] == "failed" {
			t.Fatalf("server error: %v", m)
		}
		msgs = append(msgs, m)
	}
}

// replyCounts returns the events per track of a reply.
func replyCounts(r *wire.Reply) map[int32]int64 {
	out := map[int32]int64{}
	for _, tr := range r.Tracks {
		for _, n := range tr.Count {
			out[tr.Track] += int64(n)
		}
	}
	return out
}

func viewportRequest(seq uint32, start, end int64, width int, tracks int) string {
	ids := make([]string, tracks)
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	return fmt.Sprintf(`{"type":"viewport","seq":%d,"start":"%d","end":"%d","width":%d,"tracks":[%s],"types":[],"mode":"event"}`,
		seq, start, end, width, strings.Join(ids, ","))
}

var pageData = regexp.MustCompile(`(?s)<script id="page-data" type="application/json">(.*?)</script>`)

func TestUploadViewRestart(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, dir, nil)
	const events = 200000
	status, id, msg := ts.upload("demo.synth", synthFile(events, 7))
	if status != http.StatusCreated {
		t.Fatalf("upload: %d %s", status, msg)
	}
	list := ts.list()
	if len(list) != 1 || list[0].ID.String() != id || list[0].Name != "demo.synth" || list[0].Format != "synth" {
		t.Fatalf("library after upload: %+v", list)
	}
	ti := ts.waitReady(id)
	if ti.Stats == nil || ti.Stats.Events != events {
		t.Fatalf("stats: %+v", ti.Stats)
	}
	// The library page lists it.
	resp, page := ts.do("GET", "/", nil)
	if resp.StatusCode != 200 || !bytes.Contains(page, []byte(`data-id="`+id+`"`)) {
		t.Fatalf("library page: %d, row for %s missing", resp.StatusCode, id)
	}

	start, end := ti.Stats.FirstNS, ti.Stats.LastNS+1
	c, _, err := ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(viewportRequest(1, start, end, 1000, 8))); err != nil {
		t.Fatal(err)
	}
	f1, _, msgs, tables := readUntilReply(t, c)
	if f1.Seq != 1 {
		t.Fatalf("reply seq %d", f1.Seq)
	}
	if len(msgs) == 0 || msgs[len(msgs)-1]["type"] != "ready" {
		t.Errorf("messages before the frame: %v, want ready last", msgs)
	}
	if len(tables) != 1 || len(tables[0].Tracks) != 8 || tables[0].Tracks[0].Name != "thread 0" || !strings.HasPrefix(tables[0].Types[0], "Synthetic-0/Event0") {
		t.Errorf("tables: %+v", tables)
	}
	var total int64
	for _, n := range replyCounts(f1.Reply) {
		total += n
	}
	if total != events {
		t.Errorf("the whole range holds %d events, want %d", total, events)
	}
	c.Close()

	// A zoomed-in view through a shareable URL, before and after a restart.
	mid := start + (end-start)/3
	view := View{Version: 1, HasRange: true, Start: trace.Time(mid), End: trace.Time(mid + 50000), Mode: ModeEvent}
	pageURL := "/t/" + id + "?" + view.Encode()
	frameFor := func(ts *testServer) ([]byte, View) {
		resp, page := ts.do("GET", pageURL, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("viewer page: %d %s", resp.StatusCode, page)
		}
		m := pageData.FindSubmatch(page)
		if m == nil {
			t.Fatalf("no page data in %s", page)
		}
		var pd struct {
			View View   `json:"view"`
			WS   string `json:"ws"`
		}
		if err := json.Unmarshal(m[1], &pd); err != nil {
			t.Fatal(err)
		}
		if pd.WS != "/api/traces/"+id+"/ws" {
			t.Errorf("ws path %q", pd.WS)
		}
		c, _, err := ts.dial(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		req := viewportRequest(9, int64(pd.View.Start), int64(pd.View.End), 800, 8)
		if err := c.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
			t.Fatal(err)
		}
		f, _, _, _ := readUntilReply(t, c)
		f.Reply.Micros = 0 // server time differs from run to run
		return wire.AppendReply(nil, 0, f.Reply), pd.View
	}
	before, v1 := frameFor(ts)
	if v1.Start != view.Start || v1.End != view.End {
		t.Fatalf("page view %+v, want the URL's range", v1)
	}
	if f, err := wire.Decode(before); err != nil || len(replyCounts(f.Reply)) == 0 {
		t.Fatal("zoomed view is empty")
	}
	ts.close()

	ts2 := newTestServer(t, dir, nil)
	if l := ts2.list(); len(l) != 1 || l[0].ID.String() != id || l[0].Stats == nil {
		t.Fatalf("library after restart: %+v", l)
	}
	after, _ := frameFor(ts2)
	if !bytes.Equal(before, after) {
		t.Errorf("the same URL gave a different frame after a restart (%d vs %d bytes)", len(before), len(after))
	}
}

func TestBadUploads(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, dir, nil)
	random := make([]byte, 5000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		status int
		want   string
	}{
		{"random", random, http.StatusUnsupportedMediaType, "first bytes"},
		{"truncated header", []byte(synth.Magic + "events=10"), http.StatusUnprocessableEntity, "synth: truncated at byte"},
		{"bad header", []byte(synth.Magic + "colour=blue\n"), http.StatusUnprocessableEntity, "looks like synth"},
		{"empty", nil, http.StatusBadRequest, "empty"},
		{"too large", append(synthFile(10, 1), make([]byte, 1<<20)...), http.StatusRequestEntityTooLarge, "upload limit of 1 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, id, msg := ts.upload("x", tc.data)
			if status != tc.status || !strings.Contains(msg, tc.want) || id != "" {
				t.Errorf("got %d %q (id %q), want %d with %q", status, msg, id, tc.status, tc.want)
			}
			if l := ts.list(); len(l) != 0 {
				t.Errorf("library holds %d traces", len(l))
			}
			if f := libraryFiles(t, dir); len(f) != 0 {
				t.Errorf("data directory holds %v", f)
			}
		})
	}
	// The message names the formats tried.
	if _, _, msg := ts.upload("x", random); !strings.Contains(msg, "tried synth") {
		t.Errorf("message %q does not name the formats tried", msg)
	}
	// A body streamed without Content-Length is cut at the limit too.
	resp, b := ts.do("POST", "/api/traces", io.MultiReader(bytes.NewReader(synthFile(1, 1)), io.LimitReader(zeros{}, 2<<20)))
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked oversize upload: %d %s", resp.StatusCode, b)
	}
	if f := libraryFiles(t, dir); len(f) != 0 {
		t.Errorf("data directory holds %v", f)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestKilledUpload(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, dir, nil)
	conn, err := net.Dial("tcp", ts.hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	body := synthFile(1000, 3)
	fmt.Fprintf(conn, "POST /api/traces?name=k HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n", len(body)+100000)
	conn.Write(body)
	// Wait until the server has staged the upload, then kill the client.
	deadline := time.Now().Add(10 * time.Second)
	for len(libraryFiles(t, dir)) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	conn.Close()
	for len(libraryFiles(t, dir)) != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if f := libraryFiles(t, dir); len(f) != 0 {
		t.Errorf("a killed upload left %v", f)
	}
	if l := ts.list(); len(l) != 0 {
		t.Errorf("a killed upload is in the library: %+v", l)
	}
}

func TestDedupAndDelete(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, dir, nil)
	s1, id1, _ := ts.upload("a", synthFile(1000, 1))
	s2, id2, _ := ts.upload("b", synthFile(1000, 1))
	if s1 != http.StatusCreated || s2 != http.StatusOK || id1 != id2 {
		t.Fatalf("identical uploads: %d %s, %d %s", s1, id1, s2, id2)
	}
	_, id3, _ := ts.upload("c", synthFile(1000, 2))
	if id3 == id1 || len(ts.list()) != 2 {
		t.Fatalf("a different upload: %s; library %d", id3, len(ts.list()))
	}
	ts.waitReady(id1)
	if resp, b := ts.do("DELETE", "/api/traces/"+id1, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, b)
	}
	if resp, _ := ts.do("GET", "/api/traces/"+id1, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("deleted trace: %d", resp.StatusCode)
	}
	if l := ts.list(); len(l) != 1 || l[0].ID.String() != id3 {
		t.Errorf("library after delete: %+v", l)
	}
	if _, err := os.Stat(filepath.Join(dir, tracesDir, id1)); !os.IsNotExist(err) {
		t.Errorf("deleted trace's directory: %v", err)
	}
	// The no-script delete form redirects to the library.
	resp, _ := ts.do("POST", "/t/"+id3+"/delete", nil)
	if resp.StatusCode != http.StatusOK || len(ts.list()) != 0 {
		t.Errorf("delete form: %d, library %d", resp.StatusCode, len(ts.list()))
	}
	// Ids must be canonical UUIDs.
	for _, p := range []string{"/api/traces/" + strings.ToUpper(id3), "/api/traces/..%2f..%2fetc", "/api/traces/1", "/t/x"} {
		if resp, _ := ts.do("GET", p, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
}

func TestForeignHostAndOrigin(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, _ := ts.upload("a", synthFile(100, 1))
	// Refusals of the API are JSON errors like its other errors.
	isJSONError := func(what string, resp *http.Response, b []byte) {
		t.Helper()
		var e struct{ Error string }
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || json.Unmarshal(b, &e) != nil || e.Error == "" {
			t.Errorf("%s: %d %q %s, want a JSON error", what, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	for _, host := range []string{"evil.example", "evil.example:80", "127.0.0.1.nip.io"} {
		resp, b := ts.do("GET", "/api/traces", nil, "Host", host)
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("Host %s: %d", host, resp.StatusCode)
		}
		isJSONError("Host "+host, resp, b)
	}
	for _, host := range []string{"localhost:1234", "127.0.0.1", "[::1]:8080"} {
		resp, _ := ts.do("GET", "/api/traces", nil, "Host", host)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("Host %s: %d", host, resp.StatusCode)
		}
	}
	_, resp, err := ts.dial(id, http.Header{"Origin": {"http://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Origin: err %v, resp %v", err, resp)
	} else {
		b, _ := io.ReadAll(resp.Body)
		isJSONError("foreign Origin", resp, b)
	}
	c, _, err := ts.dial(id, http.Header{"Origin": {ts.hs.URL}})
	if err != nil {
		t.Errorf("own Origin refused: %v", err)
	} else {
		c.Close()
	}
	// Cross-origin state changes are refused.
	resp2, b2 := ts.do("DELETE", "/api/traces/"+id, nil, "Sec-Fetch-Site", "cross-site")
	if resp2.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site DELETE: %d", resp2.StatusCode)
	}
	isJSONError("cross-site DELETE", resp2, b2)
	resp3, _ := ts.do("POST", "/api/traces", bytes.NewReader(synthFile(5, 5)), "Origin", "http://evil.example")
	if resp3.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin POST: %d", resp3.StatusCode)
	}
	if len(ts.list()) != 1 {
		t.Errorf("library changed by cross-origin requests")
	}
}

func TestPagesEscapeAndCSP(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, _ := ts.upload("<script>alert(1)</script>.synth", synthFile(100, 1))
	for _, p := range []string{"/", "/t/" + id} {
		resp, page := ts.do("GET", p, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
		if bytes.Contains(page, []byte("<script>alert")) {
			t.Errorf("%s: trace name not escaped", p)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", p, csp)
		}
		m := pageData.FindSubmatch(page)
		if m == nil || !json.Valid(m[1]) {
			t.Errorf("%s: page data missing or not JSON", p)
		}
	}
	resp, page := ts.do("GET", "/t/"+id+"?v=1&s=10", nil)
	if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(page, []byte("needs both s and e")) {
		t.Errorf("bad view: %d", resp.StatusCode)
	}
	if resp, _ := ts.do("GET", "/t/"+id+"?v=2", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("future version: %d", resp.StatusCode)
	}
}

func TestStaticCaching(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	resp, b := ts.do("GET", "/static/viewer.js", nil)
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || string(b) != "console.log('viewer')\n" || etag == "" {
		t.Fatalf("viewer.js: %d %q etag %q", resp.StatusCode, b, etag)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "javascript") {
		t.Errorf("Content-Type %q", ct)
	}
	if resp.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	resp, _ = ts.do("GET", "/static/viewer.js", nil, "If-None-Match", etag)
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation: %d", resp.StatusCode)
	}
	// The page links the file with its hash, which may be cached forever.
	_, page := ts.do("GET", "/", nil)
	m := regexp.MustCompile(`src="(/static/library.js\?h=[0-9a-f]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("library page does not link library.js with a hash")
	}
	resp, _ = ts.do("GET", string(m[1]), nil)
	if !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("hashed URL: Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	if resp, _ := ts.do("GET", "/static/missing.js", nil); resp.StatusCode != 404 {
		t.Errorf("missing file: %d", resp.StatusCode)
	}
}

// TestLatestWins checks the session's queue of viewport requests: replies
// come in request order, the newest request is always answered, and
// requests that pile up while a query cannot run are dropped, all but the
// newest.
func TestLatestWins(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, _ := ts.upload("a", synthFile(300000, 4))
	ti := ts.waitReady(id)
	const n = 200
	request := func(seq uint32) []byte {
		return []byte(viewportRequest(seq, ti.Stats.FirstNS+int64(seq), ti.Stats.LastNS, 2000, 8))
	}
	// The second part's requests, n+1 to 2n, as the sessions queue them.
	accepted := make(chan uint32, n)
	ts.s.accepted = func(seq uint32) {
		if seq > n {
			accepted <- seq
		}
	}

	// Free running: replies in order, ending with the newest.
	c, _, err := ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for i := uint32(1); i <= n; i++ {
			c.WriteMessage(websocket.TextMessage, request(i))
		}
	}()
	var seqs []uint32
	for len(seqs) == 0 || seqs[len(seqs)-1] != n {
		f, _, _, _ := readUntilReply(t, c)
		if len(seqs) > 0 && f.Seq <= seqs[len(seqs)-1] {
			t.Fatalf("reply %d after %d", f.Seq, seqs[len(seqs)-1])
		}
		seqs = append(seqs, f.Seq)
	}
	t.Logf("free running: %d requests, %d replies", n, len(seqs))
	c.Close()

	// Piled up: with every query slot taken, the session queues all n
	// requests before it can run one; then only the newest is answered.
	var slots []*replyBuffers
	for range cap(ts.s.res.slots) {
		slots = append(slots, <-ts.s.res.slots)
	}
	c, _, err = ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := uint32(n + 1); i <= 2*n; i++ {
		if err := c.WriteMessage(websocket.TextMessage, request(i)); err != nil {
			t.Fatal(err)
		}
	}
	timeout := time.After(30 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case <-accepted:
		case <-timeout:
			t.Fatalf("the session queued %d of %d requests", i, n)
		}
	}
	for _, b := range slots {
		ts.s.res.slots <- b
	}
	if f, _, _, _ := readUntilReply(t, c); f.Seq != 2*n {
		t.Errorf("first reply after the pile-up answers request %d, want only the newest, %d", f.Seq, 2*n)
	}
}

func TestSearchEventMeta(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, _ := ts.upload("a", synthFile(20000, 5))
	ts.waitReady(id)

	resp, b := ts.do("GET", "/api/traces/"+id+"/meta", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("meta: %d %s", resp.StatusCode, b)
	}
	var meta metaJSON
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	// Earlier names of a renamed track (synth's thread 1), oldest first;
	// tracks never renamed have no names key.
	if got := strings.Join(meta.Tracks[1].Names, "|"); got != "launcher|sh <init>" {
		t.Errorf("track 1 names %q, want launcher|sh <init>", got)
	}
	if bytes.Count(b, []byte(`"names":`)) != 1 {
		t.Errorf("names keys: %d, want 1 (only the renamed track)", bytes.Count(b, []byte(`"names":`)))
	}
	var perTrack, perType int64
	for _, tr := range meta.Tracks {
		perTrack += tr.Events
	}
	for _, ty := range meta.Types {
		perType += ty.Count
	}
	if len(meta.Tracks) != 8 || perTrack != 20000 || perType != 20000 {
		t.Errorf("meta: %d tracks, %d events by track, %d by type", len(meta.Tracks), perTrack, perType)
	}

	// Search by type name over HTTP; every hit's details name that type.
	resp, b = ts.do("GET", "/api/traces/"+id+"/search?q=Event3&limit=50", nil)
	var sr struct {
		Hits []SearchHit `json:"hits"`
		More bool        `json:"more"`
	}
	if err := json.Unmarshal(b, &sr); err != nil || resp.StatusCode != 200 {
		t.Fatalf("search: %d %s", resp.StatusCode, b)
	}
	if len(sr.Hits) != 50 || !sr.More {
		t.Fatalf("search: %d hits, more %v", len(sr.Hits), sr.More)
	}
	for i, h := range sr.Hits {
		if i > 0 && h.Time < sr.Hits[i-1].Time {
			t.Errorf("hits out of time order")
		}
		resp, b := ts.do("GET", "/api/traces/"+id+"/events/"+h.Ev.String(), nil)
		var ev map[string]any
		if err := json.Unmarshal(b, &ev); err != nil || resp.StatusCode != 200 {
			t.Fatalf("event %s: %d %s", h.Ev, resp.StatusCode, b)
		}
		if name, _ := ev["event"].(string); !strings.HasPrefix(name, "Event3") || ev["ev"] != h.Ev.String() {
			t.Errorf("hit %s is %v", h.Ev, ev["event"])
		}
	}

	// A name and a field predicate, stepping with after and dir as the
	// page's next/previous keys do: every hit matches, in order both ways.
	search := func(query string) []SearchHit {
		t.Helper()
		resp, b := ts.do("GET", "/api/traces/"+id+"/search?"+query, nil)
		var sr struct {
			Hits []SearchHit `json:"hits"`
		}
		if err := json.Unmarshal(b, &sr); err != nil || resp.StatusCode != 200 {
			t.Fatalf("search %s: %d %s", query, resp.StatusCode, b)
		}
		return sr.Hits
	}
	q := url.QueryEscape("Event3 && value < 500")
	all := search("q=" + q)
	if len(all) == 0 {
		t.Fatal("predicate search found nothing")
	}
	for _, h := range all {
		_, b := ts.do("GET", "/api/traces/"+id+"/events/"+h.Ev.String(), nil)
		var ev struct {
			Event  string `json:"event"`
			Fields []struct {
				Name  string `json:"name"`
				Value any    `json:"value"`
			} `json:"fields"`
		}
		json.Unmarshal(b, &ev)
		if !strings.HasPrefix(ev.Event, "Event3") || len(ev.Fields) < 2 || ev.Fields[1].Value.(float64) >= 500 {
			t.Fatalf("search hit %s does not match: %s", h.Ev, b)
		}
	}
	if len(all) > 2 {
		if next := search("q=" + q + "&limit=1&after=" + all[0].Ev.String()); len(next) != 1 || next[0] != all[1] {
			t.Errorf("next after %s: %v, want %v", all[0].Ev, next, all[1])
		}
		if prev := search("q=" + q + "&limit=1&dir=prev&after=" + all[2].Ev.String()); len(prev) != 1 || prev[0] != all[1] {
			t.Errorf("previous before %s: %v, want %v", all[2].Ev, prev, all[1])
		}
	}
	if last := search("q=" + q + "&dir=prev&after=" + all[0].Ev.String()); len(last) != 0 {
		t.Errorf("previous before the first hit: %v", last)
	}
	for _, bad := range []string{"q=", "q=" + url.QueryEscape("x = \"open"), "q=a&limit=0", "q=a&dir=up", "q=a&after=1"} {
		if resp, _ := ts.do("GET", "/api/traces/"+id+"/search?"+bad, nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("search?%s: %d, want 400", bad, resp.StatusCode)
		}
	}
	if resp, _ := ts.do("GET", "/api/traces/"+id+"/events/99:0", nil); resp.StatusCode != 404 {
		t.Errorf("missing event: %d", resp.StatusCode)
	}
}

func TestShutdownClosesSockets(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, _ := ts.upload("a", synthFile(100, 1))
	c, _, err := ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ts.s.CloseSessions()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Errorf("close: %v, want 1001 going away", err)
		}
		break
	}
}

func TestDemoOnFirstStart(t *testing.T) {
	dir := t.TempDir()
	demo := func() (string, []byte) { return "demo.synth", synthFile(500, 9) }
	ts := newTestServer(t, dir, func(c *Config) { c.Demo = demo })
	l := ts.list()
	if len(l) != 1 || l[0].Name != "demo.synth" {
		t.Fatalf("first start: %+v", l)
	}
	ts.do("DELETE", "/api/traces/"+l[0].ID.String(), nil)
	ts.close()
	ts2 := newTestServer(t, dir, func(c *Config) { c.Demo = demo })
	if l := ts2.list(); len(l) != 0 {
		t.Errorf("a deleted demo came back: %+v", l)
	}
}

func TestIdleIndexesEvicted(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), func(c *Config) { c.ResidentIndexes = 1 })
	var ids []string
	for seed := range uint64(3) {
		_, id, _ := ts.upload("t", synthFile(5000, seed+1))
		ts.waitReady(id)
		ids = append(ids, id)
	}
	resident := func() int {
		ts.s.ix.mu.Lock()
		defer ts.s.ix.mu.Unlock()
		n := 0
		for _, j := range ts.s.ix.jobs {
			if _, idx := j.snapshot(); idx != nil {
				n++
			}
		}
		return n
	}
	if n := resident(); n != 1 {
		t.Errorf("%d indexes resident, want 1", n)
	}
	// An evicted trace is still listed with its statistics and opens again.
	for _, ti := range ts.list() {
		if ti.Stats == nil || ti.Stats.Events != 5000 || ti.State != StateReady {
			t.Errorf("listed after eviction: %+v", ti)
		}
	}
	c, _, err := ts.dial(ids[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.WriteMessage(websocket.TextMessage, []byte(viewportRequest(1, 0, 1<<40, 100, 8)))
	f, _, _, _ := readUntilReply(t, c)
	var n int64
	for _, v := range replyCounts(f.Reply) {
		n += v
	}
	if n != 5000 {
		t.Errorf("reopened trace draws %d events", n)
	}
}

func TestUploadForm(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, dir, nil)
	post := func(data []byte) *http.Response {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		mw.WriteField("note", "ignored")
		fw, _ := mw.CreateFormFile("file", `C:\traces\form.synth`)
		fw.Write(data)
		mw.Close()
		req, _ := http.NewRequest("POST", ts.hs.URL+"/upload", &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := post(synthFile(100, 1))
	l := ts.list()
	if resp.StatusCode != http.StatusSeeOther || len(l) != 1 || resp.Header.Get("Location") != "/t/"+l[0].ID.String() || l[0].Name != "form.synth" {
		t.Fatalf("form upload: %d %q, library %+v", resp.StatusCode, resp.Header.Get("Location"), l)
	}
	if resp := post([]byte("not a trace at all")); resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("bad form upload: %d", resp.StatusCode)
	}
	if resp := post(append(synthFile(1, 2), make([]byte, 2<<20)...)); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversize form upload: %d", resp.StatusCode)
	}
	if l := ts.list(); len(l) != 1 {
		t.Errorf("library holds %d traces", len(l))
	}
	if f := libraryFiles(t, dir); len(f) != 1 {
		t.Errorf("data directory holds %v", f)
	}
}

// panicFormat is a reader that panics on its Nth event ("PANIC1 N").
type panicFormat struct{}

func (panicFormat) Name() string           { return "panic" }
func (panicFormat) Match(head []byte) bool { return bytes.HasPrefix(head, []byte("PANIC1 ")) }
func (panicFormat) Open(r io.ReaderAt, size int64) (trace.Reader, error) {
	b := make([]byte, size)
	r.ReadAt(b, 0)
	var n int
	fmt.Sscan(string(b[7:]), &n)
	return &panicReader{Reader: synth.New(synth.Config{Events: 100}), at: n}, nil
}

// panicReader hides synth's ReadEvents: render reads it event by event.
type panicReader struct {
	trace.Reader
	n, at int
}

func (r *panicReader) ReadEvent() (trace.Event, error) {
	if r.n++; r.n == r.at {
		panic("reader bug")
	}
	return r.Reader.ReadEvent()
}

func TestPanicsRecovered(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, dir, func(c *Config) { c.Formats = append(c.Formats, panicFormat{}) })
	// A panic while checking an upload: 500, nothing stored.
	status, _, msg := ts.upload("p", []byte("PANIC1 1\n"))
	if status != http.StatusInternalServerError {
		t.Errorf("panic in upload: %d %q", status, msg)
	}
	if f := libraryFiles(t, dir); len(f) != 0 {
		t.Errorf("data directory holds %v", f)
	}
	// A panic while indexing: the trace is stored and marked failed.
	status, id, _ := ts.upload("p", []byte("PANIC1 50\n"))
	if status != http.StatusCreated {
		t.Fatalf("upload: %d", status)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, b := ts.do("GET", "/api/traces/"+id, nil)
		var ti TraceInfo
		json.Unmarshal(b, &ti)
		if ti.State == StateFailed {
			if !strings.Contains(ti.Error, "internal error") {
				t.Errorf("error %q", ti.Error)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %s", ti.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The server still serves.
	if l := ts.list(); len(l) != 1 {
		t.Errorf("library %+v", l)
	}
}

func TestLibraryIgnoresDebris(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, dir, nil)
	_, id, _ := ts.upload("good", synthFile(10, 1))
	ts.close()
	// What a crash could leave: a staged upload, a trace directory
	// without its info, one whose info is damaged, one whose file is short.
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, tmpDir, "upload-123"), 0o700))
	must(os.WriteFile(filepath.Join(dir, tmpDir, "upload-123", traceFile), []byte("half"), 0o600))
	for i, info := range []string{"", "{not json", `{"id":"00000000-0000-0000-0000-000000000000"}`} {
		d := filepath.Join(dir, tracesDir, fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i))
		must(os.MkdirAll(d, 0o700))
		must(os.WriteFile(filepath.Join(d, traceFile), synthFile(10, 9), 0o600))
		if info != "" {
			must(os.WriteFile(filepath.Join(d, infoFile), []byte(info), 0o600))
		}
	}
	ts2 := newTestServer(t, dir, nil)
	l := ts2.list()
	if len(l) != 1 || l[0].ID.String() != id {
		t.Errorf("library after debris: %+v", l)
	}
	if des, _ := os.ReadDir(filepath.Join(dir, tmpDir)); len(des) != 0 {
		t.Errorf("tmp not cleared: %v", des)
	}
}

func TestProgressPushed(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	ts.s.ix.every = time.Millisecond // several reports even on a fast machine
	_, id, _ := ts.upload("big", synthFile(3_000_000, 8))
	c, _, err := ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	var progress []Progress
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Type string `json:"type"`
			Progress
		}
		json.Unmarshal(b, &m)
		if m.Type == "progress" {
			progress = append(progress, m.Progress)
			continue
		}
		if m.Type != "ready" {
			t.Fatalf("message %s", b)
		}
		break
	}
	var last Progress
	for _, p := range progress {
		if p.State == StateIndexing && p.Events > 0 {
			if p.Events < last.Events || p.EventsPerS <= 0 || p.Percent < 0 || p.Percent > 100 {
				t.Errorf("progress %+v after %+v", p, last)
			}
			last = p
		}
	}
	if last.Events == 0 {
		t.Errorf("no progress with events before ready: %+v", progress)
	}
	t.Logf("%d progress messages, last %+v", len(progress), last)
}

// TestMemoryBudgetEvicts: idle indexes beyond the memory budget are
// closed, least recently used first, however many the resident count
// allows; one in use stays, whatever its size.
func TestMemoryBudgetEvicts(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), func(c *Config) { c.ResidentIndexes, c.MemoryBudget = 100, 1 })
	var ids []string
	for seed := range uint64(3) {
		_, id, _ := ts.upload("t", synthFile(5000, seed+1))
		// Built, then closed at once: its stats stay in the library.
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var ti TraceInfo
			_, b := ts.do("GET", "/api/traces/"+id, nil)
			if json.Unmarshal(b, &ti) == nil && ti.State == StateReady && ti.Stats != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("trace %s not indexed: %s", id, b)
			}
		}
		ids = append(ids, id)
	}
	resident := func() []string {
		ts.s.ix.mu.Lock()
		defer ts.s.ix.mu.Unlock()
		var out []string
		for id, j := range ts.s.ix.jobs {
			if _, idx := j.snapshot(); idx != nil {
				out = append(out, id.String())
			}
		}
		return out
	}
	ts.s.ix.persist.wait() // an index is held while its index file is written
	if r := resident(); len(r) != 0 {
		t.Errorf("idle indexes resident over a 1-byte budget: %v", r)
	}
	c, _, err := ts.dial(ids[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.WriteMessage(websocket.TextMessage, []byte(viewportRequest(1, 0, 1<<40, 100, 8)))
	readUntilReply(t, c)
	if r := resident(); len(r) != 1 || r[0] != ids[1] {
		t.Errorf("resident while one trace is viewed: %v, want just %s", r, ids[1])
	}
}

// bins=N counts the hits over the whole trace, past the list's limit.
func TestSearchBins(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, _ := ts.upload("a", synthFile(30000, 5))
	ts.waitReady(id)
	get := func(query string) (int, []byte) {
		resp, b := ts.do("GET", "/api/traces/"+id+"/search?"+query, nil)
		return resp.StatusCode, b
	}
	var all struct {
		Hits []SearchHit `json:"hits"`
		More bool        `json:"more"`
	}
	if code, b := get("q=Event3&limit=10000"); code != 200 || json.Unmarshal(b, &all) != nil || all.More {
		t.Fatalf("search: %d %s", code, b)
	}
	var r struct {
		Hits []SearchHit `json:"hits"`
		More bool        `json:"more"`
		Bins searchBins  `json:"bins"`
	}
	code, b := get("q=Event3&limit=1&bins=100")
	if code != 200 || json.Unmarshal(b, &r) != nil {
		t.Fatalf("bins: %d %s", code, b)
	}
	if len(r.Hits) != 1 || !r.More || len(r.Bins.Counts) != 100 || !r.Bins.Complete {
		t.Fatalf("bins reply: %d hits, more %v, %d bins, complete %v", len(r.Hits), r.More, len(r.Bins.Counts), r.Bins.Complete)
	}
	want := make([]int64, 100)
	for _, h := range all.Hits {
		want[int64(h.Time-r.Bins.From)*100/int64(r.Bins.To-r.Bins.From+1)]++
	}
	if fmt.Sprint(want) != fmt.Sprint(r.Bins.Counts) {
		t.Errorf("bins %v, want %v", r.Bins.Counts, want)
	}
	if !bytes.Contains(b, []byte(`"from":"`)) {
		t.Errorf("bin times are not strings: %s", b[:min(len(b), 200)])
	}
	for _, bad := range []string{"0", "4097", "x", "-1"} {
		if code, _ := get("q=Event3&bins=" + bad); code != 400 {
			t.Errorf("bins=%s: %d, want 400", bad, code)
		}
	}
	if code, b := get("q=nothing+at+all&bins=5"); code != 200 || !bytes.Contains(b, []byte(`"counts":[0,0,0,0,0]`)) {
		t.Errorf("no match: %d %s", code, b)
	}
}

// The page's percentage follows the events indexed (or the bytes up to
// the furthest payload indexed), and stays below 100 until the index is
// ready.
func TestProgressPercent(t *testing.T) {
	for _, c := range []struct {
		rp          render.Progress
		size, total int64
		want        float64
	}{
		{render.Progress{Events: 870, Bytes: 50}, 60, 1000, 87},          // synth: offsets beyond the file
		{render.Progress{Events: 999_999, Bytes: 60}, 60, 1_000_000, 99}, // never 100 while indexing
		{render.Progress{Events: 10, Bytes: 250}, 1000, 0, 25},
		{render.Progress{Events: 10, Bytes: 5000}, 1000, 0, 99},
		{render.Progress{Events: 10, Bytes: 10, Done: true}, 1000, 0, 99},
		{render.Progress{}, 0, 0, 0},
	} {
		if got := progressPercent(c.rp, c.size, c.total); got != c.want {
			t.Errorf("progressPercent(%+v, %d, %d) = %v, want %v", c.rp, c.size, c.total, got, c.want)
		}
	}
}
