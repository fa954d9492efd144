package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"viewer/trace/export"
	"viewer/trace/tracetest"
)

// TestNetTraceStatsAndDump runs `viewer stats --json` and `viewer dump` on
// the writer-made v6 fixture and on real files, checking the totals that
// PROVENANCE.md lists and that dump writes one JSON object per event.
func TestNetTraceStatsAndDump(t *testing.T) {
	t.Parallel()
	files := []struct {
		path         string
		format       string
		version      int
		events, lost int64
		fromRealData bool
	}{
		{"../../testdata/nettrace/v6-all-features.nettrace", "nettrace", 6, 16, 10, false},
		{"dotnetdiag/dotnet-5.0-SampleProfiler-webapp.golden.nettrace", "nettrace", 4, 92019, 2236, true},
		{"perfview/eventpipe-dotnetcore2.1-linux-x64-tracelogging.netperf", "netperf", 3, 12, 0, true},
		{"perfview/eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace", "nettrace", 5, 1970, 0, true},
	}
	for _, f := range files {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			path := f.path
			if f.fromRealData {
				path = filepath.Join(tracetest.RealData(t, "nettrace"), f.path)
			}
			var out, errOut bytes.Buffer
			if err := run(context.Background(), []string{"stats", "--json", path}, &out, &errOut); err != nil {
				t.Fatalf("stats: %v\n%s", err, errOut.String())
			}
			var st export.Stats
			if err := json.Unmarshal(out.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			if st.Format != f.format || st.Version != f.version || st.Events != f.events || st.LostEvents != f.lost || st.Truncated {
				t.Errorf("stats %+v, want %s v%d, %d events, %d lost", st, f.format, f.version, f.events, f.lost)
			}
			var sum int64
			for _, c := range st.Counts {
				sum += c.Count
			}
			if sum != st.Events {
				t.Errorf("counts sum to %d, events %d", sum, st.Events)
			}
			out.Reset()
			if err := run(context.Background(), []string{"dump", path}, &out, &errOut); err != nil {
				t.Fatalf("dump: %v", err)
			}
			sc := bufio.NewScanner(&out)
			sc.Buffer(nil, 1<<20)
			var n int64
			var last int64
			for sc.Scan() {
				var line struct {
					TimeNS *int64           `json:"time_ns"`
					Event  *string          `json:"event"`
					Fields []map[string]any `json:"fields"`
					Label  string           `json:"label"`
				}
				if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
					t.Fatalf("line %d: %v: %s", n+1, err, sc.Bytes())
				}
				if line.TimeNS == nil || line.Event == nil || line.Label == "" || *line.TimeNS < last {
					t.Fatalf("line %d: %s", n+1, sc.Bytes())
				}
				last = *line.TimeNS
				n++
			}
			if n != f.events {
				t.Errorf("dump wrote %d lines, want %d", n, f.events)
			}
		})
	}
}
