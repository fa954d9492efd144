package render

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

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

// byTrack hands out a reader's events grouped by track through
// ReadEventsByTrack, grouping by brute force what the reader's
// ReadEvents returns in batches of at most size (trace/cpel groups as it
// decodes); twice, when set, splits every batch's first track into two
// groups, which breaks the contract.
type byTrack struct {
	trace.Reader
	size  int
	twice bool
}

func (r *byTrack) ReadEventsByTrack(dst []trace.Event, tracks []trace.TrackID, counts []int32) (int, []trace.TrackID, []int32, error) {
	evs := make([]trace.Event, min(len(dst), r.size))
	var n int
	var err error
	if br, ok := r.Reader.(batchReader); ok {
		n, err = br.ReadEvents(evs)
	} else {
		for ; n < len(evs) && err == nil; n++ {
			evs[n], err = r.ReadEvent()
		}
		if err != nil {
			n--
		}
	}
	evs = evs[:n]
	at := 0
	for _, e := range evs {
		if slices.Contains(tracks, e.Track) {
			continue
		}
		tracks = append(tracks, e.Track)
		counts = append(counts, 0)
		for _, f := range evs {
			if f.Track == e.Track {
				dst[at] = f
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
// four; in shorter batches the same index; events out of time order are
// clamped per track, so that every track's times stay sorted; and a
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
	for _, cfg := range []synth.Config{
		{Events: 100000, Tracks: 64, Seed: 3},
		{Events: 60000, Tracks: 7, Types: 70000, Seed: 4, Stacks: 20, StackDepth: 4}, // escaped types, stacks
	} {
		build := func(r trace.Reader) *Index {
			x := build1(t, r)
			t.Cleanup(func() { x.Close() })
			return x
		}
		want := build(synth.New(cfg))
		wantFile := write(want)
		for _, procs := range []int{1, 4} {
			runtime.GOMAXPROCS(procs)
			if got := write(build(&byTrack{Reader: synth.New(cfg), size: batchEvents})); !bytes.Equal(got, wantFile) {
				t.Errorf("%+v, %d cores: the index file of a reader by track differs (%d bytes, want %d)", cfg, procs, len(got), len(wantFile))
			}
		}
		compareIndexesNoDerive(t, build(&byTrack{Reader: synth.New(cfg), size: 1000}), want)
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

	x := build1(t, &byTrack{Reader: disordered(), size: 700})
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

	if _, err := Build(context.Background(), &byTrack{Reader: synth.New(synth.Config{Events: 5000, Seed: 1}), size: 100, twice: true}, Options{SpillDir: t.TempDir()}); err == nil {
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
