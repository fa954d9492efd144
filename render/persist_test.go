package render

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/cpel"
	"viewer/trace/elog"
	"viewer/trace/nettrace"
	"viewer/trace/perf"
	"viewer/trace/perf/perftest"
	"viewer/trace/synth"
	"viewer/trace/tracetest"
)

var testKey = FileKey{Size: 12345, SHA256: [32]byte{1, 2, 3}, Options: "derive"}

// writeAndOpen writes x to a file and opens it.
func writeAndOpen(t *testing.T, x *Index) (*Index, string) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "index")
	if err := x.WriteFile(name, testKey); err != nil {
		t.Fatal(err)
	}
	y, err := OpenFile(name, testKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { y.Close() })
	return y, name
}

// checkQueries compares viewport queries of got and want, which must
// answer exactly alike (the same arrays, mapped or not): the whole
// trace at three widths and random windows down to a few nanoseconds,
// every track.
func checkQueries(t *testing.T, got, want *Index, rng *rand.Rand) {
	t.Helper()
	if got.Events() != want.Events() || !slices.Equal(got.Tracks(), want.Tracks()) {
		t.Fatalf("%d events on %v, want %d on %v", got.Events(), got.Tracks(), want.Events(), want.Tracks())
	}
	g0, g1 := got.Span()
	w0, w1 := want.Span()
	if g0 != w0 || g1 != w1 || got.Clamped() != want.Clamped() {
		t.Fatalf("span %d..%d clamped %d, want %d..%d %d", g0, g1, got.Clamped(), w0, w1, want.Clamped())
	}
	for _, id := range want.Tracks() {
		if got.TrackEvents(id) != want.TrackEvents(id) {
			t.Fatalf("track %d: %d events, want %d", id, got.TrackEvents(id), want.TrackEvents(id))
		}
	}
	if !reflect.DeepEqual(got.Stats(), want.Stats()) {
		t.Fatalf("Stats\n%+v, want\n%+v", got.Stats(), want.Stats())
	}
	if !reflect.DeepEqual(got.TypeEvents(), want.TypeEvents()) || !slices.Equal(got.StackedTypes(), want.StackedTypes()) {
		t.Fatal("TypeEvents or StackedTypes differ")
	}
	if !reflect.DeepEqual(got.Meta(), want.Meta()) {
		t.Fatalf("Meta differs:\n%+v\nwant\n%+v", got.Meta(), want.Meta())
	}
	if (got.ReadErr() == nil) != (want.ReadErr() == nil) || (got.ReadErr() != nil && got.ReadErr().Error() != want.ReadErr().Error()) {
		t.Fatalf("ReadErr %v, want %v", got.ReadErr(), want.ReadErr())
	}
	for k := range nMarkerKinds {
		if !slices.Equal(got.Markers(k), want.Markers(k)) {
			t.Fatalf("markers %v differ", k)
		}
	}
	if want.Events() == 0 {
		return
	}
	ctx := context.Background()
	tracks := want.Tracks()
	extent := int64(w1-w0) + 1
	for q := range 24 {
		vp := Viewport{Start: w0, End: w1 + 1, Width: []int{2000, 333, 7}[q%3], Tracks: tracks}
		if q >= 3 {
			w := max(1, extent>>rng.IntN(24))
			vp.Start = w0 + trace.Time(rng.Int64N(extent))
			vp.End = vp.Start + trace.Time(w)
		}
		gs, err := got.Query(ctx, vp)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := want.Query(ctx, vp)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gs.Tracks, ws.Tracks) || !reflect.DeepEqual(gs.Markers, ws.Markers) || gs.Res != ws.Res {
			t.Fatalf("query %+v differs", vp)
		}
	}
	for _, id := range tracks {
		var g, w []StackedEvent
		for e := range got.StackedEvents(id, math.MinInt64, math.MaxInt64) {
			g = append(g, e)
		}
		for e := range want.StackedEvents(id, math.MinInt64, math.MaxInt64) {
			w = append(w, e)
		}
		if !slices.Equal(g, w) {
			t.Fatalf("track %d: stacked events differ", id)
		}
	}
}

