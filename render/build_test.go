package render

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/cpel"
	"viewer/trace/cpel/cpeltest"
	"viewer/trace/synth"
)

// TestBuildCores: Build on one core (no helpers) and on four (three
// helpers racing for the groups of every batch) writes the same index
// file byte for byte: where a spill run lands does not depend on which
// goroutine ended it, nor on timing. Both answer queries alike.
func TestBuildCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, cfg := range []synth.Config{
		{Events: 200000, Tracks: 64, Seed: 3},
		{Events: 150000, Tracks: 7, Types: 70000, Seed: 4, Stacks: 20, StackDepth: 4}, // escaped types, stacks
		{Events: 50000, Tracks: 1, Seed: 5},                                           // one group per batch
	} {
		var files [][]byte
		var xs []*Index
		for _, procs := range []int{1, 4} {
			runtime.GOMAXPROCS(procs)
			x, err := Build(context.Background(), synth.New(cfg), Options{SpillDir: t.TempDir(), Derive: newGaps()})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			name := filepath.Join(t.TempDir(), strconv.Itoa(procs))
			if err := x.WriteFile(name, testKey); err != nil {
				t.Fatal(err)
			}
			files = append(files, fileBody(t, name))
			xs = append(xs, x)
		}
		if !bytes.Equal(files[0], files[1]) {
			t.Errorf("%+v: the index files of one and four cores differ (%d and %d bytes)", cfg, len(files[0]), len(files[1]))
		}
		compareIndexes(t, xs[1], xs[0], rand.New(rand.NewPCG(uint64(cfg.Seed), 1)))
	}
}

// sameFields is a reader whose events keep only their time, track, type
// and payload offset, the rest base's (as trackOrderReader wants).
type sameFields struct {
	trace.Reader
	base trace.Event
}

func (r *sameFields) keep(e *trace.Event) {
	b := r.base
	b.Time, b.Track, b.Type, b.Payload.Off = e.Time, e.Track, e.Type, e.Payload.Off
	*e = b
}

func (r *sameFields) ReadEvent() (trace.Event, error) {
	e, err := r.Reader.ReadEvent()
	r.keep(&e)
	return e, err
}

func (r *sameFields) ReadEvents(dst []trace.Event) (n int, err error) {
	if br, ok := r.Reader.(batchReader); ok {
		n, err = br.ReadEvents(dst)
	} else {
		for ; n < len(dst); n++ {
			if dst[n], err = r.Reader.ReadEvent(); err != nil {
				break
			}
		}
	}
	for i := range dst[:n] {
		r.keep(&dst[i])
	}
	return n, err
}

// byTrack hands out a sameFields reader's events grouped by track
// through ReadEventsByTrack, grouping by brute force what its ReadEvents
// returns in batches of at most size (trace/cpel groups as it decodes);
// twice, when set, splits every batch's first track into two groups,
// which breaks the contract.
type byTrack struct {
	*sameFields
	size  int
	twice bool
	// origin is the batch's offsets': its first event's payload offset
	// less 1 GB (offsets of one batch lie within 4 GB of it).
	origin int64
}

// The grouped path is what these readers test.
var _, _ trackOrderReader = (*byTrack)(nil), (*waitingByTrack)(nil)

func (r *byTrack) EventBase() trace.Event {
	b := r.base
	b.Payload.Off = r.origin
	return b
}

func (r *byTrack) ReadEventsByTrack(times []trace.Time, types []trace.TypeID, offs []uint32, tracks []trace.TrackID, counts []int32) (int, []trace.TrackID, []int32, error) {
	evs := make([]trace.Event, min(len(times), len(types), len(offs), r.size))
	n, err := r.ReadEvents(evs)
	evs = evs[:n]
	if n > 0 {
		r.origin = evs[0].Payload.Off - 1<<30
	}
	at := 0
	for _, e := range evs {
		if slices.Contains(tracks, e.Track) {
			continue
		}
		tracks = append(tracks, e.Track)
		counts = append(counts, 0)
		for _, f := range evs {
			if f.Track == e.Track {
				d := f.Payload.Off - r.origin
				if d < 0 || d > math.MaxUint32 {
					panic(fmt.Sprintf("byTrack: payload offsets %d and %d in one batch", f.Payload.Off, evs[0].Payload.Off))
				}
				times[at], types[at], offs[at] = f.Time, f.Type, uint32(d)
				at++
				counts[len(counts)-1]++
			}
		}
	}
	if r.twice && len(counts) > 0 && counts[0] > 1 {
		tracks = slices.Insert(tracks, 1, tracks[0])
		counts = slices.Insert(counts, 1, counts[0]-1)
		counts[0] = 1
	}
	return n, tracks, counts, err
}

