package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"viewer/render/wire"
	"viewer/trace"
	"viewer/trace/perf"
	"viewer/trace/perf/perftest"
)

// liveFormats are the formats of the live tests: perf.data in pipe mode
// is what a live recording streams.
func liveFormats(c *Config) {
	c.Formats = []trace.Format{perf.Format{}}
	c.MaxUpload = 1 << 30
}

// pipeTrace returns a pipe-mode perf.data stream of n samples.
func pipeTrace(t *testing.T, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := perftest.Generate(&b, n, perftest.GenerateOptions{Pipe: true, RoundSize: 200, SchedEvery: 4}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// feed writes data into w in count pieces, one every interval, then
// closes w unless open is set.
func feed(w *io.PipeWriter, data []byte, count int, interval time.Duration, open bool) {
	step := (len(data) + count - 1) / count
	for off := 0; off < len(data); off += step {
		if _, err := w.Write(data[off:min(off+step, len(data))]); err != nil {
			return
		}
		time.Sleep(interval)
	}
	if !open {
		w.Close()
	}
}

// TestLiveGrowsAndStores streams a perf.data recording into the server a
// piece at a time: the API reports a growing event count, a session in
// chase mode gets frames whose view moves with the newest event, and the
// stored trace is the stream byte for byte, with the statistics of the
// same file uploaded.
func TestLiveGrowsAndStores(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), liveFormats)
	data := pipeTrace(t, 40000)
	pr, pw := io.Pipe()
	e, stored, err := ts.s.Ingest(LiveSource{Name: "live.data", R: pr})
	if err != nil {
		t.Fatal(err)
	}
	go feed(pw, data, 40, 50*time.Millisecond, false)
	id := e.ID.String()

	// The count grows while the stream goes on.
	var counts []int64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var ti TraceInfo
		_, b := ts.do("GET", "/api/traces/"+id, nil)
		if err := json.Unmarshal(b, &ti); err != nil {
			t.Fatal(err)
		}
		if ti.State == StateQueued {
			continue // the indexing job has not begun yet (a busy machine)
		}
		if ti.State != StateLive {
			break
		}
		if !ti.Live {
			t.Errorf("a trace in state live is not marked live: %s", b)
		}
		if n := ti.Progress.Events; n > 0 && (len(counts) == 0 || n > counts[len(counts)-1]) {
			counts = append(counts, n)
		}
		if len(counts) >= 3 {
			break
		}
	}
	if len(counts) < 3 {
		t.Errorf("the event count did not grow while the stream went on: %v", counts)
	}

	// A chasing session: pushed frames whose start advances.
	c, _, err := ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := `{"type":"viewport","seq":7,"start":"0","end":"1000000","width":200,"tracks":[0,1,2,3,4,5,6,7,8,9],"types":[],"chase":true}`
	if err := c.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
		t.Fatal(err)
	}
	var starts []int64
	sawLive := false
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for len(starts) < 4 {
		typ, b, err := c.ReadMessage()
		if err != nil {
			break // the trace ended before four frames: checked below
		}
		if typ == websocket.TextMessage {
			sawLive = sawLive || strings.Contains(string(b), `"type":"live"`)
			continue
		}
		f, err := wire.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if f.Kind == wire.KindReply && f.Seq == 7 && (len(starts) == 0 || f.Reply.Start > starts[len(starts)-1]) {
			starts = append(starts, f.Reply.Start)
		}
	}
	if len(starts) < 3 || !sawLive {
		t.Errorf("chase frames' starts %v, live messages %v: want them advancing", starts, sawLive)
	}

	<-stored
	ti := ts.waitReady(id)
	if ti.Live {
		t.Errorf("the stored trace is still marked live")
	}
	got, err := os.ReadFile(filepath.Join(ts.dir, tracesDir, id, traceFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("stored %d bytes, the stream was %d: not the same bytes", len(got), len(data))
	}
	sum := sha256.Sum256(data)
	if ti.SHA256 != hex.EncodeToString(sum[:]) || ti.Size != int64(len(data)) {
		t.Errorf("entry says %d bytes, sha256 %s", ti.Size, ti.SHA256)
	}
	// Uploaded, the same bytes are the same trace: same statistics.
	other := newTestServer(t, t.TempDir(), liveFormats)
	_, uid, _ := other.upload("file.data", data)
	up := other.waitReady(uid)
	a, _ := json.Marshal(ti.Stats)
	b, _ := json.Marshal(up.Stats)
	if !bytes.Equal(a, b) {
		t.Errorf("live trace's stats\n%s\nthe uploaded file's\n%s", a, b)
	}
}

