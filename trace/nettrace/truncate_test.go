package nettrace

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"viewer/trace"
	"viewer/trace/tracetest"
)

// blockStarts returns the file offsets where the blocks (objects) of b
// start, and the offset after the last one.
func blockStarts(t testing.TB, b []byte) []int64 {
	r, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	starts := []int64{r.pos}
	for {
		_, err := r.step()
		starts = append(starts, r.pos)
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			return starts
		}
	}
}

// checkPrefix reads the first n bytes of a file whose complete events are
// full, by payload offset. It must give exactly the events whose records
// lie wholly inside the prefix, then a truncation error; or fail to open
// with a truncation error.
func checkPrefix(t *testing.T, b []byte, n int64, full map[int64]trace.Event, ends []int64, v3 bool) {
	t.Helper()
	p := b[:n]
	r, err := NewReader(bytes.NewReader(p), n)
	if err != nil {
		if !errors.Is(err, trace.ErrTruncated) {
			t.Fatalf("cut at %d: open: %v, want a truncation error", n, err)
		}
		return
	}
	res := tracetest.Check(t, r, true)
	if n == int64(len(b)) {
		if res.Err != nil {
			t.Fatalf("whole file: %v", res.Err)
		}
		return
	}
	if !errors.Is(res.Err, trace.ErrTruncated) {
		t.Fatalf("cut at %d: error %v, want a truncation error", n, res.Err)
	}
	fe, _ := errors.AsType[*trace.FormatError](res.Err)
	if fe.Off > n {
		t.Errorf("cut at %d: truncated at byte %d, past the end", n, fe.Off)
	}
	inside, _ := slices.BinarySearch(ends, n+1)
	got := len(res.Events)
	if got != inside && !(v3 && got == inside-1) {
		t.Errorf("cut at %d: %d events, want %d (%v)", n, got, inside, res.Err)
	}
	for _, e := range res.Events {
		if w, ok := full[e.Payload.Off]; !ok || w != e {
			t.Fatalf("cut at %d: event %+v differs from the whole file's %+v", n, e, w)
		}
	}
}

// TestTruncatedRealFiles cuts every real file at its first bytes, at
// block boundaries (and, in files under 1 MiB, just before and after
// them) and at random offsets. Reading every prefix is quadratic, so
// unless tracetest.Exhaustive it cuts at the first 3 boundaries and 12
// more picked with a fixed seed, and at 8 random offsets; exhaustively, at
// every boundary and 20 random offsets.
func TestTruncatedRealFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	random := 8
	if tracetest.Exhaustive() {
		random = 20
	}
	for _, f := range realFiles {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			r, b := openReal(t, f.path)
			res := tracetest.Check(t, r, true)
			full, ends := byOffset(res.Events)
			starts := blockStarts(t, b)
			cuts := []int64{0, 1, 8, 20, 40, int64(len(b)) - 1, int64(len(b))}
			for _, s := range tracetest.Sample(starts, 3, 12, 7) {
				cuts = append(cuts, s)
				if len(b) < 1<<20 {
					cuts = append(cuts, s-1, s+1, s+7)
				}
			}
			for range random {
				cuts = append(cuts, rng.Int64N(int64(len(b))))
			}
			for _, n := range cuts {
				if n >= 0 && n <= int64(len(b)) {
					checkPrefix(t, b, n, full, ends, f.version == 3)
				}
			}
			t.Logf("%d blocks, %d cuts", len(starts)-1, len(cuts))
		})
	}
}

// TestTruncatedV6 cuts the all-features v6 file at every byte when
// tracetest.Exhaustive; otherwise at each of its first 64 bytes, at every
// block boundary and the bytes on either side, and at 256 lengths picked
// with a fixed seed.
func TestTruncatedV6(t *testing.T) {
	_, b := allFeatures(t)
	_, res := readAll(t, b)
	full, ends := byOffset(res.Events)
	all := make([]int64, len(b)+1)
	for n := range all {
		all[n] = int64(n)
	}
	cuts := tracetest.Sample(all, 64, 256, 6)
	if !tracetest.Exhaustive() {
		for _, s := range blockStarts(t, b) {
			cuts = append(cuts, s-1, s, s+1)
		}
	}
	for _, n := range cuts {
		if n >= 0 && n <= int64(len(b)) {
			checkPrefix(t, b, n, full, ends, false)
		}
	}
	t.Logf("%d bytes, %d cuts", len(b), len(cuts))
}

// byOffset indexes events by payload offset and returns their sorted
// payload ends.
func byOffset(evs []trace.Event) (map[int64]trace.Event, []int64) {
	full := map[int64]trace.Event{}
	var ends []int64
	for _, e := range evs {
		full[e.Payload.Off] = e
		ends = append(ends, e.Payload.Off+int64(e.Payload.Len))
	}
	slices.Sort(ends)
	return full, ends
}