// TestBuildByTrack: a reader that hands out its events grouped by track
// (trackOrderReader, as trace/cpel does) gets the index file, byte for
// byte, that the same events read in time order get, on one core and on
// four, with and without stacks; in shorter batches the same index; the
// CPEL reader's index file is its ReadEvents'; events out of time order
// are clamped per track, so that every track's times stay sorted; and a
// reader that breaks the contract fails Build rather than the process.
func TestBuildByTrack(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	write := func(x *Index) []byte {
		name := filepath.Join(t.TempDir(), "x")
		if err := x.WriteFile(name, testKey); err != nil {
			t.Fatal(err)
		}
		return fileBody(t, name)
	}
	for _, c := range []struct {
		cfg  synth.Config
		base trace.Event
	}{
		{synth.Config{Events: 100000, Tracks: 64, Seed: 3}, trace.Event{Capture: trace.NoTrack, CPU: trace.NoCPU, Payload: trace.Loc{Len: 4}}},
		{synth.Config{Events: 60000, Tracks: 7, Types: 70000, Seed: 4}, trace.Event{Seq: 9, CPU: 2, Stack: 5, Labels: 1, Payload: trace.Loc{Len: 30}}}, // escaped types, stacks
	} {
		cfg := c.cfg
		same := func() *sameFields { return &sameFields{Reader: synth.New(cfg), base: c.base} }
		build := func(r trace.Reader) *Index {
			x := build1(t, r)
			t.Cleanup(func() { x.Close() })
			return x
		}
		want := build(same())
		wantFile := write(want)
		for _, procs := range []int{1, 4} {
			runtime.GOMAXPROCS(procs)
			if got := write(build(&byTrack{sameFields: same(), size: batchEvents})); !bytes.Equal(got, wantFile) {
				t.Errorf("%+v, %d cores: the index file of a reader by track differs (%d bytes, want %d)", cfg, procs, len(got), len(wantFile))
			}
		}
		compareIndexesNoDerive(t, build(&byTrack{sameFields: same(), size: 1000}), want)
	}

	// The CPEL reader groups as it decodes: the index file is the one
	// its ReadEvents gets.
	var buf bytes.Buffer
	if err := cpeltest.Generate(&buf, 50000, 1e9); err != nil {
		t.Fatal(err)
	}
	open := func() trace.Reader {
		r, err := cpel.Format{}.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := open()
	if _, ok := r.(trackOrderReader); !ok {
		t.Fatal("the CPEL reader does not read by track")
	}
	grouped := build1(t, r)
	defer grouped.Close()
	r = open()
	plain := build1(t, struct {
		trace.Reader
		batchReader
	}{r, r.(batchReader)})
	defer plain.Close()
	if !bytes.Equal(write(grouped), write(plain)) {
		t.Error("CPEL: the index file read by track differs from the one read in time order")
	}

	x := build1(t, &byTrack{sameFields: &sameFields{Reader: disordered()}, size: 700})
	defer x.Close()
	if x.Clamped() == 0 {
		t.Fatal("no event out of order: nothing clamped")
	}
	for _, id := range x.Tracks() {
		tr := x.track(id)
		for i := 1; i < tr.times.len(); i++ {
			if tr.times.at(i) < tr.times.at(i-1) {
				t.Fatalf("track %d: event %d at %d before %d", id, i, tr.times.at(i), tr.times.at(i-1))
			}
		}
	}

	if _, err := Build(context.Background(), &byTrack{sameFields: &sameFields{Reader: synth.New(synth.Config{Events: 5000, Seed: 1})}, size: 100, twice: true}, Options{SpillDir: t.TempDir()}); err == nil {
		t.Error("Build of a reader giving one track two groups succeeded")
	}
}

// build1 builds r's index in a temporary directory.
func build1(t *testing.T, r trace.Reader) *Index {
	x, err := Build(context.Background(), r, Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// waitingByTrack is a reader by track whose source waits (Live.AroundWait)
// inside its first ReadEventsByTrack call when wait is set.
type waitingByTrack struct {
	byTrack
	live  *Live
	wait  bool
	calls int
}

func (r *waitingByTrack) ReadEventsByTrack(times []trace.Time, types []trace.TypeID, offs []uint32, tracks []trace.TrackID, counts []int32) (int, []trace.TrackID, []int32, error) {
	r.calls++
	if r.wait {
		r.live.AroundWait(func() {})
	}
	return r.byTrack.ReadEventsByTrack(times, types, offs, tracks, counts)
}

// TestLiveByTrack: with snapshots published after every batch, a reader
// by track gets the index it gets without them; a wait inside
// ReadEventsByTrack keeps every event, and Build reads event by event
// afterwards.
func TestLiveByTrack(t *testing.T) {
	cfg := synth.Config{Events: 30000, Tracks: 9, Seed: 4}
	base := trace.Event{Capture: trace.NoTrack, CPU: trace.NoCPU, Payload: trace.Loc{Len: 4}}
	ref := build1(t, &sameFields{Reader: synth.New(cfg), base: base})
	defer ref.Close()
	for _, wait := range []bool{false, true} {
		l := NewLive(time.Nanosecond)
		r := &waitingByTrack{byTrack: byTrack{sameFields: &sameFields{Reader: synth.New(cfg), base: base}, size: batchEvents}, live: l, wait: wait}
		x, err := Build(context.Background(), r, Options{SpillDir: t.TempDir(), Live: l})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if l.Index() != x {
			t.Error("the last publication is not the index Build returned")
		}
		compareIndexesNoDerive(t, x, ref)
		if want := (cfg.Events + batchEvents - 1) / batchEvents; !wait && r.calls < int(want) || wait && r.calls != 1 {
			t.Errorf("wait %v: ReadEventsByTrack called %d times", wait, r.calls)
		}
	}
}
