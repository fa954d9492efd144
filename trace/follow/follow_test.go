package follow_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/follow"
	"viewer/trace/nettrace"
	"viewer/trace/perf"
	"viewer/trace/perf/perftest"
	"viewer/trace/tracetest"
)

func TestReadAtWaits(t *testing.T) {
	data := []byte("0123456789abcdef")
	f := follow.New(bytes.NewReader(data), 4, 1<<20)
	var waits atomic.Int32
	f.OnWait(func(wait func()) { waits.Add(1); wait() })

	p := make([]byte, 4)
	if n, err := f.ReadAt(p, 0); n != 4 || err != nil || string(p) != "0123" {
		t.Fatalf("ReadAt of arrived bytes = %d, %v, %q", n, err, p)
	}
	got := make(chan string)
	go func() {
		q := make([]byte, 6)
		n, err := f.ReadAt(q, 6)
		got <- string(q[:n]) + "|" + errString(err)
	}()
	time.Sleep(20 * time.Millisecond)
	select {
	case s := <-got:
		t.Fatalf("ReadAt past the end returned %q before the bytes arrived", s)
	default:
	}
	f.Grow(10) // not enough yet: bytes 6..12 are wanted
	time.Sleep(20 * time.Millisecond)
	select {
	case s := <-got:
		t.Fatalf("ReadAt returned %q with only part of its bytes", s)
	default:
	}
	f.Grow(12)
	if s := <-got; s != "6789ab|" {
		t.Errorf("ReadAt after growing = %q, want 6789ab", s)
	}
	if waits.Load() < 2 {
		t.Errorf("the wait hook ran %d times, want at least 2 (once per wait)", waits.Load())
	}

	go func() {
		q := make([]byte, 8)
		n, err := f.ReadAt(q, 10)
		got <- string(q[:n]) + "|" + errString(err)
	}()
	time.Sleep(10 * time.Millisecond)
	f.Grow(14)
	f.End(nil)
	if s := <-got; s != "abcd|EOF" {
		t.Errorf("ReadAt across the end = %q, want abcd|EOF", s)
	}
	if n, err := f.ReadAt(p, 14); n != 0 || err != io.EOF {
		t.Errorf("ReadAt past the end = %d, %v; want 0, EOF", n, err)
	}
	f.Grow(16) // after the end: ignored
	if f.Available() != 14 {
		t.Errorf("Available after End and Grow = %d, want 14", f.Available())
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestWriterLimit(t *testing.T) {
	out, err := os.Create(filepath.Join(t.TempDir(), "trace"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := follow.NewWriter(out, 10)
	if _, err := w.Write([]byte("12345678")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("9ab")); !errors.Is(err, follow.ErrLimit) {
		t.Errorf("writing past the limit: %v, want ErrLimit", err)
	}
	ended, err := w.File().Ended()
	if !ended || !errors.Is(err, follow.ErrLimit) {
		t.Errorf("after the limit: ended %v, %v", ended, err)
	}
	p := make([]byte, 10)
	if n, err := w.File().ReadAt(p, 0); n != 8 || err != io.EOF || string(p[:n]) != "12345678" {
		t.Errorf("ReadAt = %d, %v, %q", n, err, p[:n])
	}
}

func TestPoll(t *testing.T) {
	name := filepath.Join(t.TempDir(), "growing")
	if err := os.WriteFile(name, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f := follow.New(r, 0, 1<<20)
	stop := make(chan struct{})
	ctx, cancel := contextUntil(stop)
	defer cancel()
	done := make(chan struct{})
	go func() { follow.Poll(ctx, name, f, 5*time.Millisecond); close(done) }()
	p := make([]byte, 6)
	go func() {
		time.Sleep(20 * time.Millisecond)
		a, _ := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
		a.Write([]byte("def"))
		a.Close()
	}()
	if n, err := f.ReadAt(p, 0); n != 6 || err != nil || string(p) != "abcdef" {
		t.Fatalf("ReadAt of the appended file = %d, %v, %q", n, err, p)
	}
	close(stop)
	<-done
	if ended, err := f.Ended(); !ended || err != nil {
		t.Errorf("after the context ended: ended %v, %v; want a clean end", ended, err)
	}
}

// TestNetTraceArrives streams real NetTrace files into a Writer a chunk at
// a time and reads them as they grow: events come out before the file is
// complete (the reader does not wait for a sequence point that is
// megabytes away), and the whole file gives the events of the finished
// file.
func TestNetTraceArrives(t *testing.T) {
	dir := tracetest.RealData(t, "nettrace")
	names, _ := filepath.Glob(filepath.Join(dir, "*", "*.nettrace"))
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 4<<20 {
			continue
		}
		t.Run(filepath.Base(name), func(t *testing.T) {
			want := countEvents(t, bytes.NewReader(data), int64(len(data)))
			f, done := arriving(t, data, 16<<10)
			defer done()
			var early atomic.Int64 // events read while bytes were still to come
			r, err := nettrace.NewReader(f, f.Limit())
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for {
				_, err := r.ReadEvent()
				if err != nil {
					break
				}
				n++
				if f.Available() < int64(len(data)) {
					early.Add(1)
				}
			}
			if n != want {
				t.Errorf("read %d events from the growing file, %d from the file", n, want)
			}
			if len(data) > 64<<10 && early.Load() == 0 {
				t.Errorf("no event came out before the file was complete")
			}
			t.Logf("%d events, %d before the end", n, early.Load())
		})
	}
}

func countEvents(t *testing.T, r io.ReaderAt, size int64) int {
	t.Helper()
	rd, err := nettrace.NewReader(r, size)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err := rd.ReadEvent(); err != nil {
			return n
		}
		n++
	}
}

var _ trace.Growing = (*follow.File)(nil)

func contextUntil(stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// TestPerfPipeArrives does the same with a pipe-mode perf.data file: the
// reader does not read a megabyte ahead when less has arrived, so rounds
// come out as their bytes arrive.
func TestPerfPipeArrives(t *testing.T) {
	var buf bytes.Buffer
	if err := perftest.Generate(&buf, 20000, perftest.GenerateOptions{Pipe: true, RoundSize: 500}); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	opts := perf.Options{}
	want := 0
	if r, err := perf.NewReader(bytes.NewReader(data), int64(len(data)), opts); err != nil {
		t.Fatal(err)
	} else {
		for _, err := r.ReadEvent(); err == nil; _, err = r.ReadEvent() {
			want++
		}
	}
	f, done := arriving(t, data, 8<<10)
	defer done()
	r, err := perf.NewReader(f, f.Limit(), opts)
	if err != nil {
		t.Fatal(err)
	}
	n, early := 0, 0
	for {
		if _, err := r.ReadEvent(); err != nil {
			if err != io.EOF {
				t.Errorf("the stream's end: %v, want io.EOF", err)
			}
			break
		}
		n++
		if f.Available() < int64(len(data)) {
			early++
		}
	}
	if n != want {
		t.Errorf("read %d events from the growing file, %d from the file", n, want)
	}
	if early < want/2 {
		t.Errorf("%d of %d events came out before the file was complete", early, want)
	}
}

func TestReader(t *testing.T) {
	data := []byte("abcdefgh")
	f := follow.New(bytes.NewReader(data), 3, 100)
	r := f.Reader()
	p := make([]byte, 8)
	if n, err := r.Read(p); n != 3 || err != nil || string(p[:n]) != "abc" {
		t.Fatalf("Read = %d, %v, %q; want the 3 bytes that arrived", n, err, p[:n])
	}
	go func() { time.Sleep(10 * time.Millisecond); f.Grow(5) }()
	if n, err := r.Read(p); n != 2 || err != nil || string(p[:n]) != "de" {
		t.Fatalf("Read after waiting = %d, %v, %q", n, err, p[:n])
	}
	f.Grow(8)
	cut := errors.New("cut")
	f.End(cut)
	if n, err := r.Read(p); n != 3 || err != nil {
		t.Fatalf("Read after the end = %d, %v; want the last 3 bytes", n, err)
	}
	if n, err := r.Read(p); n != 0 || err != cut {
		t.Fatalf("Read past the end = %d, %v; want the source's error", n, err)
	}
}

// arriving returns a File of data that arrives a chunk at a time, each
// when the reader waits for more (so that every wait is at a chunk's end),
// and a func to call when done reading.
func arriving(t *testing.T, data []byte, chunk int) (*follow.File, func()) {
	t.Helper()
	out, err := os.Create(filepath.Join(t.TempDir(), "trace"))
	if err != nil {
		t.Fatal(err)
	}
	w := follow.NewWriter(out, 1<<30)
	f := w.File()
	next := make(chan struct{})
	f.OnWait(func(wait func()) { next <- struct{}{}; wait() })
	go func() {
		for off := 0; off < len(data); off += chunk {
			<-next
			w.Write(data[off:min(off+chunk, len(data))])
		}
		f.End(nil)
		for range next { // the reader may still wait once at the end
		}
	}()
	return f, func() { close(next); out.Close() }
}
