package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"viewer/trace/cpel/cpeltest"
)

// TestBenchGenerate runs `viewer bench --generate` on a small trace and
// checks the report's shape.
func TestBenchGenerate(t *testing.T) {
	var out, errs bytes.Buffer
	prof := filepath.Join(t.TempDir(), "load.prof")
	if err := run(context.Background(), []string{"bench", "--generate", "30000", "--tracks", "7", "--spill", t.TempDir(), "--cpuprofile", prof}, &out, &errs); err != nil {
		t.Fatal(err, errs.String())
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("--cpuprofile wrote no profile: %v", err)
	}
	var rep benchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Events != 30000 || rep.Tracks != 7 || rep.QueryTracks != 7 || len(rep.Levels) != benchLevels+1 {
		t.Fatalf("report %+v", rep)
	}
	if rep.IndexBytes <= 0 || rep.LoadSeconds <= 0 || rep.EventsPerSecond <= 0 {
		t.Errorf("load figures missing: %+v", rep)
	}
	for _, l := range rep.Levels {
		if l.Queries != benchQueries || l.Items <= 0 || l.P99MS < l.P50MS || l.MaxMS < l.P99MS || l.ResNS <= 0 ||
			l.AgainP50MS <= 0 || l.AgainP99MS < l.AgainP50MS || l.AgainMaxMS < l.AgainP99MS {
			t.Errorf("level %+v", l)
		}
	}
	if err := run(context.Background(), []string{"bench"}, &out, &errs); err == nil {
		t.Error("bench without FILE or --generate did not fail")
	}
}

// TestBenchWarm: bench writes the index file and reopens it; the
// reopened index answers the same sweep with the same items; with
// --index-file a second run only reopens the kept file, and a run for
// another source refuses it.
func TestBenchWarm(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bench.index")
	bench := func(args ...string) benchReport {
		t.Helper()
		var out, errs bytes.Buffer
		if err := run(context.Background(), append([]string{"bench", "--tracks", "5", "--spill", dir}, args...), &out, &errs); err != nil {
			t.Fatal(err, errs.String())
		}
		var rep benchReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	cold := bench("--generate", "40000", "--index-file", file)
	w := cold.Warm
	if w == nil || w.WriteSeconds <= 0 || w.FileBytes <= 0 || w.FirstFrameSeconds < w.OpenSeconds || len(w.Levels) != len(cold.Levels) {
		t.Fatalf("warm part %+v", w)
	}
	for i, l := range w.Levels {
		if c := cold.Levels[i]; l.Items != c.Items || l.ResNS != c.ResNS || l.WindowNS != c.WindowNS {
			t.Errorf("level %d: reopened %+v, built %+v", i, l, c)
		}
	}
	warm := bench("--generate", "40000", "--index-file", file)
	if warm.Events != 0 || warm.Warm == nil || warm.Warm.WriteSeconds != 0 || len(warm.Warm.Levels) != len(cold.Levels) {
		t.Fatalf("warm run %+v", warm)
	}
	for i, l := range warm.Warm.Levels {
		if l.Items != cold.Levels[i].Items {
			t.Errorf("level %d: %v items in the warm run, %v built", i, l.Items, cold.Levels[i].Items)
		}
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"bench", "--generate", "40001", "--index-file", file}, &out, &errs); err == nil {
		t.Error("a kept index file of another source was used")
	}
}

// TestBenchFile: bench on a file reports, beside the load, the CPU time
// of opening it (CPEL scans its event records there) and of the first
// view.
func TestBenchFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "b.cpel")
	var buf bytes.Buffer
	if err := cpeltest.Generate(&buf, 300_000, 1e9); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, buf.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"bench", "--spill", t.TempDir(), name}, &out, &errs); err != nil {
		t.Fatal(err, errs.String())
	}
	var rep benchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Events != 300_000 || rep.OpenCPUSeconds <= 0 || rep.FirstViewCPUSeconds <= 0 || rep.LoadCPUSeconds <= rep.FirstViewCPUSeconds {
		t.Errorf("open %v s, load %v s, first view %v s of CPU for %d events", rep.OpenCPUSeconds, rep.LoadCPUSeconds, rep.FirstViewCPUSeconds, rep.Events)
	}
}
