package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"viewer/render/wire"
	"viewer/web"
)

// perfRecords checks that perf can record tracepoints here; where it
// cannot, the test is skipped saying why and what to change, and fails
// under CI, whose machine must allow it.
func perfRecords(t *testing.T) {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("CI") != "" {
		fail = t.Fatalf
	}
	if _, err := exec.LookPath("perf"); err != nil {
		fail("perf is not installed (apt-get install linux-perf): %v", err)
	}
	out, err := exec.Command("perf", "record", "-q", "-o", "/dev/null", "-e", "sched:sched_switch", "--", "true").CombinedOutput()
	if err != nil {
		fail("perf cannot record sched:sched_switch here (%v): %s\n%s", err, bytes.TrimSpace(out),
			"run as root, or lower /proc/sys/kernel/perf_event_paranoid and make /sys/kernel/tracing readable")
	}
}

// TestRecordLive runs `viewer record` around a short multi-process
// workload: while it runs the API reports a growing event count and a
// session in chase mode gets frames whose view advances; the stored trace
// has, per event type, the counts `perf script` finds in the same file.
func TestRecordLive(t *testing.T) {
	perfRecords(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	workload := `for i in $(seq 30); do ls -R /usr/share/doc >/dev/null 2>&1; (sleep 0.01; cat /proc/self/status >/dev/null) & sleep 0.1; done; wait`
	go func() {
		done <- run(ctx, []string{"record", "--port", "0", "--data", dir, "--exit", "--", "sh", "-c", workload}, &stdout, &stderr)
	}()
	re := regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/t/([0-9a-f-]{36})`)
	var base, id string
	for deadline := time.Now().Add(20 * time.Second); id == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no trace URL printed; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			base, id = m[1], m[2]
		}
	}

	// The API's event count grows while the workload runs.
	var apiCounts []int64
	for deadline := time.Now().Add(20 * time.Second); len(apiCounts) < 3 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var ti web.TraceInfo
		resp, err := http.Get(base + "/api/traces/" + id)
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&ti)
		resp.Body.Close()
		if !ti.Live {
			break
		}
		if n := ti.Progress.Events; n > 0 && (len(apiCounts) == 0 || n > apiCounts[len(apiCounts)-1]) {
			apiCounts = append(apiCounts, n)
		}
	}
	if len(apiCounts) < 3 {
		t.Errorf("GET /api/traces/{id} while recording: event counts %v, want them growing", apiCounts)
	}

	// A chasing session, and the count growing.
	u := "ws" + strings.TrimPrefix(base, "http") + "/api/traces/" + id + "/ws"
	c, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := `{"type":"viewport","seq":1,"start":"0","end":"500000000","width":300,"tracks":[],"types":[],"chase":true}`
	if err := c.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
		t.Fatal(err)
	}
	var starts []int64
	var counts []int64
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	for len(starts) < 3 || len(counts) < 3 {
		typ, b, err := c.ReadMessage()
		if err != nil {
			break
		}
		if typ == websocket.TextMessage {
			var m struct {
				Type   string
				Events int64
				Ended  bool
			}
			json.Unmarshal(b, &m)
			if m.Type == "live" && !m.Ended && (len(counts) == 0 || m.Events > counts[len(counts)-1]) {
				counts = append(counts, m.Events)
			}
			continue
		}
		if f, err := wire.Decode(b); err == nil && f.Kind == wire.KindReply && (len(starts) == 0 || f.Reply.Start > starts[len(starts)-1]) {
			starts = append(starts, f.Reply.Start)
		}
	}
	if len(starts) < 3 || len(counts) < 3 {
		t.Errorf("while recording: chase frames starting at %v, event counts %v; want both to advance", starts, counts)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("record: %v; stderr %s", err, stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("record did not exit; stderr %s", stderr.String())
	}
	stored := filepath.Join(dir, "traces", id, "trace")
	got := typeCounts(t, stored)
	want := perfScriptCounts(t, stored)
	if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stored trace's counts per event\n%v\nperf script on the same file\n%v", got, want)
	}
	t.Logf("API counts %v; %d chase frames, counts %v; events by type %v", apiCounts, len(starts), counts, got)
}

// typeCounts returns `viewer stats`' event counts by "system:name".
func typeCounts(t *testing.T, name string) map[string]int64 {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"stats", "--json", name}, &out, &out); err != nil {
		t.Fatalf("stats: %v: %s", err, out.String())
	}
	var st struct {
		Counts []struct {
			Provider, Event string
			Count           int64
		}
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for _, c := range st.Counts {
		m[c.Provider+":"+c.Event] += c.Count
	}
	return m
}

// perfScriptCounts returns the events `perf script` prints, by name.
func perfScriptCounts(t *testing.T, name string) map[string]int64 {
	t.Helper()
	out, err := exec.Command("perf", "script", "-i", name, "-F", "event").Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	m := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if ev := strings.TrimSuffix(strings.TrimSpace(sc.Text()), ":"); ev != "" {
			m[ev]++
		}
	}
	return m
}

// TestServeStdin: `perf record -o - … | viewer serve -` stores exactly the
// bytes perf wrote, and the stored trace dumps as the same recording
// saved to a file and uploaded does.
func TestServeStdin(t *testing.T) {
	perfRecords(t)
	dir := t.TempDir()
	saved := filepath.Join(t.TempDir(), "perf.data")
	f, err := os.Create(saved)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin := os.Stdin
	os.Stdin = pr
	defer func() { os.Stdin = stdin }()
	perf := exec.Command("perf", "record", "-q", "-o", "-", "-k", "monotonic", "-m", "16",
		"-e", "sched:sched_switch", "-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit",
		"--", "sh", "-c", `for i in $(seq 10); do ls /usr/share >/dev/null; sleep 0.05; done`)
	perf.Stdout = io.MultiWriter(pw, f)
	if err := perf.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--port", "0", "--data", dir, "-"}, &stdout, &stderr) }()
	if err := perf.Wait(); err != nil {
		t.Fatalf("perf record: %v", err)
	}
	pw.Close()
	f.Close()
	re := regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/t/([0-9a-f-]{36})`)
	var base, id string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(stdout.String()); m != nil && id == "" {
			base, id = m[1], m[2]
		}
		if id != "" {
			var ti web.TraceInfo
			if resp, err := http.Get(base + "/api/traces/" + id); err == nil {
				json.NewDecoder(resp.Body).Decode(&ti)
				resp.Body.Close()
			}
			if ti.State == web.StateReady && !ti.Live {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the piped trace was not stored; stdout %q stderr %q", stdout.String(), stderr.String())
		}
	}
	cancel()
	<-done
	stored := filepath.Join(dir, "traces", id, "trace")
	a, _ := os.ReadFile(stored)
	b, _ := os.ReadFile(saved)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("stored %d bytes, perf wrote %d: not the same bytes", len(a), len(b))
	}
	var da, db bytes.Buffer
	if err := run(context.Background(), []string{"dump", stored}, &da, &da); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"dump", saved}, &db, &db); err != nil {
		t.Fatal(err)
	}
	if da.Len() == 0 || !bytes.Equal(da.Bytes(), db.Bytes()) {
		t.Errorf("viewer dump of the piped trace (%d bytes) differs from the saved file's (%d bytes)", da.Len(), db.Len())
	}
}

// TestRecordRefusedBeyondLoopback: record serves beyond loopback only
// with --allow-attach, and says so before it starts perf.
func TestRecordRefusedBeyondLoopback(t *testing.T) {
	var out syncBuffer
	err := run(context.Background(), []string{"record", "--listen", "0.0.0.0:0", "--perf", "/nonexistent", "--", "true"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "--allow-attach") {
		t.Errorf("record --listen 0.0.0.0: %v", err)
	}
}