// checkAttached compares what needs the reader: details of sampled
// events (and of every track's first and last), a search by type name
// and the derived tracks.
func checkAttached(t *testing.T, got, want *Index, rng *rand.Rand) {
	t.Helper()
	tracks := want.Tracks()
	if len(tracks) == 0 {
		return
	}
	var ids []EventID
	for _, id := range tracks {
		ids = append(ids, EventID{Track: id}, EventID{Track: id, Index: int32(want.TrackEvents(id) - 1)})
	}
	for range 40 {
		id := tracks[rng.IntN(len(tracks))]
		ids = append(ids, EventID{Track: id, Index: int32(rng.IntN(want.TrackEvents(id)))})
	}
	for _, ev := range ids {
		gd, err := got.Details(ev, nil)
		if err != nil {
			t.Fatal(err)
		}
		wd, err := want.Details(ev, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gd, wd) {
			t.Fatalf("Details(%v)\n%+v, want\n%+v", ev, gd, wd)
		}
	}
	ctx := context.Background()
	var f Filter
	if ty := want.Meta().Types; len(ty) > 0 {
		f.Expr = Expr{Kind: ExprText, Text: ty[len(ty)/2].Name}
	}
	gc, err := got.Count(ctx, f, math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := want.Count(ctx, f, math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gc, wc) {
		t.Fatalf("Count %+v, want %+v", gc, wc)
	}
	if (got.Spans() == nil) != (want.Spans() == nil) {
		t.Fatalf("Spans %v, want %v", got.Spans() != nil, want.Spans() != nil)
	}
	if want.Spans() != nil && dumpSet(got.Spans().Set()) != dumpSet(want.Spans().Set()) {
		t.Fatal("derived tracks differ")
	}
}

// TestFileRoundTripSynth: an Index reopened from its file answers as the
// built one: at once the queries, tracks, stats, meta and markers; the
// reader's methods say ErrLoading; after Attach details, field search
// and derived tracks too.
func TestFileRoundTripSynth(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	cfgs := []synth.Config{
		{Events: 0, Seed: 1},
		{Events: 1, Tracks: 1, Seed: 2},
		{Events: 40000, Tracks: 9, Seed: 5, LostEvery: 3001, MarkEvery: 2500},
		{Events: 70000, Tracks: 3, Types: 70000, Seed: 6, Truncate: true}, // escaped types
		{Events: 100000, Tracks: 4, Seed: 7, Stacks: 50, StackDepth: 6},
	}
	for range 4 {
		cfgs = append(cfgs, randomConfig(rng))
	}
	for _, cfg := range cfgs {
		opts := func() Options { return Options{SpillDir: t.TempDir(), Derive: newGaps()} }
		x, err := Build(context.Background(), synth.New(cfg), opts())
		if err != nil {
			t.Fatal(err)
		}
		y, _ := writeAndOpen(t, x)
		checkQueries(t, y, x, rng)
		if x.Events() > 0 {
			if _, err := y.Details(EventID{Track: x.Tracks()[0]}, nil); !errors.Is(err, ErrLoading) {
				t.Fatalf("Details before Attach: %v, want ErrLoading", err)
			}
			byValue := Filter{Where: []Predicate{{Field: "value", Op: OpLt, Value: "250"}}}
			if _, err := y.Count(context.Background(), byValue, math.MinInt64, math.MaxInt64); !errors.Is(err, ErrLoading) {
				t.Fatalf("field search before Attach: %v, want ErrLoading", err)
			}
			byName := Filter{Types: []trace.TypeID{0}}
			gc, err := y.Count(context.Background(), byName, math.MinInt64, math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			wc, _ := x.Count(context.Background(), byName, math.MinInt64, math.MaxInt64)
			if !reflect.DeepEqual(gc, wc) {
				t.Fatalf("type search before Attach %+v, want %+v", gc, wc)
			}
		}
		if y.Attached() || y.Spans() != nil {
			t.Fatal("attached before Attach")
		}
		if err := y.Attach(context.Background(), synth.New(cfg), opts()); err != nil {
			t.Fatal(err)
		}
		if !y.Attached() {
			t.Fatal("not attached after Attach")
		}
		if err := y.Attach(context.Background(), synth.New(cfg), opts()); err == nil {
			t.Fatal("Attach twice: no error")
		}
		checkAttached(t, y, x, rng)
		if x.Events() > 0 {
			compareIndexes(t, y, x, rng)
		}
		// A file written from the opened Index is the same file.
		z, _ := writeAndOpen(t, y)
		checkQueries(t, z, x, rng)
		x.Close()
	}
}

// TestAttachOtherTrace: Attach with the reader of another trace fails.
func TestAttachOtherTrace(t *testing.T) {
	x := build(t, synth.Config{Events: 5000, Tracks: 3, Seed: 1})
	y, _ := writeAndOpen(t, x)
	if err := y.Attach(context.Background(), synth.New(synth.Config{Events: 4999, Tracks: 3, Seed: 1}), Options{}); err == nil {
		t.Fatal("no error")
	}
	if y.Attached() {
		t.Fatal("attached to the wrong trace")
	}
}

// schedFile writes a generated perf.data scheduler recording.
func schedFile(t *testing.T, n int64) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "sched.data")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := perftest.GenerateSched(f, n, 4, 40); err != nil {
		t.Fatal(err)
	}
	return name
}

