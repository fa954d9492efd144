package perf

import (
	"slices"
	"testing"

	"viewer/trace"
)

// TestThreadLearnsProcess checks that a thread first seen without its
// process gets its process as parent once a record names it, even when
// adding the process track moves the track table.
func TestThreadLearnsProcess(t *testing.T) {
	rd := &Reader{threads: map[threadKey]trace.TrackID{}, processes: map[int64]trace.TrackID{}}
	th := rd.threadSlow(-1, 7)
	rd.meta.Tracks = slices.Clip(rd.meta.Tracks) // the next append moves the table
	if got := rd.threadSlow(42, 7); got != th {
		t.Fatalf("thread 7 is track %d, then %d", th, got)
	}
	p, ok := rd.processes[42]
	if tr := rd.meta.Tracks[th]; !ok || tr.PID != 42 || tr.Parent != p {
		t.Errorf("thread 7: pid %d parent %d; process 42 is track %d (%v)", tr.PID, tr.Parent, p, ok)
	}
}
