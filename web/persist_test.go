package web

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"viewer/render"
)

// logBuffer is an io.Writer for a test server's log, safe for
// concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func withLog(l *logBuffer) func(*Config) {
	return func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(l, nil)) }
}

// waitFile waits until name exists.
func waitFile(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(name); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventJSON polls an event's details until the reader pass has ended.
func eventJSON(t *testing.T, ts *testServer, id, ev string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, b := ts.do("GET", "/api/traces/"+id+"/events/"+ev, nil)
		if resp.StatusCode == http.StatusOK {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
		again := resp.StatusCode == http.StatusConflict || // still being indexed
			resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" // still being read
		if !again || time.Now().After(deadline) {
			t.Fatalf("event %s: %d %s", ev, resp.StatusCode, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIndexFileReopen: an indexed trace gets an index file; after a
// restart the trace is ready from it (no indexing) with the same
// statistics and event details; a damaged index file is removed and
// the trace indexed again, which writes a good one; a temporary file a
// crash left is removed.
func TestIndexFileReopen(t *testing.T) {
	dir := t.TempDir()
	var log1 logBuffer
	ts := newTestServer(t, dir, withLog(&log1))
	status, id, msg := ts.upload("demo.synth", synthFile(100000, 3))
	if status != http.StatusCreated {
		t.Fatalf("upload: %d %s", status, msg)
	}
	ti := ts.waitReady(id)
	name := filepath.Join(dir, tracesDir, id, indexFileName)
	waitFile(t, name)
	want := eventJSON(t, ts, id, "3:100")
	ts.close()
	if strings.Contains(log1.String(), "index opened from its file") {
		t.Fatal("the first open used an index file")
	}

	// A crash while writing left a temporary file.
	tmp := filepath.Join(dir, tracesDir, id, ".index-123.tmp")
	if err := os.WriteFile(tmp, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log2 logBuffer
	ts2 := newTestServer(t, dir, withLog(&log2))
	got := eventJSON(t, ts2, id, "3:100") // opens the trace
	ti2 := ts2.waitReady(id)
	if !strings.Contains(log2.String(), "index opened from its file") {
		t.Fatalf("not opened from the index file; log:\n%s", log2.String())
	}
	if ti2.Stats == nil || ti.Stats == nil || ti2.Stats.Events != ti.Stats.Events || ti2.Stats.LastNS != ti.Stats.LastNS {
		t.Fatalf("stats after reopening %+v, want %+v", ti2.Stats, ti.Stats)
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Fatalf("event after reopening\n%s, want\n%s", g, w)
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Fatal("the leftover temporary file is still there")
	}
	ts2.close()

	// A damaged file.
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var log3 logBuffer
	ts3 := newTestServer(t, dir, withLog(&log3))
	got = eventJSON(t, ts3, id, "3:100")
	ts3.waitReady(id)
	if !strings.Contains(log3.String(), "index file not used") || strings.Contains(log3.String(), "index opened from its file") {
		t.Fatalf("a damaged index file was not refused; log:\n%s", log3.String())
	}
	if mustJSON(t, got) != mustJSON(t, want) {
		t.Fatal("event after rebuilding differs")
	}
	ts3.close() // waits for the new file
	e, _ := ts3.s.lib.Get(uuid.MustParse(id))
	_, key, _ := ts3.s.ix.indexFile(e)
	x, err := render.OpenFile(name, key)
	if err != nil {
		t.Fatalf("the rebuilt index file: %v", err)
	}
	x.Close()
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDetailsWhileReading: a trace reopened from its index file answers
// event details 503 with a Retry-After while its reader pass cannot run
// (every build slot is taken here), and the event once it has run.
func TestDetailsWhileReading(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, dir, nil)
	status, id, msg := ts.upload("demo.synth", synthFile(20000, 3))
	if status != http.StatusCreated {
		t.Fatalf("upload: %d %s", status, msg)
	}
	ts.waitReady(id)
	waitFile(t, filepath.Join(dir, tracesDir, id, indexFileName))
	want := eventJSON(t, ts, id, "3:100")
	ts.close()

	ts2 := newTestServer(t, dir, nil)
	gate := make(chan struct{})
	ts2.s.ix.persist.passGate = gate
	ts2.do("GET", "/api/traces/"+id+"/meta", nil) // opens the index file
	ts2.waitReady(id)
	resp, b := ts2.do("GET", "/api/traces/"+id+"/events/3:100", nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(b), "still being read") {
		t.Fatalf("details before the reader pass: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	close(gate)
	if got := eventJSON(t, ts2, id, "3:100"); mustJSON(t, got) != mustJSON(t, want) {
		t.Fatalf("event after the reader pass\n%v, want\n%v", got, want)
	}
}