// openFile opens a trace file with the formats render's tests know.
func openTrace(t *testing.T, name string, formats []trace.Format) trace.Reader {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	r, err := trace.Open(f, fi.Size(), formats)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFileRoundTripSched: the same for a perf.data scheduler recording
// with its derived scheduling tracks.
func TestFileRoundTripSched(t *testing.T) {
	name := schedFile(t, 60000)
	formats := []trace.Format{perf.Format{}}
	opts := func(r trace.Reader) Options {
		return Options{SpillDir: t.TempDir(), Derive: perf.NewSched(r.(*perf.Reader))}
	}
	r := openTrace(t, name, formats)
	x, err := Build(context.Background(), r, opts(r))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Spans() == nil || len(x.Spans().Set().Tracks) == 0 {
		t.Fatal("no derived tracks")
	}
	y, _ := writeAndOpen(t, x)
	rng := rand.New(rand.NewPCG(3, 4))
	checkQueries(t, y, x, rng)
	r2 := openTrace(t, name, formats)
	if err := y.Attach(context.Background(), r2, opts(r2)); err != nil {
		t.Fatal(err)
	}
	checkAttached(t, y, x, rng)
}

// TestFileRoundTripRealData: the same for every shared real trace.
func TestFileRoundTripRealData(t *testing.T) {
	var files []string
	for _, sub := range []string{"nettrace", "perf", "cpel"} {
		files = append(files, tracetest.RealFiles(t, sub)...)
	}
	formats := realFormats()
	rng := rand.New(rand.NewPCG(5, 6))
	tried := 0
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		_, err = trace.Sniff(f, fi.Size(), formats)
		f.Close()
		if err != nil || fi.Size() > 64<<20 {
			continue // not a trace (a reference output), or too big for a unit test
		}
		tried++
		t.Run(strings.TrimPrefix(name, filepath.Dir(filepath.Dir(name))+"/"), func(t *testing.T) {
			opts := func(r trace.Reader) Options {
				o := Options{SpillDir: t.TempDir(), Derive: newGaps()}
				if f := r.Meta().Format; f == "nettrace" || f == "netperf" {
					o.Symbols = clr.NewSymbols()
				}
				return o
			}
			r := openTrace(t, name, formats)
			x, err := Build(context.Background(), r, opts(r))
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			y, _ := writeAndOpen(t, x)
			checkQueries(t, y, x, rng)
			r2 := openTrace(t, name, formats)
			if err := y.Attach(context.Background(), r2, opts(r2)); err != nil {
				t.Fatal(err)
			}
			checkAttached(t, y, x, rng)
		})
	}
	if tried == 0 {
		t.Fatal("no real trace found")
	}
}

// TestFileDamage: a flipped byte anywhere in the file (every byte of the
// preamble, header and trailer; a sample of the body, all of it with
// VIEWER_EXHAUSTIVE), a truncated or extended file and a file for
// another key are refused: by OpenFile, or for the spill records by
// their check after it, which Attach and Event then fail with.
func TestFileDamage(t *testing.T) {
	for _, secMax := range []int64{sectionMax, 4 << 10} {
		t.Run(strconv.FormatInt(secMax, 10), func(t *testing.T) { testFileDamage(t, secMax) })
	}
}

