package render

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/cpel"
	"viewer/trace/cpel/cpeltest"
	"viewer/trace/synth"
	"viewer/trace/tracetest"
)

func benchIndex(b *testing.B, n int64) *Index {
	b.Helper()
	x, err := Build(context.Background(), synth.New(synth.Config{Events: n, Tracks: 64, Seed: 1}), Options{SpillDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { x.Close() })
	return x
}

func BenchmarkBuild(b *testing.B) {
	cpu := startCPU()
	for b.Loop() {
		benchIndex(b, 1_000_000)
	}
	b.ReportMetric(float64(1_000_000*b.N)/b.Elapsed().Seconds(), "events/s")
	cpu.report(b, 1_000_000)
}

// cpuMeter reports the process CPU time per event of a benchmark.
type cpuMeter struct{ start time.Duration }

func startCPU() cpuMeter { return cpuMeter{tracetest.CPUTime()} }

// report adds the metric cpu-ns/event for b.N runs of events each.
func (m cpuMeter) report(b *testing.B, events int) {
	if d := tracetest.CPUTime(); d > 0 {
		b.ReportMetric(float64(d-m.start)/float64(events*b.N), "cpu-ns/event")
	}
}

func BenchmarkGenerate(b *testing.B) {
	for b.Loop() {
		g := synth.New(synth.Config{Events: 1_000_000, Tracks: 64, Seed: 1})
		for {
			if _, err := g.ReadEvent(); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(1_000_000*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkQueryFull answers the whole trace at 2000 px over 50 tracks.
func BenchmarkQueryFull(b *testing.B) {
	x := benchIndex(b, 1_000_000)
	first, last := x.Span()
	var ids []trace.TrackID
	for i := range 50 {
		ids = append(ids, trace.TrackID(i))
	}
	vp := Viewport{Start: first, End: last + 1, Width: 2000, Tracks: ids}
	var s Slice
	for b.Loop() {
		if err := x.QueryInto(context.Background(), vp, &s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuild1Track(b *testing.B) {
	for b.Loop() {
		x, err := Build(context.Background(), synth.New(synth.Config{Events: 1_000_000, Tracks: 1, Seed: 1}), Options{SpillDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		x.Close()
	}
	b.ReportMetric(float64(1_000_000*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkQueryMid answers a window of 1/16 of the trace, where most
// tracks hold a few events per bucket.
func BenchmarkQueryMid(b *testing.B) {
	x := benchIndex(b, 2_000_000)
	first, last := x.Span()
	var ids []trace.TrackID
	for i := range 50 {
		ids = append(ids, trace.TrackID(i))
	}
	w := (last - first) / 16
	vp := Viewport{Start: first + 5*w, End: first + 6*w, Width: 2000, Tracks: ids}
	var s Slice
	items := 0
	for b.Loop() {
		if err := x.QueryInto(context.Background(), vp, &s); err != nil {
			b.Fatal(err)
		}
		items = 0
		for _, t := range s.Tracks {
			items += len(t.Items)
		}
	}
	b.ReportMetric(float64(items), "items")
}

// BenchmarkIndexBatches is the indexers' share of Build alone (spill
// records, columns and pyramids on every core, then time cells) on 1M
// events read beforehand, without the reader.
func BenchmarkIndexBatches(b *testing.B) {
	g := synth.New(synth.Config{Events: 1_000_000, Tracks: 64, Seed: 1})
	var batches []*batch
	rs := &reading{scratch: make([]trace.Event, 0, batchEvents), last: -1 << 63}
	for {
		rs.scratch = rs.scratch[:batchEvents]
		n, err := g.ReadEvents(rs.scratch)
		rs.scratch = rs.scratch[:n]
		bt := &batch{}
		var gr grouper
		for i := range rs.scratch {
			gr.add(bt, rs.scratch[i].Track)
		}
		if err := rs.seal(bt); err != nil {
			b.Fatal(err)
		}
		batches = append(batches, bt)
		if err != nil {
			break
		}
	}
	cpu := startCPU()
	for b.Loop() {
		sp, err := newSpill(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		x := &Index{none: &track{}, spill: sp}
		ix := newIndexers(x)
		for _, bt := range batches {
			if err := ix.index(context.Background(), nil, bt); err != nil {
				b.Fatal(err)
			}
		}
		ix.stop()
		finishTracks(ix.all)
		sp.close()
	}
	cpu.report(b, 1_000_000)
}

// BenchmarkBuildCPEL builds the index of the 8 M-event CPEL file
// cpeltest.Generate makes (the file of issue #22's load figure), through
// the CPEL reader's batch path as `viewer bench FILE` does, and reports
// the process CPU time per event: the whole load, reading included.
func BenchmarkBuildCPEL(b *testing.B) {
	const events = 8_000_000
	path := filepath.Join(b.TempDir(), "bench.cpel")
	fh, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriterSize(fh, 1<<20)
	if err := cpeltest.Generate(bw, events, 1e9); err != nil {
		b.Fatal(err)
	}
	if err := errors.Join(bw.Flush(), fh.Close()); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	cpu := startCPU()
	for b.Loop() {
		r, err := cpel.Format{}.Open(f, st.Size())
		if err != nil {
			b.Fatal(err)
		}
		x, err := Build(context.Background(), r, Options{SpillDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if x.Events() != events {
			b.Fatalf("%d events, want %d", x.Events(), events)
		}
		x.Close()
	}
	cpu.report(b, events)
}

// BenchmarkCells builds the time cells of one track of a million events
// spaced as the 8M-event CPEL file's are per track (37 ns apart on
// average, irregularly), its columns on the heap: the loops over the
// events and over the cells, without the store.
func BenchmarkCells(b *testing.B) {
	t := newTrack(nil)
	g := synth.New(synth.Config{Events: 1_000_000, Tracks: 1, Seed: 1})
	evs := make([]trace.Event, 1_000_000)
	n, _ := g.ReadEvents(evs)
	tm := trace.Time(0)
	for i := range evs[:n] {
		tm += trace.Time(1 + (i*7919)%73)
		evs[i].Time = tm
	}
	t.pushEvents(evs[:n])
	var sc cellScratch
	for b.Loop() {
		t.cells = t.cells[:0]
		t.buildCells(&sc)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}

// BenchmarkPyramid grows the index pyramid of one track of a million
// events of 10 types, 330 events at a time (a group of the 8M-event CPEL
// file's 32768-event batches).
func BenchmarkPyramid(b *testing.B) {
	const n, group = 1_000_000, 330
	t := newTrack(nil)
	types := make([]uint16, n)
	for i := range types {
		types[i] = uint16((i * 7919) % 10)
	}
	t.types.appendAll(types)
	for b.Loop() {
		t.nodes, t.carry = nil, nil
		for from := 0; from < n; from += group {
			t.grown(from, min(from+group, n))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}
