package clr

import (
	"cmp"
	"slices"
	"strconv"

	"viewer/trace"
	"viewer/trace/span"
)

// GCTracks derives the garbage collections of a .NET trace as timeline
// tracks, from the rows of a [GCs] table: per process, under its process
// track (else the thread of its first GC), a "GC" slice track with each
// suspension a GC ran in (GC/SuspendEEStart → GC/RestartEEStop, named
// "pause") at depth 0 and each GC (GC/Start → GC/Stop, named "GC gen G",
// with its number, generation, reason, type, pause and heap sizes as
// arguments) at depth 1, and a "GC heap bytes" counter track: the heap before
// each GC (PerfView's estimate) at its start and after it (GC/HeapStats)
// at its end. A GC whose GC/Stop the trace does not hold ends, open, at
// the trace's last event; a GC/Stop whose GC/Start it does not hold is a
// slice open at the trace's first event.
type GCTracks struct {
	// Only, when not nil, says which event types may be runtime events
	// (in a perf.data file: the .NET user_events ones); nil means all.
	Only func(trace.TypeID) bool
	gcs  *GCs
}

// NewGCTracks returns a GC track deriver.
func NewGCTracks() *GCTracks { return &GCTracks{gcs: NewGCs()} }

// Observe implements span.Deriver.
func (g *GCTracks) Observe(r trace.Reader, e trace.Event, _ *span.Builder) {
	if g.Only == nil || g.Only(e.Type) {
		g.gcs.Observe(r, e)
	}
}

// Finish implements span.Deriver.
func (g *GCTracks) Finish(r trace.Reader, b *span.Builder) {
	m := r.Meta()
	type procTracks struct{ slices, heap span.TrackID }
	procs := map[int64]procTracks{}
	tracksOf := func(pid int64, thread trace.TrackID) procTracks {
		if t, ok := procs[pid]; ok {
			return t
		}
		of := processTrack(m, pid)
		if of == trace.NoTrack {
			of = thread // NetTrace has no process tracks: under the GC's thread, in its process
		}
		name := "GC" // its owner says which process
		if of == trace.NoTrack && pid >= 0 {
			name = "GC (pid " + strconv.FormatInt(pid, 10) + ")"
		}
		t := procTracks{
			slices: b.Track(span.Track{Kind: span.KindSlices, Name: name, Of: of, CPU: trace.NoCPU}),
			heap:   b.Track(span.Track{Kind: span.KindCounter, Name: name + " heap bytes", Of: of, CPU: trace.NoCPU}),
		}
		procs[pid] = t
		return t
	}
	pause, stop := b.Name("pause"), b.Name("GC/Stop without GC/Start")
	type pauseKey struct {
		pid        int64
		start, end trace.Time
	}
	paused := map[pauseKey]bool{}
	rows := slices.Clone(g.gcs.Rows())
	// The heap counter's samples go in time order per process.
	slices.SortStableFunc(rows, func(a, c GC) int { return cmp.Compare(a.Start, c.Start) })
	for i := range rows {
		gc := &rows[i]
		t := tracksOf(gc.PID, gc.Track)
		if gc.HasPause {
			k := pauseKey{gc.PID, gc.PauseStart, gc.PauseEnd}
			if !paused[k] { // GCs that ran in one suspension share its slice
				paused[k] = true
				b.Add(span.Slice{Start: gc.PauseStart, End: gc.PauseEnd, Track: t.slices, Name: pause, Thread: gc.Track})
			}
		}
		s := span.Slice{Start: gc.Start, End: gc.End, Track: t.slices, Thread: gc.Track, Depth: 1,
			Name: b.Name("GC gen " + strconv.FormatInt(gc.Generation, 10)),
			Args: b.Args(gcArgs(gc))}
		if !gc.HasEnd {
			s.End, s.Flags = b.Last(), span.OpenEnd
		}
		b.Add(s)
		if gc.HasHeap {
			end := gc.Start
			if gc.HasEnd {
				end = gc.End
			}
			b.AddSample(span.Sample{Time: gc.Start, Track: t.heap, Value: float64(gc.HeapBefore)})
			b.AddSample(span.Sample{Time: end, Track: t.heap, Value: float64(gc.HeapAfter)})
		}
	}
	for _, o := range g.gcs.Orphans() {
		t := tracksOf(o.PID, o.Track)
		b.Add(span.Slice{Start: b.First(), End: o.Time, Track: t.slices, Thread: o.Track, Depth: 1, Name: stop, Flags: span.OpenStart,
			Args: b.Args([]trace.Field{{Name: "Number", Value: trace.IntValue(o.Number)}})})
	}
}

// gcArgs returns the arguments of a GC's slice.
func gcArgs(gc *GC) []trace.Field {
	f := []trace.Field{
		{Name: "Number", Value: trace.IntValue(gc.Number)},
		{Name: "Generation", Value: trace.IntValue(gc.Generation)},
		{Name: "Reason", Value: trace.StringValue(gc.Reason)},
	}
	if gc.Type != "" {
		f = append(f, trace.Field{Name: "Type", Value: trace.StringValue(gc.Type)})
	}
	if gc.HasPause {
		f = append(f, trace.Field{Name: "PauseNs", Value: trace.IntValue(int64(gc.Pause()))})
	}
	if gc.HasHeap {
		f = append(f,
			trace.Field{Name: "HeapBefore", Value: trace.UintValue(gc.HeapBefore)},
			trace.Field{Name: "HeapAfter", Value: trace.UintValue(gc.HeapAfter)},
			trace.Field{Name: "Promoted", Value: trace.UintValue(gc.Promoted)})
	}
	return f
}

// processTrack returns the process track of pid, or trace.NoTrack when
// the trace has none (NetTrace has threads only; the GC tracks then go
// under the thread of the process's first GC, so the page groups them
// with the process).
func processTrack(m *trace.Meta, pid int64) trace.TrackID {
	if pid < 0 {
		return trace.NoTrack
	}
	for i, t := range m.Tracks {
		if t.Kind == trace.TrackProcess && t.PID == pid {
			return trace.TrackID(i)
		}
	}
	return trace.NoTrack
}