func testFileDamage(t *testing.T, secMax int64) {
	x := build(t, synth.Config{Events: 30000, Tracks: 5, Seed: 9, Stacks: 20, StackDepth: 4, MarkEvery: 1000})
	name := filepath.Join(t.TempDir(), "index")
	if err := x.writeFile(name, testKey, secMax); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	y, err := OpenFile(name, testKey)
	if err != nil {
		t.Fatal(err)
	}
	y.Close()
	for _, k := range []FileKey{{}, {Size: testKey.Size, SHA256: testKey.SHA256}, {Size: testKey.Size + 1, SHA256: testKey.SHA256, Options: testKey.Options}} {
		if _, err := OpenFile(name, k); !errors.Is(err, ErrStale) {
			t.Fatalf("key %+v: %v, want ErrStale", k, err)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad")
	late := 0 // damage found by the spill records' check
	try := func(b []byte, what string) {
		t.Helper()
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		y, err := OpenFile(bad, testKey)
		if err != nil {
			return
		}
		verr := y.spill.verified() // the spill records are checked after OpenFile
		if verr == nil {
			t.Fatalf("%s: opened", what)
		}
		late++
		if err := y.Attach(context.Background(), synth.New(synth.Config{Events: 30000, Tracks: 5, Seed: 9, Stacks: 20, StackDepth: 4, MarkEvery: 1000}), Options{}); err == nil {
			t.Fatalf("%s: attached with damaged spill records", what)
		}
		if _, err := y.Event(EventID{Track: y.Tracks()[0]}); err == nil {
			t.Fatalf("%s: read a damaged spill record", what)
		}
		y.Close()
	}
	hl := int(uint32(good[len(good)-16]) | uint32(good[len(good)-15])<<8 | uint32(good[len(good)-14])<<16)
	var at []int
	for i := range preambleLen {
		at = append(at, i)
	}
	for i := len(good) - trailerLen - hl; i < len(good); i++ {
		at = append(at, i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// Every byte of the body would be a million writes and checks of the
	// whole file; the exhaustive run samples more of them.
	body := 300
	if tracetest.Exhaustive() {
		body = 3000
	}
	for range body {
		at = append(at, preambleLen+rng.IntN(len(good)-trailerLen-hl-preambleLen))
	}
	b := slices.Clone(good)
	for _, i := range at {
		bit := byte(1) << rng.IntN(8)
		b[i] ^= bit
		try(b, "byte "+strconv.Itoa(i)+" flipped")
		b[i] ^= bit
	}
	cuts := []int{0, 1, preambleLen, preambleLen + 1, len(good) / 2, len(good) - trailerLen - hl, len(good) - trailerLen, len(good) - 1}
	for range 20 {
		cuts = append(cuts, rng.IntN(len(good)))
	}
	for _, n := range cuts {
		try(good[:n], "cut at "+strconv.Itoa(n))
	}
	try(append(slices.Clone(good), 0), "a byte appended")
	if late == 0 && secMax < sectionMax {
		t.Error("no flipped byte fell in sections of the spill records alone")
	}
}

// killChildEnv names the index file a re-executed test binary writes
// (TestWriteFileKilled).
const killChildEnv = "RENDER_TEST_KILL_CHILD"

// TestWriteFileKilled: a process killed with SIGKILL while it writes an
// index file leaves no file under the final name, and its temporary
// file, cut short, does not open; writing again works.
func TestWriteFileKilled(t *testing.T) {
	if name := os.Getenv(killChildEnv); name != "" {
		killChild(name)
		return
	}
	if testing.Short() {
		t.Skip("builds a 6M-event index in a child process")
	}
	for attempt := 1; ; attempt++ {
		if killWhileWriting(t) {
			break
		}
		if attempt == 3 {
			t.Fatal("the child finished writing before it was killed, three times")
		}
	}
}

// killChild is the child of TestWriteFileKilled: it builds an index,
// writes it once to learn the file's size, says so, and writes it again
// to name.
func killChild(name string) {
	x, err := Build(context.Background(), synth.New(synth.Config{Events: 6 << 20, Tracks: 16, Seed: 1}), Options{SpillDir: filepath.Dir(name)})
	if err != nil {
		os.Exit(2)
	}
	probe := name + ".probe"
	if err := x.WriteFile(probe, testKey); err != nil {
		os.Exit(2)
	}
	fi, err := os.Stat(probe)
	if err != nil {
		os.Exit(2)
	}
	os.Remove(probe)
	os.Stdout.WriteString(strconv.FormatInt(fi.Size(), 10) + "\n")
	x.WriteFile(name, testKey)
	os.Exit(0)
}

// killWhileWriting runs killChild and kills it while its temporary file
// is partly written; false when the child finished first.
func killWhileWriting(t *testing.T) bool {
	dir := t.TempDir()
	name := filepath.Join(dir, "index")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFileKilled$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	full, perr := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil || perr != nil || full < 32<<20 {
		t.Fatalf("child said %q, %v", line, err)
	}
	// Kill it once its temporary file holds more than 8 MiB and well
	// under its full size.
	deadline := time.Now().Add(30 * time.Second)
	var tmp string
	for tmp == "" {
		if time.Now().After(deadline) {
			t.Fatal("no temporary file grew")
		}
		names, _ := filepath.Glob(filepath.Join(dir, ".index-*.tmp"))
		for _, n := range names {
			if fi, err := os.Stat(n); err == nil && fi.Size() > 8<<20 && fi.Size() < full-16<<20 {
				tmp = n
			}
		}
		if _, err := os.Stat(name); err == nil {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Stat(name); err == nil {
		return false // renamed just before the kill
	}
	fi, err := os.Stat(tmp)
	if err != nil {
		t.Fatalf("the temporary file is gone: %v", err)
	}
	if fi.Size() >= full {
		return false
	}
	if y, err := OpenFile(tmp, testKey); err == nil {
		y.Close()
		t.Fatalf("a temporary file of %d of %d bytes opened", fi.Size(), full)
	}
	if y, err := OpenFile(name, testKey); err == nil {
		y.Close()
		t.Fatal("an index file under the final name opened")
	}
	// The next start rebuilds.
	x := build(t, synth.Config{Events: 10000, Tracks: 16, Seed: 1})
	y, _ := writeAndOpenAt(t, x, name)
	checkQueries(t, y, x, rand.New(rand.NewPCG(1, 1)))
	return true
}

func writeAndOpenAt(t *testing.T, x *Index, name string) (*Index, string) {
	t.Helper()
	if err := x.WriteFile(name, testKey); err != nil {
		t.Fatal(err)
	}
	y, err := OpenFile(name, testKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { y.Close() })
	return y, name
}

// realFormats is the formats of the shared real traces, as the viewer
// registers them.
func realFormats() []trace.Format {
	return []trace.Format{
		nettrace.Format{},
		cpel.Format{},
		elog.Format{},
		perf.Format{DotNet: func() perf.DotNetDecoder { return nettrace.NewUserEvents() }},
	}
}

// FuzzOpenFile: an index file whose checksums match but whose head,
// directory or arrays are anything (sealed here with fresh checksums)
// opens or fails, without panicking or allocating beyond its size; an
// opened one answers Tracks, Stats, Meta and markers.
func FuzzOpenFile(f *testing.F) {
	x, err := Build(context.Background(), synth.New(synth.Config{Events: 600, Tracks: 3, Seed: 1, MarkEvery: 100, LostEvery: 250}), Options{SpillDir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	name := filepath.Join(f.TempDir(), "index")
	if err := x.WriteFile(name, testKey); err != nil {
		f.Fatal(err)
	}
	x.Close()
	good, err := os.ReadFile(name)
	if err != nil {
		f.Fatal(err)
	}
	file, err := os.Open(name)
	if err != nil {
		f.Fatal(err)
	}
	h, err := readHeader(file, int64(len(good)))
	file.Close()
	if err != nil {
		f.Fatal(err)
	}
	body := good[preambleLen:h.bodyEnd]
	f.Add(body, h.headOff, h.headLen, h.spillOff, h.spillLn)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte, headOff, headLen, spillOff, spillLen int64) {
		var b bytes.Buffer
		fw := &fileWriter{w: bufio.NewWriter(&b), key: testKey, secMax: sectionMax}
		var pre [preambleLen]byte
		copy(pre[:], fileMagic)
		binary.LittleEndian.PutUint32(pre[8:], fileVersion)
		binary.LittleEndian.PutUint32(pre[12:], fileLayout)
		fw.write(pre[:])
		fw.write(body)
		if err := fw.finish(headOff, headLen, spillOff, spillLen); err != nil {
			t.Fatal(err)
		}
		fw.w.Flush()
		name := filepath.Join(dir, "fuzz")
		if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		y, err := OpenFile(name, testKey)
		if err != nil {
			return
		}
		defer y.Close()
		for _, id := range y.Tracks() {
			y.TrackEvents(id)
		}
		y.Stats()
		y.Meta()
		y.Markers(MarkerLost)
		y.Bytes()
	})
}

// TestAttachConcurrent: queries, details and searches on an opened
// Index from several goroutines while Attach runs (run with -race):
// details say ErrLoading or answer as the built index does, never
// anything else.
func TestAttachConcurrent(t *testing.T) {
	cfg := synth.Config{Events: 200000, Tracks: 6, Seed: 11}
	x := build(t, cfg)
	y, _ := writeAndOpen(t, x)
	first, last := x.Span()
	ids := x.Tracks()
	done := make(chan struct{})
	errs := make(chan error, 4)
	for g := range 3 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := y.Query(context.Background(), Viewport{Start: first, End: last + 1, Width: 500, Tracks: ids}); err != nil {
					errs <- err
					return
				}
				ev := EventID{Track: ids[rng.IntN(len(ids))], Index: int32(rng.IntN(1000))}
				gd, err := y.Details(ev, nil)
				if errors.Is(err, ErrLoading) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				wd, _ := x.Details(ev, nil)
				if !reflect.DeepEqual(gd, wd) {
					errs <- errors.New("details differ")
					return
				}
				if _, err := y.Count(context.Background(), Filter{Expr: Expr{Kind: ExprText, Text: "event1"}}, first, first+1000000); err != nil && !errors.Is(err, ErrLoading) {
					errs <- err
					return
				}
			}
		}()
	}
	if err := y.Attach(context.Background(), synth.New(cfg), Options{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // some calls after Attach too
	close(done)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestResident: a mapped index counts the pages its queries touched, at
// most the file; a built one its Bytes and at most its store, and one
// built in memory its Bytes.
func TestResident(t *testing.T) {
	cfg := synth.Config{Events: 400000, Tracks: 8, Seed: 3}
	x, err := Build(context.Background(), synth.New(cfg), Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if r := x.Resident(); r < x.Bytes() || r > x.Bytes()+x.store.off {
		t.Errorf("a built index: Resident %d, Bytes %d, store %d", r, x.Bytes(), x.store.off)
	}
	m, err := Build(context.Background(), synth.New(cfg), Options{SpillDir: t.TempDir(), inMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Resident() != m.Bytes() {
		t.Errorf("a built index in memory: Resident %d, Bytes %d", m.Resident(), m.Bytes())
	}
	// The store holds most of the arrays: 8 tracks keep a chunk of each
	// column on the heap, not the 50K events each.
	if x.Bytes() > m.Bytes()/3 {
		t.Errorf("a built index holds %d bytes on the heap, %d in memory", x.Bytes(), m.Bytes())
	}
	y, name := writeAndOpen(t, x)
	st, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	first, last := y.Span()
	if _, err := y.Query(context.Background(), Viewport{Start: first, End: last + 1, Width: 2000, Tracks: y.Tracks()}); err != nil {
		t.Fatal(err)
	}
	if r := y.Resident(); r <= y.Bytes() || r > y.Bytes()+st.Size() {
		t.Errorf("a mapped index after a query: Resident %d, heap %d, file %d", r, y.Bytes(), st.Size())
	}
}
