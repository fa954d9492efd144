package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/cpel"
	"viewer/trace/cpel/cpeltest"
	"viewer/trace/synth"
)

// readClose reads a socket until it closes and returns the close error.
func readClose(t *testing.T, c *websocket.Conn) *websocket.CloseError {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("socket ended without a close message: %v", err)
		}
		return ce
	}
}

// waitSessions polls until the server counts n sessions.
func waitSessions(t *testing.T, ts *testServer, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ts.s.res.sessions() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions, want %d", ts.s.res.sessions(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSessionLimits checks the global and per-trace caps on websocket
// sessions: a session beyond them is closed at once with 1013 and a reason
// saying which, and a closed session's place is free again.
func TestSessionLimits(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), func(c *Config) { c.MaxSessions, c.MaxTraceSessions = 3, 2 })
	_, a, _ := ts.upload("a", synthFile(100, 1))
	_, b, _ := ts.upload("b", synthFile(100, 2))
	ts.waitReady(a)
	ts.waitReady(b)
	open := func(id string) *websocket.Conn {
		t.Helper()
		c, _, err := ts.dial(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a1, _ := open(a), open(a)
	waitSessions(t, ts, 2)
	if ce := readClose(t, open(a)); ce.Code != CloseTryAgainLater || !bytes.Contains([]byte(ce.Text), []byte("open in 2 tabs")) {
		t.Errorf("third session on one trace: %v", ce)
	}
	open(b)
	waitSessions(t, ts, 3)
	if ce := readClose(t, open(b)); ce.Code != CloseTryAgainLater || !bytes.Contains([]byte(ce.Text), []byte("3 viewer sessions")) {
		t.Errorf("fourth session: %v", ce)
	}
	a1.Close()
	waitSessions(t, ts, 2)
	c := open(a)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, msg, err := c.ReadMessage(); err != nil || !bytes.Contains(msg, []byte(`"ready"`)) {
		t.Errorf("a session after one closed: %s %v", msg, err)
	}
}

// TestDeleteClosesSessions checks that deleting a trace closes the sockets
// showing it with a code and reason.
func TestDeleteClosesSessions(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, _ := ts.upload("a", synthFile(1000, 1))
	ts.waitReady(id)
	c, _, err := ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitSessions(t, ts, 1)
	if resp, _ := ts.do("DELETE", "/api/traces/"+id, nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if ce := readClose(t, c); ce.Code != CloseTraceDeleted || ce.Text != "the trace was deleted" {
		t.Errorf("close: %v", ce)
	}
	waitSessions(t, ts, 0)
}

// TestReplyBuffersLetGo checks that sessions hold no reply buffers of
// their own and that the query slots' buffers grown by a large reply are
// let go once the slots are idle.
func TestReplyBuffersLetGo(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	ts.s.res.shrinkAfter = 50 * time.Millisecond
	_, id, _ := ts.upload("a", synth.File(400_000, 3, 64))
	ti := ts.waitReady(id)
	c, _, err := ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.WriteMessage(websocket.TextMessage, []byte(viewportRequest(1, ti.Stats.FirstNS, ti.Stats.LastNS+1, 8000, 64)))
	_, frame, _, _ := readUntilReply(t, c)
	if len(frame) <= keepReplyBytes {
		t.Fatalf("reply of %d bytes: not large enough to test", len(frame))
	}
	held := func() (n int) {
		var bufs []*replyBuffers
		for range cap(ts.s.res.slots) {
			b := <-ts.s.res.slots
			n += cap(b.frame)
			bufs = append(bufs, b)
		}
		for _, b := range bufs {
			ts.s.res.slots <- b
		}
		b := <-ts.s.res.big
		n += cap(b.frame)
		ts.s.res.big <- b
		return n
	}
	for deadline := time.Now().Add(5 * time.Second); held() > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the query slots hold %d bytes of buffers after a large reply", held())
		}
	}
}

