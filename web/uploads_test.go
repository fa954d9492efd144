package web

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowBody delivers one byte per tick until closed.
type slowBody struct {
	tick time.Duration
	stop chan struct{}
}

func (b *slowBody) Read(p []byte) (int, error) {
	select {
	case <-b.stop:
		return 0, io.EOF
	case <-time.After(b.tick):
	}
	p[0] = 'x'
	return 1, nil
}

// TestUploadIdleDeadline: a body that trickles a byte every 50 ms is cut
// off by the idle deadline (16 KiB per UploadIdle) with 408, and leaves
// nothing staged.
func TestUploadIdleDeadline(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, dir, func(c *Config) { c.UploadIdle = 300 * time.Millisecond })
	body := &slowBody{tick: 50 * time.Millisecond, stop: make(chan struct{})}
	defer close(body.stop)
	req, _ := http.NewRequest("POST", ts.hs.URL+"/api/traces?name=slow", body)
	start := time.Now()
	resp, err := ts.hs.Client().Do(req)
	took := time.Since(start)
	if err != nil {
		// The server may close the connection before the client reads
		// the reply; what matters is that it did so promptly.
		t.Logf("upload error after %v: %v", took, err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "stalled") {
			t.Fatalf("slow upload: %d %s, want 408 'stalled'", resp.StatusCode, b)
		}
	}
	if took > 5*time.Second {
		t.Fatalf("slow upload cut off after %v, want about 300 ms", took)
	}
	t.Logf("slow upload cut off after %v", took)
	deadline := time.Now().Add(5 * time.Second)
	for len(libraryFiles(t, dir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if f := libraryFiles(t, dir); len(f) > 0 {
		t.Fatalf("the stalled upload left %v", f)
	}
}

// TestUploadCap: with 50 uploads being received, the 51st gets 429 and
// a JSON message; once one ends, uploads are accepted again.
func TestUploadCap(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), func(c *Config) { c.UploadIdle = time.Minute })
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range DefaultMaxUploads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", ts.hs.URL+"/api/traces?name=held", &slowBody{tick: time.Second, stop: stop})
			if resp, err := ts.hs.Client().Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(ts.s.uploads) < DefaultMaxUploads {
		if time.Now().After(deadline) {
			t.Fatalf("%d uploads under way, want %d", len(ts.s.uploads), DefaultMaxUploads)
		}
		time.Sleep(10 * time.Millisecond)
	}
	status, _, msg := ts.upload("51st", synthFile(100, 1))
	if status != http.StatusTooManyRequests || !strings.Contains(msg, "uploads") {
		t.Fatalf("51st upload: %d %q, want 429", status, msg)
	}
	close(stop)
	wg.Wait()
	if status, _, msg := ts.upload("after", synthFile(100, 1)); status != http.StatusCreated {
		t.Fatalf("upload after the others ended: %d %s", status, msg)
	}
}

// TestUploadDiskCheck: an upload that would leave less than MinFreeDisk
// is refused before anything is staged, as "disk full" with no path.
func TestUploadDiskCheck(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, dir, func(c *Config) { c.MinFreeDisk = 1 << 60 })
	status, _, msg := ts.upload("big", synthFile(100, 1))
	if status != http.StatusInsufficientStorage || !strings.Contains(msg, "disk full") || strings.Contains(msg, dir) {
		t.Fatalf("upload on a full disk: %d %q, want 507 'disk full' without the path", status, msg)
	}
}

