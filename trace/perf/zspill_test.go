package perf

import (
	"io"
	"os"
	"runtime"
	"testing"

	"viewer/trace/perf/perftest"
)

// TestCompressedNotResident: the raw data of samples decompressed from
// COMPRESSED records goes to a temporary file, not the heap. A 256 KiB
// file that expands to about 50 MB leaves the heap a few MiB larger while
// the reader (which Details needs) is alive, and Details still decodes
// the first and the last sample.
func TestCompressedNotResident(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(dir + "/bomb.data")
	if err != nil {
		t.Fatal(err)
	}
	n, err := perftest.Bomb(f, 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tmp := t.TempDir()
	rd, err := NewReader(f, st.Size(), Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var first, last = -1, -1
	events := 0
	var evs [2]int64
	for {
		e, err := rd.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Payload.Off < st.Size() {
			t.Fatalf("sample payload at %d lies in the file, want past its end %d", e.Payload.Off, st.Size())
		}
		if first < 0 {
			first, evs[0] = events, e.Payload.Off
		}
		last, evs[1] = events, e.Payload.Off
		events++
		if e.Payload.Len < 60<<10 {
			t.Fatalf("payload of %d bytes, want at least %d", e.Payload.Len, 60<<10)
		}
		if events == 1 || events == n {
			if _, err := rd.Details(e); err != nil {
				t.Fatalf("Details of sample %d: %v", events, err)
			}
		}
	}
	if events != n {
		t.Fatalf("%d events, want %d", events, n)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	expanded := int64(n) * 60 << 10
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("%d-byte file (ratio %.0f), %d samples, %d bytes of raw data decompressed; heap grew %d bytes (first %d last %d)", st.Size(), float64(expanded)/float64(st.Size()), n, expanded, grew, first, last)
	if expanded < 40<<20 {
		t.Fatalf("the bomb expands to only %d bytes", expanded)
	}
	if grew > 8<<20 {
		t.Fatalf("heap grew %d bytes reading %d bytes of decompressed samples: they are held in memory", grew, expanded)
	}
	if des, _ := os.ReadDir(tmp); len(des) != 0 {
		t.Fatalf("the temporary file has a name: %v", des[0].Name())
	}
	runtime.KeepAlive(rd)
}
