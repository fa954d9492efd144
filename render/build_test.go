package render

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

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
