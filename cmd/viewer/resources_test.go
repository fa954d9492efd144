package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"viewer/trace/perf/perftest"
	"viewer/web"
)

// TestStatsSpecialFiles: `viewer stats` on a device or a FIFO says what
// it is, not that "the file is empty".
func TestStatsSpecialFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"/dev/zero": "character device", fifo: "FIFO", t.TempDir(): "directory"} {
		if _, err := os.Stat(name); err != nil {
			continue
		}
		var out bytes.Buffer
		err := run(context.Background(), []string{"stats", name}, &out, &out)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "empty") {
			t.Errorf("stats %s: %v, want it to say %q", name, err, want)
		}
	}
}

// TestPerfBombRSS serves an 8 MB perf.data whose zstd records expand
// about 200 times (perftest.Bomb) from the viewer binary and measures the
// server's resident memory while it indexes: it must stay under 256 MB
// (it reached 2.34 GB when the decompressed samples were held in memory),
// and the trace must open with every sample. It builds the binary and
// writes about 1.7 GB of temporary data, so it runs only when
// VIEWER_MEASURE is set:
//
//	VIEWER_MEASURE=1 go test ./cmd/viewer -run TestPerfBombRSS -v
func TestPerfBombRSS(t *testing.T) {
	if os.Getenv("VIEWER_MEASURE") == "" {
		t.Skip("skipping: a measurement; set VIEWER_MEASURE=1 to run it")
	}
	const budget = 256 << 20
	dir := t.TempDir()
	bin := filepath.Join(dir, "viewer")
	if out, err := exec.Command("go", "build", "-o", bin, "viewer/cmd/viewer").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bomb := filepath.Join(dir, "bomb.data")
	f, err := os.Create(bomb)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := perftest.Bomb(f, 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	f.Close()

	cmd := exec.Command(bin, "serve", "--port", "0", "--memory-budget", strconv.Itoa(budget), "--data", filepath.Join(dir, "lib"))
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stdout)
	base := strings.TrimSuffix(line[strings.Index(line, "http://"):], "/\n")
	rss := func(key string) int64 {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
		for l := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(l, key+":"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				return kb << 10
			}
		}
		return 0
	}
	before := rss("VmRSS")
	start := time.Now()
	id, err := uploadFile(base, bomb)
	if err != nil {
		t.Fatal(err)
	}
	var info web.TraceInfo
	deadline := time.Now().Add(5 * time.Minute)
	for {
		resp, err := http.Get(base + "/api/traces/" + id + "/meta")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		getJSON(t, base+"/api/traces/"+id, &info)
		if info.Progress != nil && (info.Progress.State == web.StateReady || info.Progress.State == web.StateFailed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not indexed after 5 minutes: %+v", info.Progress)
		}
		time.Sleep(100 * time.Millisecond)
	}
	peak := rss("VmHWM")
	t.Logf("%d-byte perf.data, %d samples of 60 KiB (%.2f GB decompressed): indexed in %v; server RSS %d MB before, peak %d MB (budget %d MB)",
		st.Size(), samples, float64(samples)*(60<<10)/1e9, time.Since(start).Round(time.Millisecond), before>>20, peak>>20, budget>>20)
	if info.Progress.State != web.StateReady {
		t.Fatalf("the bomb did not open: %s", info.Error)
	}
	if info.Stats == nil || info.Stats.Events != int64(samples) {
		t.Fatalf("stats %+v, want %d events", info.Stats, samples)
	}
	if peak > budget {
		t.Fatalf("server peak RSS %d MB, budget %d MB", peak>>20, budget>>20)
	}
	resp, err := http.Get(base + "/api/traces/" + id + "/meta")
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(meta) == 0 {
		t.Fatalf("meta of the bomb: %d", resp.StatusCode)
	}
}
