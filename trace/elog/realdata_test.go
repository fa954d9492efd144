package elog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"viewer/trace"
	"viewer/trace/tracetest"
)

func openFile(t *testing.T, path string) *Reader {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	st, _ := fh.Stat()
	head := make([]byte, trace.SniffLen)
	n, _ := fh.ReadAt(head, 0)
	if !(Format{}).Match(head[:n]) {
		t.Fatalf("%s: Match = false", path)
	}
	r, err := Format{}.Open(fh, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r.(*Reader)
}

// seconds renders ns as elog_dump's "%18.9f" of seconds does in vppinfra:
// no leading zero before the point, right-aligned in 18 columns.
func seconds(ns trace.Time) string {
	s := fmt.Sprintf("%d.%09d", ns/1e9, ns%1e9)
	if ns < 1e9 {
		s = s[1:]
	}
	return fmt.Sprintf("%18s", s)
}

// dumpLines renders a reader's events as elog_dump prints them.
func dumpLines(t *testing.T, r *Reader) []string {
	res := tracetest.Check(t, r, true)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	lines := []string{fmt.Sprintf("%d events", len(res.Events))}
	m := r.Meta()
	for _, e := range res.Events {
		d, err := r.Details(e)
		if err != nil {
			t.Fatal(err)
		}
		track := m.Tracks[e.Track].Name
		if len(track) > 24 { // vppinfra widths truncate
			track = track[:24]
		}
		lines = append(lines, fmt.Sprintf("%s %-24s %s", seconds(e.Time), track, d.Label))
	}
	return lines
}

// TestElogDump compares every real .elog with elog_dump's output: event
// count, times, track names and text.
func TestElogDump(t *testing.T) {
	dir := tracetest.RealData(t, "cpel")
	files, _ := filepath.Glob(filepath.Join(dir, "*.elog"))
	if len(files) < 4 {
		t.Fatalf("found %d .elog files", len(files))
	}
	for _, path := range files {
		base := strings.TrimSuffix(filepath.Base(path), ".elog")
		t.Run(base, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, base+".elog_dump.txt"))
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			got := dumpLines(t, openFile(t, path))
			if len(got) != len(want) {
				t.Errorf("%d lines, elog_dump has %d", len(got), len(want))
			}
			bad := 0
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					if bad++; bad <= 10 {
						t.Errorf("line %d:\n got %q\nwant %q", i+1, got[i], want[i])
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d lines differ", bad)
			}
			t.Logf("%d events match elog_dump", len(got)-1)
		})
	}
}
