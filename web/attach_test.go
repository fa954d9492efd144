package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/nettrace"
	"viewer/trace/nettrace/ipc"
	"viewer/trace/nettrace/ipc/ipctest"
	"viewer/trace/tracetest"
)

// The tests of attaching to a .NET process run against ipctest's
// stand-in diagnostics server, which streams a shared .nettrace as the
// session's NetTrace stream at a controlled rate and holds its end (the
// rundown) until StopTracing.

// sharedNetTrace reads a shared .nettrace (tracetest.RealData).
func sharedNetTrace(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tracetest.RealData(t, "nettrace"), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// netTraceFormats configures a server that reads NetTrace and allows
// attaching to the processes of dir.
func netTraceFormats(dir string) func(*Config) {
	return func(c *Config) {
		c.Formats = []trace.Format{nettrace.Format{}}
		c.MaxUpload = 1 << 30
		c.AllowAttach = true
		c.DiagDir = dir
	}
}

// attachSetup starts a stand-in streaming cfg.Trace and a server allowed
// to attach to it.
func attachSetup(t *testing.T, cfg ipctest.Config) (*testServer, *ipctest.Server) {
	t.Helper()
	cfg.Dir = ipctest.TempDir(t)
	ts := newTestServer(t, t.TempDir(), netTraceFormats(cfg.Dir))
	return ts, ipctest.StartTest(t, cfg) // closed before the server
}

// attach posts a JSON attach request and returns the status and reply.
func (ts *testServer) attach(body string, hdr ...string) (int, map[string]string) {
	ts.t.Helper()
	hdr = append([]string{"Content-Type", "application/json"}, hdr...)
	resp, b := ts.do("POST", "/api/dotnet/attach", strings.NewReader(body), hdr...)
	var r map[string]string
	if err := json.Unmarshal(b, &r); err != nil {
		ts.t.Fatalf("attach reply %d %q: %v", resp.StatusCode, b, err)
	}
	return resp.StatusCode, r
}

func (ts *testServer) info(id string) TraceInfo {
	ts.t.Helper()
	_, b := ts.do("GET", "/api/traces/"+id, nil)
	var ti TraceInfo
	if err := json.Unmarshal(b, &ti); err != nil {
		ts.t.Fatal(err)
	}
	return ti
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// checkSession checks that the stand-in saw CollectTracing2 with want's
// providers, then StopTracing of the session it started, and that no
// session is left.
func checkSession(t *testing.T, srv *ipctest.Server, want []ipc.Provider) {
	t.Helper()
	waitFor(t, "the stand-in's session has ended", func() bool { return srv.Active() == 0 })
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].ID != ipctest.CollectTracing2 || reqs[1].ID != ipctest.StopTracing {
		t.Fatalf("requests %+v, want CollectTracing2 then StopTracing", reqs)
	}
	if reqs[1].SessionID != reqs[0].SessionID {
		t.Errorf("StopTracing of session %#x, the session started was %#x", reqs[1].SessionID, reqs[0].SessionID)
	}
	got := reqs[0].Providers
	if len(got) != len(want) {
		t.Fatalf("providers %+v, want %v", got, want)
	}
	for i, p := range want {
		if got[i].Name != p.Name || got[i].Keywords != p.Keywords || got[i].Level != uint32(p.Level) || got[i].FilterData != p.FilterData() {
			t.Errorf("provider %d: %+v, want %v", i, got[i], p)
		}
	}
}

// TestAttachLiveAndStop attaches to the stand-in streaming a shared
// .nettrace: the processes endpoint lists it, the trace is live and its
// event count grows while the stream goes on, Stop sends StopTracing of
// the session, and the stored trace is the whole stream, with the stats
// of the same file uploaded.
func TestAttachLiveAndStop(t *testing.T) {
	data := sharedNetTrace(t, "dotnetdiag/dotnet-5.0-SampleProfiler-webapp.golden.nettrace")
	ts, srv := attachSetup(t, ipctest.Config{Trace: data, Chunk: 32 << 10, Interval: 40 * time.Millisecond, Tail: 64 << 10})

	resp, b := ts.do("GET", "/api/dotnet/processes", nil)
	var list struct {
		Processes []processJSON
		Profiles  []profileJSON
	}
	if err := json.Unmarshal(b, &list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("processes: %d %s", resp.StatusCode, b)
	}
	pid := os.Getpid()
	if len(list.Processes) != 1 || list.Processes[0].PID != pid || list.Processes[0].Socket != srv.Socket() || list.Processes[0].CommandLine == "" {
		t.Errorf("processes %+v, want the stand-in's pid %d, socket %s and a command line", list.Processes, pid, srv.Socket())
	}
	var names []string
	for _, p := range list.Profiles {
		names = append(names, p.Name)
		if p.Description == "" {
			t.Errorf("profile %s has no description", p.Name)
		}
	}
	if !slices.Equal(names, []string{"cpu", "gc", "exceptions", "contention"}) {
		t.Errorf("profiles %v", names)
	}

	extra := `My-Source:0x5:verbose:Interval="1;2",Other-Source`
	body, _ := json.Marshal(map[string]any{"pid": pid, "profiles": []string{"cpu", "gc"}, "providers": extra})
	status, r := ts.attach(string(body))
	if status != http.StatusCreated || r["id"] == "" {
		t.Fatalf("attach: %d %v", status, r)
	}
	id := r["id"]
	want, err := ipc.Select([]string{"cpu", "gc"}, []ipc.Provider{
		{Name: "My-Source", Keywords: 5, Level: ipc.LevelVerbose, Args: []ipc.Arg{{Key: "Interval", Value: "1;2"}}},
		{Name: "Other-Source", Level: ipc.LevelInformational},
	})
	if err != nil {
		t.Fatal(err)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || r["session"] != "0x"+strconv.FormatUint(reqs[0].SessionID, 16) {
		t.Errorf("the reply names session %q; the stand-in's requests %+v", r["session"], reqs)
	}

	// Live, and growing.
	var counts []int64
	waitFor(t, "the event count has grown three times", func() bool {
		ti := ts.info(id)
		if ti.State == StateQueued {
			return false // the indexing job has not begun yet (a busy machine)
		}
		if ti.State != StateLive || !ti.Live {
			t.Fatalf("the attached trace is %s (live %v) before Stop: %s", ti.State, ti.Live, ti.Error)
		}
		if n := ti.Progress.Events; n > 0 && (len(counts) == 0 || n > counts[len(counts)-1]) {
			counts = append(counts, n)
		}
		return len(counts) >= 3
	})
	if sent := srv.Sent(); sent >= int64(len(data)) {
		t.Fatalf("the stand-in sent all %d bytes before Stop", sent)
	}
	t.Logf("events while live: %v", counts)

	if resp, b := ts.do("POST", "/api/traces/"+id+"/stop", nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("stop: %d %s", resp.StatusCode, b)
	}
	ti := ts.waitReady(id)
	checkSession(t, srv, want)
	if ti.Live || !strings.HasPrefix(ti.Name, processName(list.Processes[0].CommandLine)+"_"+strconv.Itoa(pid)+"_") || ti.Format != "nettrace" {
		t.Errorf("stored as %+v", ti.Entry)
	}
	got, err := os.ReadFile(filepath.Join(ts.dir, tracesDir, id, traceFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("stored %d bytes, the stream was %d: not the same bytes", len(got), len(data))
	}
	other := newTestServer(t, t.TempDir(), netTraceFormats(""))
	_, uid, _ := other.upload("file.nettrace", data)
	up := other.waitReady(uid)
	a, _ := json.Marshal(ti.Stats)
	u, _ := json.Marshal(up.Stats)
	if !bytes.Equal(a, u) {
		t.Errorf("attached trace's stats\n%s\nthe uploaded file's\n%s", a, u)
	}
	if ti.Stats.Truncated || ti.Stats.Events == 0 {
		t.Errorf("stats %+v, want a whole trace", ti.Stats)
	}
}

// TestAttachDiesMidStream: a process that dies mid-stream leaves a
// stored trace, truncated, whose stats say why.
func TestAttachDiesMidStream(t *testing.T) {
	data := sharedNetTrace(t, "perfview/only_managed_samples.nettrace")
	cut := len(data) / 2
	ts, srv := attachSetup(t, ipctest.Config{Trace: data, Chunk: 8 << 10, Interval: 2 * time.Millisecond, DieAfter: cut})
	status, r := ts.attach(`{"pid":` + strconv.Itoa(os.Getpid()) + `,"name":"dies.nettrace"}`)
	if status != http.StatusCreated {
		t.Fatalf("attach: %d %v", status, r)
	}
	ti := ts.waitReady(r["id"])
	if ti.Live || ti.Size != int64(cut) || ti.Name != "dies.nettrace" {
		t.Errorf("stored %+v, want %d bytes", ti.Entry, cut)
	}
	if ti.Stats == nil || !ti.Stats.Truncated || ti.Stats.Error == "" || ti.Stats.Events == 0 {
		t.Errorf("stats %+v, want events, truncated and a notice", ti.Stats)
	} else {
		t.Logf("notice: %s", ti.Stats.Error)
	}
	if n := srv.Active(); n != 0 {
		t.Errorf("%d sessions still running", n)
	}
	if reqs := srv.Requests(); len(reqs) != 1 {
		t.Errorf("requests %+v, want the CollectTracing2 alone (the stream ended by itself)", reqs)
	}
}

// TestAttachServerClose closes the server during a session: the viewer
// stops the session (StopTracing), and the recording, with the rundown
// the runtime sends then, is stored.
func TestAttachServerClose(t *testing.T) {
	data := sharedNetTrace(t, "msperftools/HelloWorld_GC_Threads_Exception.nettrace")
	ts, srv := attachSetup(t, ipctest.Config{Trace: data, Chunk: 4 << 10, Interval: 20 * time.Millisecond, Tail: 16 << 10})
	status, r := ts.attach(`{"pid":` + strconv.Itoa(os.Getpid()) + `,"profiles":["exceptions"]}`)
	if status != http.StatusCreated {
		t.Fatalf("attach: %d %v", status, r)
	}
	waitFor(t, "the stand-in has sent 16 KiB", func() bool { return srv.Sent() >= 16<<10 })
	ts.close()
	want, _ := ipc.Select([]string{"exceptions"}, nil)
	checkSession(t, srv, want)
	lib, err := OpenLibrary(ts.dir, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	id, _ := parseTraceID(r["id"])
	e, ok := lib.Get(id)
	if !ok || e.Live || e.Size != int64(len(data)) {
		t.Errorf("after Close the library holds %+v (%v), want the whole stream, %d bytes, stored", e, ok, len(data))
	}
}

// TestAttachStopRefused: a runtime that refuses StopTracing gets its
// connection closed, which ends the session (the stand-in sees the
// client hang up), and what arrived is stored.
func TestAttachStopRefused(t *testing.T) {
	data := sharedNetTrace(t, "msperftools/HelloWorld_GC_Threads_Exception.nettrace")
	ts, srv := attachSetup(t, ipctest.Config{Trace: data, Chunk: 4 << 10, Interval: 20 * time.Millisecond,
		Refuse: []uint16{ipctest.SetEventPipe<<8 | ipctest.StopTracing}})
	status, r := ts.attach(`{"pid":` + strconv.Itoa(os.Getpid()) + `}`)
	if status != http.StatusCreated {
		t.Fatalf("attach: %d %v", status, r)
	}
	waitFor(t, "the stand-in has sent 16 KiB", func() bool { return srv.Sent() >= 16<<10 })
	if resp, b := ts.do("POST", "/api/traces/"+r["id"]+"/stop", nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("stop: %d %s", resp.StatusCode, b)
	}
	select {
	case <-srv.Disconnected():
	case <-time.After(30 * time.Second):
		t.Fatal("the viewer did not hang up on a session whose StopTracing was refused")
	}
	waitFor(t, "the session has ended", func() bool { return srv.Active() == 0 })
	ti := ts.waitReady(r["id"])
	if ti.Live || ti.Size == 0 || ti.Size >= int64(len(data)) || ti.Stats == nil || !ti.Stats.Truncated {
		t.Errorf("stored %+v, stats %+v: want a trace cut short", ti.Entry, ti.Stats)
	}
}

// TestAttachRefusals: without AllowAttach (a server beyond loopback) both
// endpoints say why and which flag allows them; a cross-origin attach is
// refused; the runtime's refusal reaches the user as it is; bad requests
// say what is wrong. None starts a session.
func TestAttachRefusals(t *testing.T) {
	dir := ipctest.TempDir(t)
	srv := ipctest.StartTest(t, ipctest.Config{Dir: dir, Trace: []byte("x"), HResult: ipc.ENotSupported})
	pid := strconv.Itoa(os.Getpid())

	off := newTestServer(t, t.TempDir(), func(c *Config) { c.DiagDir = dir })
	for _, m := range []string{"GET /api/dotnet/processes", "POST /api/dotnet/attach"} {
		method, path, _ := strings.Cut(m, " ")
		resp, b := off.do(method, path, strings.NewReader(`{"pid":`+pid+`}`), "Content-Type", "application/json")
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "--allow-attach") || !strings.Contains(string(b), "loopback") {
			t.Errorf("%s without AllowAttach: %d %s, want 403 naming --allow-attach", m, resp.StatusCode, b)
		}
	}

	ts := newTestServer(t, t.TempDir(), netTraceFormats(dir))
	for _, h := range [][]string{{"Origin", "http://evil.example"}, {"Sec-Fetch-Site", "cross-site"}} {
		if status, r := ts.attach(`{"pid":`+pid+`}`, h...); status != http.StatusForbidden {
			t.Errorf("attach with %s: %d %v, want 403", h, status, r)
		}
	}
	form := url.Values{"pid": {pid}, "profiles": {"cpu"}}.Encode()
	if resp, b := ts.do("POST", "/api/dotnet/attach", strings.NewReader(form), "Content-Type", "application/x-www-form-urlencoded", "Origin", "http://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin form attach: %d %s", resp.StatusCode, b)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Fatalf("refused requests reached the process: %+v", reqs)
	}

	for _, c := range []struct {
		body   string
		status int
		msg    string
	}{
		{`{"pid":` + pid + `,"profiles":["cpu"]}`, http.StatusBadGateway, "the runtime refused CollectTracing2: error 0x80131515 (not supported)"},
		{`{"pid":` + pid + `,"profiles":["nope"]}`, http.StatusBadRequest, `unknown profile "nope"`},
		{`{"pid":` + pid + `,"providers":"X:zz"}`, http.StatusBadRequest, `keywords "zz" are not a hex number`},
		{`{"pid":0}`, http.StatusBadRequest, "pid"},
		{`{"pid":999999999}`, http.StatusNotFound, "no process 999999999"},
		{`{"pid":`, http.StatusBadRequest, "JSON"},
	} {
		status, r := ts.attach(c.body)
		if status != c.status || !strings.Contains(r["error"], c.msg) {
			t.Errorf("attach %s: %d %q, want %d saying %q", c.body, status, r["error"], c.status, c.msg)
		}
	}
	// A form is read as JSON is.
	form = url.Values{"pid": {pid}, "profiles": {"gc,exceptions"}, "providers": {"Extra:0x1:5"}}.Encode()
	resp, b := ts.do("POST", "/api/dotnet/attach", strings.NewReader(form), "Content-Type", "application/x-www-form-urlencoded")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "not supported") {
		t.Errorf("form attach: %d %s", resp.StatusCode, b)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests %+v, want the two CollectTracing2 that got that far", reqs)
	}
	var names []string
	for _, p := range reqs[1].Providers {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{ipc.RuntimeProvider, "Extra"}) || reqs[1].Providers[0].Keywords != ipc.KeywordGC|ipc.KeywordException {
		t.Errorf("the form's session asked for %+v", reqs[1].Providers)
	}
	if ps := ts.s.Library().List(); len(ps) != 0 {
		t.Errorf("refused attaches left traces: %+v", ps)
	}
}

func TestSplitProviders(t *testing.T) {
	for in, want := range map[string][]string{
		"":                                nil,
		" A , B:1\nC:0x2:4\r\n,,":         {"A", "B:1", "C:0x2:4"},
		`A:1:2:k="x,y";j=1, B`:            {`A:1:2:k="x,y";j=1`, "B"},
		`A:1:2:k="x` + "\n" + `y",B`:      {`A:1:2:k="x` + "\n" + `y"`, "B"},
		"Microsoft-Windows-DotNETRuntime": {"Microsoft-Windows-DotNETRuntime"},
	} {
		if got := splitProviders(in); !slices.Equal(got, want) {
			t.Errorf("splitProviders(%q) = %q, want %q", in, got, want)
		}
	}
}
