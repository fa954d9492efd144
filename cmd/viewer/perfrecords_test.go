package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"viewer/trace/export"
	"viewer/trace/perf/perftest"
)

// TestStatsUnknownPerfRecords: a perf.data file with records of a type
// the reader does not know reports them in `viewer stats`, text and JSON.
func TestStatsUnknownPerfRecords(t *testing.T) {
	name := filepath.Join(t.TempDir(), "unknown.data")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	wr, err := perftest.NewWriter(f, perftest.WriterOptions{
		Attrs: []perftest.Attr{{Name: "test:tp", Type: perftest.TypeTracepoint, Config: 7,
			SampleType: perftest.SampleTID | perftest.SampleTime | perftest.SampleRaw, IDs: []uint64{1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wr.Comm(5, 5, "app", 1)
	for range 3 {
		wr.Record(99, 0, make([]byte, 16))
	}
	wr.Sample(perftest.Sample{PID: 5, TID: 5, Time: 10, Raw: make([]byte, 8)})
	wr.FinishedRound()
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	const want = "perf.data: 3 records of unknown type 99 skipped"
	var out bytes.Buffer
	if err := runStats(context.Background(), []string{"--json", name}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var st export.Stats
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(st.Notices, want) || st.Events != 1 {
		t.Errorf("stats --json: %d events, notices %q; want %q", st.Events, st.Notices, want)
	}
	out.Reset()
	if err := runStats(context.Background(), []string{name}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), want) {
		t.Errorf("stats text lacks %q:\n%s", want, out.String())
	}
}