// TestDiskFullIndexRetried mounts a small tmpfs as the data directory,
// fills it, and checks that the index build fails with "disk full" (no
// server path), then, once space is freed, that the same trace indexes
// on the next request without a restart. It needs root (mount) and does
// not run in CI.
func TestDiskFullIndexRetried(t *testing.T) {
	if os.Getenv("CI") != "" {
		t.Skip("skipping: mounts a tmpfs, not in CI")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("skipping: cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { // after the servers' cleanups, before TempDir's
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount: %v %s", err, out)
		}
	})

	// Store and index the trace once, then forget its index cache and
	// index file.
	data := synthFile(200_000, 3)
	noDisk := func(c *Config) { c.MinFreeDisk = -1 } // let the writes fail
	ts := newTestServer(t, dir, noDisk)
	status, id, msg := ts.upload("full.synth", data)
	if status != http.StatusCreated {
		t.Fatalf("upload: %d %s", status, msg)
	}
	ti := ts.waitReady(id)
	ts.close()
	if err := os.Remove(filepath.Join(dir, tracesDir, id, statsFile)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, tracesDir, id, indexFileName))
	// Fill the disk.
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()

	ts = newTestServer(t, dir, noDisk)
	failed := waitState(t, ts, id, StateFailed)
	if !strings.Contains(failed.Error, "disk full") || strings.Contains(failed.Error, dir) {
		t.Fatalf("index on a full disk failed with %q, want 'disk full' without the path", failed.Error)
	}
	t.Logf("full disk: %s", failed.Error)
	// While the disk is full, the next request tries again and fails again.
	resp, b := ts.do("GET", "/api/traces/"+id+"/meta", nil)
	if resp.StatusCode == http.StatusOK {
		t.Fatalf("meta on a full disk: %d %s", resp.StatusCode, b)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// The next request retries: no restart needed.
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, b := ts.do("GET", "/api/traces/"+id+"/meta", nil)
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("meta after freeing space: %d %s", resp.StatusCode, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	again := ts.waitReady(id)
	if again.Stats.Events != ti.Stats.Events {
		t.Fatalf("%d events after the retry, %d before", again.Stats.Events, ti.Stats.Events)
	}
}

// waitState polls until the trace's index reaches state.
func waitState(t *testing.T, ts *testServer, id string, state State) TraceInfo {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, b := ts.do("GET", "/api/traces/"+id, nil)
		var ti TraceInfo
		if err := json.Unmarshal(b, &ti); err != nil {
			t.Fatal(err)
		}
		if ti.State == state {
			return ti
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: %+v, want state %s", id, ti, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRetryAPI: POST /api/traces/{id}/retry is refused for an index that
// has not failed.
func TestRetryAPI(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, _ := ts.upload("a.synth", synthFile(1000, 1))
	ts.waitReady(id)
	if resp, b := ts.do("POST", "/api/traces/"+id+"/retry", nil); resp.StatusCode != http.StatusConflict {
		t.Fatalf("retry of a ready trace: %d %s", resp.StatusCode, b)
	}
}

// TestTokenAuth: with Config.Token every route answers 401 without the
// token, and works with it as a bearer header, as ?token= (which sets an
// HttpOnly SameSite=Strict cookie) and as that cookie; without a token
// (the loopback default) nothing asks for one.
func TestTokenAuth(t *testing.T) {
	const token = "s3cret-token"
	ts := newTestServer(t, t.TempDir(), func(c *Config) { c.Token = token })
	// Seed a trace through the API with the token.
	resp, b := ts.do("POST", "/api/traces?name=a.synth", bytes.NewReader(synthFile(1000, 1)), "Authorization", "Bearer "+token)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload with the token: %d %s", resp.StatusCode, b)
	}
	var up struct{ ID string }
	json.Unmarshal(b, &up)
	routes := []struct{ method, path string }{
		{"GET", "/"},
		{"GET", "/t/" + up.ID},
		{"GET", "/static/viewer.js"},
		{"GET", "/api/traces"},
		{"GET", "/api/traces/" + up.ID},
		{"GET", "/api/traces/" + up.ID + "/meta"},
		{"GET", "/api/traces/" + up.ID + "/search?q=x"},
		{"GET", "/api/traces/" + up.ID + "/ws"},
		{"POST", "/api/traces"},
		{"POST", "/upload"},
		{"DELETE", "/api/traces/" + up.ID},
		{"POST", "/t/" + up.ID + "/delete"},
		{"POST", "/api/traces/" + up.ID + "/retry"},
		{"GET", "/no/such/page"},
	}
	for _, r := range routes {
		for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Cookie", "viewer_token=wrong"}} {
			resp, b := ts.do(r.method, r.path+"?token=wrong", nil, hdr...)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s %v without the token: %d %s", r.method, r.path, hdr, resp.StatusCode, b)
			}
		}
	}
	ts.waitReady2(up.ID, token)
	for _, r := range routes[:7] {
		resp, b := ts.do(r.method, r.path, nil, "Authorization", "Bearer "+token)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s with the token: %d %s", r.method, r.path, resp.StatusCode, b)
		}
	}
	// The websocket, with the token as a bearer header and as the cookie.
	if c, resp, err := ts.dial(up.ID, http.Header{"Authorization": {"Bearer " + token}}); err != nil {
		t.Errorf("websocket with the token: %v %v", err, resp)
	} else {
		c.Close()
	}
	if _, resp, err := ts.dial(up.ID, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("websocket without the token: %v %v, want 401", err, resp)
	}
	// ?token= on a page sets the cookie and redirects to the URL without it.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(ts.hs.URL + "/t/" + up.ID + "?token=" + token + "&view=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/t/"+up.ID+"?view=1" {
		t.Fatalf("?token=: %d to %q, want 303 to the URL without it", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		cookie = c
	}
	if cookie == nil || cookie.Value != token || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v, want HttpOnly SameSite=Strict with the token", cookie)
	}
	cookieHdr := cookie.Name + "=" + cookie.Value
	for _, r := range routes[:7] {
		if resp, b := ts.do(r.method, r.path, nil, "Cookie", cookieHdr); resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s with the cookie: %d %s", r.method, r.path, resp.StatusCode, b)
		}
	}
	if c, resp, err := ts.dial(up.ID, http.Header{"Cookie": {cookieHdr}}); err != nil {
		t.Errorf("websocket with the cookie: %v %v", err, resp)
	} else {
		c.Close()
	}

	// The loopback default: no token asked.
	open := newTestServer(t, t.TempDir(), nil)
	for _, p := range []string{"/", "/api/traces", "/static/viewer.js"} {
		if resp, b := open.do("GET", p, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s without a token on the default server: %d %s", p, resp.StatusCode, b)
		}
	}
}

