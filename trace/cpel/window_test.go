package cpel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"viewer/trace"
)

// openMapped returns what writes data to the file fh (a new file in a
// temporary directory when nil) and opens it, with ReadEventsByTrack's
// window (when the system maps files) of window bytes.
func openMapped(t *testing.T, fh *os.File, data []byte, window int) func() (*Reader, error) {
	return func() (*Reader, error) {
		if fh == nil {
			var err error
			if fh, err = os.Create(filepath.Join(t.TempDir(), "mapped.cpel")); err != nil {
				return nil, err
			}
			t.Cleanup(func() { fh.Close() })
		}
		if err := fh.Truncate(0); err != nil {
			return nil, err
		}
		if _, err := fh.WriteAt(data, 0); err != nil {
			return nil, err
		}
		r, err := Format{}.Open(fh, int64(len(data)))
		if err != nil {
			return nil, err
		}
		br := r.(*Reader)
		if br.win != nil {
			br.win.size = window
		}
		return br, nil
	}
}

// TestMappedByTrack checks that ReadEventsByTrack reads a file from
// its mapped window (window.go) as it reads it with ReadAt: the events
// of ReadEvent grouped by track, and the same error, with windows of a
// few pages to many (so that records straddle the pages where windows
// meet) and batches of several sizes, on the files of
// TestReadEventsByTrack.
func TestMappedByTrack(t *testing.T) {
	if !mapsFiles {
		t.Skip("no mapping here: ReadEventsByTrack reads with ReadAt")
	}
	page := os.Getpagesize()
	for name, data := range batchInputs(t) {
		want, wantErr, ok := readOneByOne(data)
		if !ok {
			continue
		}
		for _, window := range []int{2 * page, 3 * page, windowBytes} {
			open := openMapped(t, nil, data, window)
			if r, err := open(); err == nil && r.win == nil && r.single != nil && r.single.es.sortedAt == nil {
				t.Fatalf("%s: the reader of a file maps no window", name)
			}
			for _, size := range []int{1, 1000, 8192} {
				if msg := checkByTrack(open, size, want, wantErr); msg != "" {
					t.Errorf("%s, window of %d bytes, batches of %d: %s", name, window, size, msg)
				}
			}
		}
	}
}

// TestMappedShrunk cuts the file under a reader: before its next window
// is mapped (the reader reads on with ReadAt, which reports the cut), and
// inside the window being read (the fault ends reading with a truncation
// error, not the process). Either way the events read before are those
// of the whole file.
func TestMappedShrunk(t *testing.T) {
	if !mapsFiles {
		t.Skip("no mapping here")
	}
	data := batchInputs(t)["generated"]
	want, _, _ := readOneByOne(data)
	page := os.Getpagesize()
	for _, inside := range []bool{false, true} {
		name := filepath.Join(t.TempDir(), "shrunk.cpel")
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		r, err := Format{}.Open(fh, int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		br := r.(*Reader)
		br.win.size = 16 * page
		times, types, offs := make([]trace.Time, 100), make([]trace.TypeID, 100), make([]uint32, 100)
		var tracks []trace.TrackID
		var counts []int32
		read := 0
		n, _, _, err := br.ReadEventsByTrack(times, types, offs, tracks, counts)
		if err != nil {
			t.Fatal(err)
		}
		read += n
		// Cut the file a page into the window being read, or just past
		// its end.
		end := br.single.es.dataOff + int64(br.win.start)*recordSize + int64(len(br.win.recs))
		cut := end
		if inside {
			cut = (br.single.es.dataOff+int64(read)*recordSize)&^int64(page-1) + int64(page)
		}
		if err := os.Truncate(name, cut); err != nil {
			t.Fatal(err)
		}
		for err == nil {
			n, _, _, err = br.ReadEventsByTrack(times, types, offs, tracks[:0], counts[:0])
			read += n
		}
		if !errors.Is(err, trace.ErrTruncated) {
			t.Fatalf("cut inside the window %v: error %v, want a truncation", inside, err)
		}
		if _, ok := errors.AsType[*trace.FormatError](err); !ok {
			t.Fatalf("cut inside the window %v: error %v is not a FormatError", inside, err)
		}
		if faulted := strings.Contains(err.Error(), "shrank"); faulted != inside {
			t.Errorf("cut inside the window %v: error %v (from a fault: %v)", inside, err, faulted)
		}
		whole := int((cut - br.single.es.dataOff) / recordSize)
		if read > whole || read > len(want) {
			t.Errorf("cut inside the window %v: %d events read, the cut file holds %d", inside, read, whole)
		}
		if !inside && read != whole {
			t.Errorf("cut past the window: %d events read, want the %d the cut file holds", read, whole)
		}
		if _, _, _, again := br.ReadEventsByTrack(times, types, offs, tracks[:0], counts[:0]); again == nil {
			t.Errorf("cut inside the window %v: reading on after the error succeeds", inside)
		}
	}
}

// FuzzMapped checks that ReadEventsByTrack reads any file from its
// mapped window (window.go) as ReadEvent reads it with ReadAt, grouped
// by track (FuzzReader checks the ReadAt path so). Its own target: a file
// is written and mapped for every input, which costs several times what
// FuzzReader's checks do.
func FuzzMapped(f *testing.F) {
	addSeeds(f)
	// One file, rewritten for every input.
	fh, err := os.Create(filepath.Join(f.TempDir(), "fuzz.cpel"))
	if err != nil {
		f.Fatal(err)
	}
	defer fh.Close()
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantErr, ok := readOneByOne(b)
		if !ok {
			return
		}
		if msg := checkByTrack(openMapped(t, fh, b, 2*os.Getpagesize()), 7, want, wantErr); msg != "" {
			t.Fatal(msg)
		}
	})
}