// manyTypesCPEL is a CPEL file with n event types, one event of each.
func manyTypesCPEL(t testing.TB, n int) []byte {
	w := &cpeltest.Writer{Date: 1700000000}
	st := w.StringTable("FileStrtab")
	defs := make([]cpeltest.EventDef, n)
	for i := range defs {
		defs[i] = cpeltest.EventDef{Code: uint32(i), Name: "e" + strconv.Itoa(i), Format: ""}
	}
	w.EventDefs(st, defs)
	w.TrackDefs(st, []cpeltest.TrackDef{{ID: 0, Format: "worker %d"}})
	w.Events(st, 1_000_000, n, func(i int) cpeltest.Record {
		return cpeltest.Record{Ticks: uint64(i), Track: 0, Code: uint32(i), Datum: uint32(i)}
	})
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestManyTypes checks that one trace with 500,000 event types keeps the
// library page and listing small and fast, and that meta, the stats and
// the name tables list the types within the cap with one "other" entry.
func TestManyTypes(t *testing.T) {
	const types = 500_000
	data := manyTypesCPEL(t, types)
	ts := newTestServer(t, t.TempDir(), func(c *Config) {
		c.Formats = []trace.Format{synth.Format{}, cpel.Format{}}
		c.MaxUpload = 64 << 20
	})
	status, id, msg := ts.upload("types.cpel", data)
	if status != 201 {
		t.Fatalf("upload: %d %s", status, msg)
	}
	ts.waitReady(id)
	for _, path := range []string{"/", "/api/traces"} {
		ts.do("GET", path, nil) // warm
		start := time.Now()
		resp, b := ts.do("GET", path, nil)
		took := time.Since(start)
		t.Logf("%s: %d bytes in %v (file %d bytes)", path, len(b), took, len(data))
		if resp.StatusCode != 200 || len(b) > 1<<20 || took > 100*time.Millisecond {
			t.Errorf("%s: %d, %d bytes in %v; want ≤ 1 MiB in ≤ 100 ms", path, resp.StatusCode, len(b), took)
		}
	}
	resp, b := ts.do("GET", "/api/traces/"+id, nil)
	var ti TraceInfo
	if resp.StatusCode != 200 || json.Unmarshal(b, &ti) != nil || ti.Stats == nil {
		t.Fatalf("get: %d %.200s", resp.StatusCode, b)
	}
	counts := ti.Stats.Counts
	if len(counts) != MaxListedTypes || counts[len(counts)-1].Event != otherTypesName(types-MaxListedTypes+1) ||
		counts[len(counts)-1].Count != types-MaxListedTypes+1 {
		t.Errorf("stats: %d counts, last %+v", len(counts), counts[len(counts)-1])
	}
	resp, b = ts.do("GET", "/api/traces/"+id+"/meta", nil)
	var m metaJSON
	if resp.StatusCode != 200 || json.Unmarshal(b, &m) != nil {
		t.Fatalf("meta: %d %.200s", resp.StatusCode, b)
	}
	t.Logf("meta: %d bytes; GET /api/traces/{id}: %d counts", len(b), len(counts))
	if len(b) > 1<<20 || len(m.Types) != MaxListedTypes {
		t.Errorf("meta: %d bytes, %d types", len(b), len(m.Types))
	}
	o := m.Types[len(m.Types)-1]
	if o.ID != MaxListedTypes-1 || o.Other != types-MaxListedTypes+1 || o.Count != int64(o.Other) || o.Name != otherTypesName(o.Other) {
		t.Errorf("meta's other entry: %+v", o)
	}
	// The name tables end with the other entry, and reply items of the
	// folded types carry its id.
	c, _, err := ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.WriteMessage(websocket.TextMessage, []byte(viewportRequest(1, 0, types*1000, 4000, 1)))
	f, _, _, tables := readUntilReply(t, c)
	if len(tables) != 1 || len(tables[0].Types) != MaxListedTypes || tables[0].Types[MaxListedTypes-1] != o.Name {
		t.Fatalf("tables: %d", len(tables))
	}
	seen := false
	for _, tr := range f.Reply.Tracks {
		for _, ty := range tr.Type {
			if ty >= MaxListedTypes {
				t.Fatalf("reply item of type %d beyond the tables", ty)
			}
			seen = seen || ty == MaxListedTypes-1
		}
	}
	if !seen {
		t.Errorf("no reply item of the other types")
	}
}

// TestSearchCutOff checks that a search that cannot finish within the
// query timeout answers in time with the hits so far, flagged.
func TestSearchCutOff(t *testing.T) {
	const timeout = 100 * time.Millisecond
	ts := newTestServer(t, t.TempDir(), func(c *Config) { c.QueryTimeout = timeout })
	_, id, _ := ts.upload("a", synthFile(2_000_000, 4))
	ts.waitReady(id)
	start := time.Now()
	resp, b := ts.do("GET", "/api/traces/"+id+"/search?q="+"label+~+zzzz", nil)
	took := time.Since(start)
	var out searchReply
	if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil {
		t.Fatalf("search: %d %s", resp.StatusCode, b)
	}
	t.Logf("cut off after %v: %s", took, b)
	if !out.CutOff || out.Notice == "" || len(out.Hits) != 0 || took > timeout+time.Second {
		t.Errorf("search took %v: %s", took, b)
	}
	// A bad query is still a 400, at once.
	if resp, b := ts.do("GET", "/api/traces/"+id+"/search?q="+"%26%26", nil); resp.StatusCode != 400 {
		t.Errorf("bad query: %d %s", resp.StatusCode, b)
	}
	// A search that finishes is not flagged.
	resp, b = ts.do("GET", "/api/traces/"+id+"/search?q=Event1&limit=3", nil)
	if resp.StatusCode != 200 || bytes.Contains(b, []byte("cut_off")) {
		t.Errorf("quick search: %d %s", resp.StatusCode, b)
	}
}

// TestCPELProgress checks that a CPEL build's progress grows with the
// events read instead of jumping to 99.9 % (the reader reads every event
// section once when it opens the file).
func TestCPELProgress(t *testing.T) {
	var buf bytes.Buffer
	if err := cpeltest.Generate(&buf, 1_500_000, 1_000_000); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, t.TempDir(), func(c *Config) {
		c.Formats = []trace.Format{cpel.Format{}}
		c.MaxUpload = 64 << 20
	})
	ts.s.ix.every = time.Millisecond
	_, id, _ := ts.upload("a.cpel", buf.Bytes())
	c, _, err := ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	var reports []Progress
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
		if m.Type != "progress" {
			break
		}
		if m.State == StateIndexing && m.Events > 0 {
			reports = append(reports, m.Progress)
		}
	}
	if len(reports) < 2 {
		t.Skipf("%d progress reports: the build was too quick to tell", len(reports))
	}
	first := reports[0]
	if first.Percent >= 50 || float64(first.Events)/1_500_000*100 < first.Percent-20 {
		t.Errorf("first progress %+v of %d reports; want it near the share of events read", first, len(reports))
	}
}

// TestDeleteWhileInUse: a trace deleted while a request holds its index
// keeps the index open (queries on a closed index may read unmapped
// memory) until the request lets go, which closes it.
func TestDeleteWhileInUse(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, _ := ts.upload("a", synthFile(1000, 1))
	ts.waitReady(id)
	e, _ := ts.s.lib.Get(uuid.MustParse(id))
	j, release := ts.s.ix.acquire(e)
	idx := j.index()
	if resp, _ := ts.do("DELETE", "/api/traces/"+id, nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if j.index() != idx {
		t.Fatal("the index was closed while in use")
	}
	first, last := idx.x.Span()
	if _, err := idx.x.Query(context.Background(), render.Viewport{Start: first, End: last + 1, Width: 100, Tracks: idx.x.Tracks()}); err != nil {
		t.Fatalf("a query after the delete: %v", err)
	}
	release()
	if j.index() != nil {
		t.Fatal("the index is still open after the last user let go")
	}
}
