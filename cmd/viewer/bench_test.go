package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
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
		if l.Queries != benchQueries || l.Items <= 0 || l.P99MS < l.P50MS || l.MaxMS < l.P99MS || l.ResNS <= 0 {
			t.Errorf("level %+v", l)
		}
	}
	if err := run(context.Background(), []string{"bench"}, &out, &errs); err == nil {
		t.Error("bench without FILE or --generate did not fail")
	}
}
