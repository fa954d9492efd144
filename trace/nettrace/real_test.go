package nettrace

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"viewer/trace"
	"viewer/trace/tracetest"
)

// realFile is one trace of ../shared/realdata/nettrace with the facts
// PROVENANCE.md lists for it.
type realFile struct {
	path    string
	format  string
	version int
	ptr     int
	events  int64
	lost    int64
	threads int
}

var realFiles = []realFile{
	{"perfview/eventpipe-dotnetcore2.1-linux-x64-objver3.netperf", "netperf", 3, 8, 26146, 0, 1},
	{"perfview/eventpipe-dotnetcore2.1-linux-x64-tracelogging.netperf", "netperf", 3, 8, 12, 0, 1},
	{"perfview/eventpipe-dotnetcore2.1-win-x86-objver3.netperf", "netperf", 3, 4, 28689, 0, 2},
	{"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace", "nettrace", 4, 8, 105540, 0, 17},
	{"perfview/eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace", "nettrace", 5, 8, 1970, 0, 2},
	{"perfview/eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace", "nettrace", 4, 8, 3, 0, 1},
	{"perfview/HeartRateMonitor.10068.nettrace", "nettrace", 4, 4, 114565, 0, 7},
	{"perfview/mixed_managed_external_samples.nettrace", "nettrace", 4, 8, 32247, 0, 5},
	{"perfview/only_managed_samples.nettrace", "nettrace", 4, 8, 37603, 0, 6},
	{"dotnetdiag/dotnet-5.0-SampleProfiler-single-thread.golden.nettrace", "nettrace", 4, 8, 27951, 0, 4},
	{"dotnetdiag/dotnet-5.0-SampleProfiler-webapp.golden.nettrace", "nettrace", 4, 8, 92019, 2236, 11},
	{"msperftools/HelloWorld_GC_Threads_Exception.nettrace", "nettrace", 4, 8, 1296, 0, 8},
}

func openReal(t testing.TB, path string) (*Reader, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tracetest.RealData(t, "nettrace"), path))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r, b
}

// TestRealFiles opens every real file and checks its event count, lost
// events, thread count and header facts against PROVENANCE.md, with the
// reader invariants (time order, ids resolve) on every event.
func TestRealFiles(t *testing.T) {
	for _, f := range realFiles {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			r, _ := openReal(t, f.path)
			res := tracetest.Check(t, r, true)
			if res.Err != nil {
				t.Fatalf("reading: %v", res.Err)
			}
			m := r.Meta()
			threads := map[trace.TrackID]bool{}
			for _, e := range res.Events {
				threads[e.Track] = true
			}
			var lost int64
			for _, g := range m.Lost {
				lost += g.Count
			}
			if got := int64(len(res.Events)); got != f.events {
				t.Errorf("%d events, want %d", got, f.events)
			}
			if lost != f.lost {
				t.Errorf("%d lost events, want %d", lost, f.lost)
			}
			if len(threads) != f.threads {
				t.Errorf("%d threads, want %d", len(threads), f.threads)
			}
			if m.Format != f.format || m.Version != f.version || m.PointerSize != f.ptr {
				t.Errorf("format %s v%d pointers %d, want %s v%d pointers %d", m.Format, m.Version, m.PointerSize, f.format, f.version, f.ptr)
			}
		})
	}
}

// TestNetPerfV2Unsupported opens the single entry of the netperf v2 zip
// and expects the unsupported-version error.
func TestNetPerfV2Unsupported(t *testing.T) {
	zr, err := zip.OpenReader(filepath.Join(tracetest.RealData(t, "nettrace"), "perfview/eventpipe-dotnetcore2.0-linux-objver2.netperf.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 1 {
		t.Fatalf("zip has %d entries, want 1", len(zr.File))
	}
	rc, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 4096) // the header and trace object are at the start
	n, err := io.ReadFull(rc, head)
	if err != nil {
		t.Fatal(err)
	}
	if !(Format{}).Match(head[:n]) {
		t.Fatal("Match rejects the netperf v2 file")
	}
	_, err = NewReader(bytes.NewReader(head[:n]), int64(zr.File[0].UncompressedSize64))
	if !errors.Is(err, trace.ErrUnsupported) {
		t.Fatalf("error %v, want one wrapping trace.ErrUnsupported", err)
	}
	t.Log(err)
}
