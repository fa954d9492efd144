package perf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"viewer/trace"
	"viewer/trace/tracetest"
)

// TestCutRecordings cuts the local recordings at every 4 KiB (a sample
// of the cut points unless tracetest.Exhaustive) and checks that each cut
// file opens, reads its complete events, says it is cut short and ends
// in a truncation error, as the other formats do.
func TestCutRecordings(t *testing.T) {
	dir := tracetest.RealData(t, "perf/local-recordings")
	names, _ := filepath.Glob(filepath.Join(dir, "*.data"))
	if len(names) == 0 {
		t.Skip("no recordings in " + dir)
	}
	for _, name := range names {
		t.Run(filepath.Base(name), func(t *testing.T) {
			full, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			want := readCut(t, full, false)
			var cuts []int
			for n := 4096; n < len(full); n += 4096 {
				cuts = append(cuts, n)
			}
			cuts = tracetest.Sample(cuts, 4, 24, 17)
			prev := 0
			for _, n := range cuts {
				got := readCut(t, full[:n], true)
				if len(got) < prev || len(got) > len(want) {
					t.Fatalf("cut at %d: %d events (previous cut %d, whole file %d)", n, len(got), prev, len(want))
				}
				prev = len(got)
				compressed := len(want) > 0 && want[0].Payload.Off >= int64(len(full))
				if compressed {
					continue
				}
				// Every event whose record ends before the cut is read
				// (a sample's record ends at most 64 bytes after its
				// raw data); none from past it.
				complete, started := 0, 0
				for _, e := range want {
					if e.Payload.Off+int64(e.Payload.Len)+64 <= int64(n) {
						complete++
					}
					if e.Payload.Off < int64(n) {
						started++
					}
				}
				offs := make([]int64, len(want))
				for i, e := range want {
					offs[i] = e.Payload.Off
				}
				slices.Sort(offs)
				for _, e := range got {
					if _, ok := slices.BinarySearch(offs, e.Payload.Off); !ok {
						t.Fatalf("cut at %d: event at %d is not an event of the whole file", n, e.Payload.Off)
					}
				}
				if len(got) < complete || len(got) > started {
					t.Fatalf("cut at %d: %d events, want between %d and %d", n, len(got), complete, started)
				}
			}
			t.Logf("%d bytes, %d events, %d cuts", len(full), len(want), len(cuts))
		})
	}
}

// readCut reads data to the end and returns its events; when cut, it
// checks the truncation error and notice.
func readCut(t *testing.T, data []byte, cut bool) []trace.Event {
	t.Helper()
	rd, err := NewReader(bytes.NewReader(data), int64(len(data)), Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("cut at %d: refused: %v", len(data), err)
	}
	defer rd.Close()
	res := tracetest.Check(t, rd, true)
	if !cut {
		if res.Err != nil {
			t.Fatalf("whole file: %v", res.Err)
		}
		return res.Events
	}
	if !errors.Is(res.Err, trace.ErrTruncated) {
		t.Fatalf("cut at %d: error %v, want truncation", len(data), res.Err)
	}
	if !slices.ContainsFunc(rd.Meta().Notices, func(s string) bool { return strings.Contains(s, "cut short") }) {
		t.Fatalf("cut at %d: no notice says the file is cut short: %q", len(data), rd.Meta().Notices)
	}
	for i, e := range res.Events {
		if i%64 == 0 {
			if _, err := rd.Details(e); err != nil {
				t.Fatalf("cut at %d: Details: %v", len(data), err)
			}
		}
	}
	return res.Events
}