// waitReady2 is waitReady with a bearer token.
func (ts *testServer) waitReady2(id, token string) {
	ts.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, b := ts.do("GET", "/api/traces/"+id, nil, "Authorization", "Bearer "+token)
		var ti TraceInfo
		json.Unmarshal(b, &ti)
		if ti.State == StateReady {
			return
		}
		if time.Now().After(deadline) {
			ts.t.Fatalf("trace %s not ready: %s", id, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNamesAndCSP: stored names lose control and bidi override
// characters; the CSP names the Host only when its port is a number.
func TestNamesAndCSP(t *testing.T) {
	for in, want := range map[string]string{
		"a\u202Egpj.exe":    "a\uFFFDgpj.exe",
		"x\x1b[31mred\n.ev": "x\uFFFD[31mred\uFFFD.ev",
		"ok\u2067.cpel":     "ok\uFFFD.cpel",
		"plain name.data":   "plain name.data",
	} {
		if got := cleanName(in); got != want {
			t.Errorf("cleanName(%q) = %q, want %q", in, got, want)
		}
	}
	for host, want := range map[string]string{
		"localhost:8484":               "ws://localhost:8484 wss://localhost:8484",
		"127.0.0.1:1":                  "ws://127.0.0.1:1",
		"[::1]:80":                     "ws://[::1]:80",
		"localhost:1; script-src *":    "",
		"localhost:80 'unsafe-inline'": "",
		"evil'host":                    "",
		"LOCALHOST":                    "ws://localhost wss://localhost",
	} {
		csp := contentSecurityPolicy(host)
		if want == "" {
			if strings.Contains(csp, "ws://") || strings.Count(csp, "script-src") != 1 {
				t.Errorf("CSP for Host %q: %s", host, csp)
			}
		} else if !strings.Contains(csp, want) {
			t.Errorf("CSP for Host %q: %s, want %s", host, csp, want)
		}
	}
	ts := newTestServer(t, t.TempDir(), nil)
	resp, _ := ts.do("GET", "/", nil, "Host", "localhost:1; script-src *")
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("Host with a bad port: %d, want 421", resp.StatusCode)
	}
}

// TestStatsTempsCleared: .stats-* files a crash left beside a trace are
// removed when the library opens.
func TestStatsTempsCleared(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, dir, nil)
	_, id, _ := ts.upload("a.synth", synthFile(1000, 1))
	ts.waitReady(id)
	ts.close()
	left := filepath.Join(dir, tracesDir, id, ".stats-123")
	if err := os.WriteFile(left, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	newTestServer(t, dir, nil)
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("%s survived a restart: %v", left, err)
	}
}
