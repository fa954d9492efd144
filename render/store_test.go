package render

import (
	"bufio"
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"viewer/trace"
	"viewer/trace/synth"
)

// TestStoreRoundTrip: an index whose arrays went to the store while it
// was built answers every query, detail and search as one built in
// memory, before and after WriteFile dropped its pages, and writes the
// same index file byte for byte.
func TestStoreRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 6))
	cfgs := []synth.Config{
		{Events: 1, Tracks: 1, Seed: 2},
		{Events: 300000, Tracks: 3, Seed: 5, LostEvery: 3001, MarkEvery: 2500}, // many full chunks per track
		{Events: 200000, Tracks: 2, Types: 70000, Seed: 6, Truncate: true},     // escaped types
		{Events: 250000, Tracks: 5, Seed: 7, Stacks: 50, StackDepth: 6},
		randomConfig(rng),
	}
	for _, cfg := range cfgs {
		opts := Options{SpillDir: t.TempDir(), Derive: newGaps()}
		x, err := Build(context.Background(), synth.New(cfg), opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.Derive, opts.inMemory = newGaps(), true
		m, err := Build(context.Background(), synth.New(cfg), opts)
		if err != nil {
			t.Fatal(err)
		}
		if m.store != nil {
			t.Fatal("an index built in memory has a store")
		}
		if cfg.Events >= 200000 && (x.store.off == 0 || x.Bytes() >= m.Bytes()/2) {
			t.Errorf("%d events: the store holds %d bytes; on the heap %d, in memory %d", cfg.Events, x.store.off, x.Bytes(), m.Bytes())
		}
		checkQueries(t, x, m, rng)
		checkAttached(t, x, m, rng)
		compareIndexes(t, x, m, rng)
		dir := t.TempDir()
		xf, mf := filepath.Join(dir, "x"), filepath.Join(dir, "m")
		if err := x.WriteFile(xf, testKey); err != nil {
			t.Fatal(err)
		}
		if err := m.WriteFile(mf, testKey); err != nil {
			t.Fatal(err)
		}
		// The arrays and spill records are the same; the head differs
		// only by the time deriving took.
		xb, mb := fileBody(t, xf), fileBody(t, mf)
		if !bytes.Equal(xb, mb) {
			t.Errorf("%d events: the index files' bodies differ (%d and %d bytes)", cfg.Events, len(xb), len(mb))
		}
		checkQueries(t, x, m, rng) // the pages WriteFile dropped are read again
		x.Close()
		m.Close()
	}
}

// TestStoreLiveFailure: when Build fails, a snapshot published before
// still answers queries (its sealed arrays read as zeros) instead of
// faulting on an unmapped store.
func TestStoreLiveFailure(t *testing.T) {
	live := NewLive(time.Nanosecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var snap *Index
	progress := func(p Progress) {
		if s := live.Index(); s != nil && p.Events >= 600000 && snap == nil {
			snap = s
			cancel()
		}
	}
	_, err := Build(ctx, synth.New(synth.Config{Events: 2000000, Tracks: 2, Seed: 4}), Options{SpillDir: t.TempDir(), Live: live, Progress: progress})
	if err == nil {
		t.Fatal("Build did not fail")
	}
	if snap == nil {
		t.Fatal("no snapshot")
	}
	tr := snap.track(snap.Tracks()[0])
	if tr.times.sealed == 0 {
		t.Fatal("the snapshot has no sealed chunks")
	}
	first, last := snap.Span()
	for _, w := range []int{2000, 7} {
		for _, span := range []trace.Time{last - first + 1, 1000, 10} {
			if _, err := snap.Query(context.Background(), Viewport{Start: first, End: first + span, Width: w, Tracks: snap.Tracks()}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// fileBody returns the index file's bytes before its head.
func fileBody(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := readHeader(f, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return b[:h.headOff]
}

// TestStoreFails: a store that cannot create its file keeps the arrays
// on the heap and says why.
func TestStoreFails(t *testing.T) {
	s := newStore(filepath.Join(t.TempDir(), "missing"), keepSpill, dropStep)
	a := []int64{1, 2, 3}
	if b := storeSlice(s, a, false); &b[0] != &a[0] {
		t.Error("the array moved to a store without a file")
	}
	if s.failed() == nil {
		t.Error("no error from a store without a file")
	}
	if err := s.close(); err != nil {
		t.Error(err)
	}
}

// TestStoreUnmapped: building the time cells and writing the index file
// read the sealed chunks without mapping their pages into the process;
// reading them maps them.
func TestStoreUnmapped(t *testing.T) {
	x, err := Build(context.Background(), synth.New(synth.Config{Events: 1 << 20, Tracks: 2, Seed: 3}), Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	tr := x.track(x.Tracks()[0])
	if tr.times.sealed < 4 {
		t.Fatalf("%d chunks sealed", tr.times.sealed)
	}
	ch := tr.times.chunks[1]
	if n := mappedPages(t, bytesOf(ch)); n != 0 {
		t.Errorf("%d pages of a sealed chunk are mapped after the build", n)
	}
	if err := x.WriteFile(filepath.Join(t.TempDir(), "index"), testKey); err != nil {
		t.Fatal(err)
	}
	if n := mappedPages(t, bytesOf(ch)); n != 0 {
		t.Errorf("%d pages of a sealed chunk are mapped after WriteFile", n)
	}
	sum := int64(0)
	for _, v := range ch {
		sum += int64(v)
	}
	if n := mappedPages(t, bytesOf(ch)); n == 0 {
		t.Errorf("no page of a sealed chunk is mapped after reading it (sum %d)", sum)
	}
}

// mappedPages returns how many pages of b the process has mapped
// (/proc/self/pagemap's present bit); it skips where that file is not
// readable.
func mappedPages(t *testing.T, b []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skip("no /proc/self/pagemap")
	}
	defer f.Close()
	page := uintptr(os.Getpagesize())
	lo := addrOf(b) / page
	hi := (addrOf(b) + uintptr(len(b)) - 1) / page
	n := 0
	var e [8]byte
	for p := lo; p <= hi; p++ {
		if _, err := f.ReadAt(e[:], int64(p)*8); err != nil {
			t.Skip("pagemap not readable:", err)
		}
		if e[7]&0x80 != 0 {
			n++
		}
	}
	return n
}

// storeKillEnv names the spill directory of a re-executed test binary
// that builds a large index (TestStoreKilled).
const storeKillEnv = "RENDER_TEST_STORE_KILL"

// TestStoreKilled: a process killed with SIGKILL while it builds an index
// (its store and spill files being written) leaves nothing in the spill
// directory and no index file: a restart builds again.
func TestStoreKilled(t *testing.T) {
	if dir := os.Getenv(storeKillEnv); dir != "" {
		progress := func(p Progress) {
			if p.Events == 1<<20 {
				os.Stdout.WriteString("building\n")
			}
		}
		x, err := Build(context.Background(), synth.New(synth.Config{Events: 1 << 30, Tracks: 4, Seed: 1}), Options{SpillDir: dir, Progress: progress})
		if err == nil {
			x.WriteFile(filepath.Join(dir, "index"), testKey)
		}
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("builds an index in a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoreKilled$")
	cmd.Env = append(os.Environ(), storeKillEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "building" {
		t.Fatalf("child said %q, %v", line, err)
	}
	time.Sleep(200 * time.Millisecond) // more chunks sealed
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		t.Errorf("the killed build left %s", n.Name())
	}
	if _, err := OpenFile(filepath.Join(dir, "index"), testKey); err == nil {
		t.Error("an index file opened after the build was killed")
	}
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