// TestLiveStopCutsShort: stopping a live source stores what arrived, a
// trace cut short, with a notice.
func TestLiveStopCutsShort(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), liveFormats)
	data := pipeTrace(t, 20000)
	pr, pw := io.Pipe()
	e, stored, err := ts.s.Ingest(LiveSource{Name: "cut.data", R: pr, Stop: func() { pw.CloseWithError(io.ErrUnexpectedEOF) }})
	if err != nil {
		t.Fatal(err)
	}
	go feed(pw, data[:len(data)/2], 10, 20*time.Millisecond, true)
	time.Sleep(300 * time.Millisecond)
	if resp, _ := ts.do("DELETE", "/api/traces/"+e.ID.String(), nil); resp.StatusCode != http.StatusConflict {
		t.Errorf("deleting a live trace: %d, want 409", resp.StatusCode)
	}
	resp, _ := ts.do("POST", "/api/traces/"+e.ID.String()+"/stop", nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("stop: %d", resp.StatusCode)
	}
	<-stored
	ti := ts.waitReady(e.ID.String())
	if ti.Stats == nil || ti.Stats.Events == 0 || !ti.Stats.Truncated {
		t.Errorf("a stopped stream's trace: %+v, want events and truncated", ti.Stats)
	}
	if resp, _ := ts.do("POST", "/api/traces/"+e.ID.String()+"/stop", nil); resp.StatusCode != http.StatusConflict {
		t.Errorf("stopping a stored trace: %d, want 409", resp.StatusCode)
	}
}

// TestLivePost streams a recording in a chunked POST: the id comes back
// while the body is still being sent.
func TestLivePost(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), liveFormats)
	data := pipeTrace(t, 5000)
	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", ts.hs.URL+"/api/live?name=posted.data", pr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *http.Response)
	go func() {
		resp, err := ts.hs.Client().Do(req)
		if err != nil {
			t.Error(err)
			close(done)
			return
		}
		done <- resp
	}()
	pw.Write(data[:len(data)/2])
	resp := <-done
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	var r struct{ ID uuid.UUID }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("live POST: %d %v", resp.StatusCode, err)
	}
	if e, ok := ts.s.Library().Get(r.ID); !ok || !e.Live {
		t.Errorf("during the POST the trace is %+v, want live", e)
	}
	pw.Write(data[len(data)/2:])
	pw.Close()
	io.Copy(io.Discard, resp.Body)
	ti := ts.waitReady(r.ID.String())
	if ti.Size != int64(len(data)) || ti.Name != "posted.data" {
		t.Errorf("stored %d bytes as %q, want %d", ti.Size, ti.Name, len(data))
	}
}

// TestLiveSurvivesCrash: a recording interrupted by a crash (no Finish)
// is stored when the library next opens, as far as it got.
func TestLiveSurvivesCrash(t *testing.T) {
	dir := t.TempDir()
	lib, err := OpenLibrary(dir, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	data := pipeTrace(t, 2000)
	rec, err := lib.Record("crashed.data", 1<<30, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.SetFormat("perf"); err != nil {
		t.Fatal(err)
	}
	rec.Write(data[:1000])
	// No Finish: the process is gone. A new one opens the library.
	lib2, err := OpenLibrary(dir, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	e, ok := lib2.Get(rec.ID())
	if !ok || e.Live || e.Size != 1000 || e.Format != "perf" || e.Name != "crashed.data" {
		t.Fatalf("after the restart: %+v, %v", e, ok)
	}
	// One that never got its format is dropped.
	rec2, _ := lib2.Record("nothing", 1<<30, nil)
	rec2.Write([]byte("junk"))
	lib3, err := OpenLibrary(dir, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lib3.Get(rec2.ID()); ok {
		t.Errorf("a recording of no known format was kept")
	}
	if _, ok := lib3.Get(rec.ID()); !ok {
		t.Errorf("the stored recording is gone after a second restart")
	}
}

func testLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestLiveLimit: beyond Config.MaxLive live traces at once, more are
// refused (429 from the API) until one ends.
func TestLiveLimit(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), func(c *Config) { liveFormats(c); c.MaxLive = 2 })
	var pipes []*io.PipeWriter
	for range 2 {
		pr, pw := io.Pipe()
		pipes = append(pipes, pw)
		if _, _, err := ts.s.Ingest(LiveSource{Name: "x", R: pr}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := ts.s.Ingest(LiveSource{Name: "x", R: bytes.NewReader(nil)}); !errors.Is(err, ErrTooManyLive) {
		t.Errorf("a third live trace: %v, want ErrTooManyLive", err)
	}
	if resp, _ := ts.do("POST", "/api/live?name=y", bytes.NewReader(pipeTrace(t, 10))); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("POST /api/live beyond the limit: %d, want 429", resp.StatusCode)
	}
	for _, pw := range pipes {
		pw.Close()
	}
	for deadline := time.Now().Add(10 * time.Second); ts.s.live.full(2); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the ended live traces still count")
		}
	}
	if _, _, err := ts.s.Ingest(LiveSource{Name: "x", R: bytes.NewReader(nil)}); err != nil {
		t.Errorf("after two ended: %v", err)
	}
}
