package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/cpel"
	"viewer/trace/cpel/cpeltest"
	"viewer/trace/nettrace/nettracetest"
	"viewer/trace/perf/perftest"
	"viewer/trace/tracetest"
	"viewer/trace/wrap"
)

// dumpInputs are CPEL files for the dump tests: the fixtures, a
// writer-made file with two event sections, undefined tracks and codes and
// %s labels, and every real .cpel when ../shared is there.
func dumpInputs(t *testing.T) map[string][]byte {
	inputs := map[string][]byte{}
	fixtures, _ := filepath.Glob("../../testdata/cpel/*.cpel")
	for _, p := range fixtures {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs[filepath.Base(p)] = b
	}
	w := &cpeltest.Writer{}
	a, b := w.StringTable("A"), w.StringTable("B")
	w.TrackDefs(a, []cpeltest.TrackDef{{ID: 1, Format: "cpu %d"}})
	w.EventDefs(a, []cpeltest.EventDef{{Code: 1, Name: "rx", Format: "%d packets"}, {Code: 2, Name: "node", Format: "%s"}, {Code: 3, Name: "quiet", Format: " "}})
	var ra, rb []cpeltest.Record
	for i := range 10000 {
		ra = append(ra, cpeltest.Record{Ticks: uint64(3 * i), Track: uint32(i % 3), Code: uint32(i % 5), Datum: uint32(i % 7)})
		rb = append(rb, cpeltest.Record{Ticks: uint64(2 * i), Track: uint32(1 + i%2), Code: uint32(1 + i%3), Datum: uint32(i % 4)})
	}
	w.EventList(a, 1e9, ra)
	w.EventList(b, 3e8, rb)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	inputs["two-sections"] = buf.Bytes()
	inputs["two-sections-cut"] = buf.Bytes()[:buf.Len()*2/3]
	if _, err := os.Stat("../../../shared/realdata/cpel"); err == nil || os.Getenv("CI") != "" {
		dir := tracetest.RealData(t, "cpel")
		real, _ := filepath.Glob(filepath.Join(dir, "*.cpel"))
		for _, p := range real {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			inputs[filepath.Base(p)] = b
		}
	}
	return inputs
}

func openCPEL(t *testing.T, data []byte) trace.Reader {
	r, err := cpel.Format{}.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDumpParallel checks that the parallel dump writes exactly the bytes,
// and ends with exactly the error, of the one-goroutine dump, with one to
// three workers and batches from one event to larger than the file.
func TestDumpParallel(t *testing.T) {
	for name, data := range dumpInputs(t) {
		var want bytes.Buffer
		wantErr := dump(context.Background(), openCPEL(t, data), nil, &want, io.Discard)
		if want.Len() == 0 && !strings.Contains(name, "empty") {
			t.Errorf("%s: no output", name)
		}
		if (wantErr != nil) != strings.HasSuffix(name, "-cut") {
			t.Errorf("%s: error %v", name, wantErr)
		}
		for _, workers := range []int{1, 2, 3} {
			for _, batch := range []int{1, 7, 4096} {
				r := openCPEL(t, data)
				var got bytes.Buffer
				err := dumpParallel(context.Background(), r, r.(trace.PayloadDecoder), nil, workers, batch, &got)
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Errorf("%s, %d workers, batches of %d: output differs (%d bytes, want %d)", name, workers, batch, got.Len(), want.Len())
				}
				if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
					t.Errorf("%s, %d workers, batches of %d: error %v, want %v", name, workers, batch, err, wantErr)
				}
			}
		}
	}
}

// failWriter fails every write after the first.
type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n++; w.n > 1 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// TestDumpParallelStops checks that a failing output and a cancelled
// context end the parallel dump with their error, all goroutines done.
func TestDumpParallelStops(t *testing.T) {
	data := dumpInputs(t)["two-sections"]
	r := openCPEL(t, data)
	if err := dumpParallel(context.Background(), r, r.(trace.PayloadDecoder), nil, 2, 100, &failWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("failing writer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = openCPEL(t, data)
	if err := dumpParallel(ctx, r, r.(trace.PayloadDecoder), nil, 2, 100, io.Discard); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// BenchmarkDumpCPEL times `viewer dump` of the generated 8 M-event CPEL
// file (cpeltest.Generate) into io.Discard: on every core as the command runs
// it, and on one goroutine. The target is 5× cpeldump's 1.7 M events/s.
func BenchmarkDumpCPEL(b *testing.B) {
	const n = 8_000_000
	path := filepath.Join(b.TempDir(), "bench.cpel")
	fh, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriterSize(fh, 1<<20)
	if err := cpeltest.Generate(bw, n, 1e9); err != nil {
		b.Fatal(err)
	}
	if err := errors.Join(bw.Flush(), fh.Close()); err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{runtime.GOMAXPROCS(0), 1} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			for b.Loop() {
				f, err := trace.OpenFile(path, formats())
				if err != nil {
					b.Fatal(err)
				}
				if workers > 1 {
					err = dumpParallel(context.Background(), f.Reader, f.Reader.(trace.PayloadDecoder), nil, workers, dumpBatchEvents, io.Discard)
				} else {
					err = dump(context.Background(), f.Reader, nil, io.Discard, io.Discard)
				}
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
		})
	}
}

// dumpOnce runs `viewer dump` of path into out as the command does:
// symbols learnt first, then formatted on workers goroutines (the
// parallel dump) or on one.
func dumpOnce(b *testing.B, path string, workers int, out io.Writer) {
	f, err := wrap.OpenFile(context.Background(), path, formats(), wrap.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sym, err := learnSymbols(context.Background(), f)
	if err != nil {
		b.Fatal(err)
	}
	if workers > 1 {
		err = dumpParallel(context.Background(), f.Reader, f.Reader.(trace.PayloadDecoder), sym, workers, dumpBatchEvents, out)
	} else {
		err = dump(context.Background(), f.Reader, sym, out, io.Discard)
	}
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDumpNetTrace times `viewer dump` of HeartRateMonitor (29.6 MB,
// 114,565 events, most of them method rundown events with three strings
// each) into a counter, symbols learnt first as the command does: on
// every core and on one goroutine. It reports the JSON written per
// second (the target is 0.5 GB/s on two cores).
func BenchmarkDumpNetTrace(b *testing.B) {
	path := filepath.Join(tracetest.RealData(b, "nettrace"), "perfview", "HeartRateMonitor.10068.nettrace")
	for _, workers := range []int{runtime.GOMAXPROCS(0), 1} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			var out countWriter
			cpu0 := tracetest.CPUTime()
			for b.Loop() {
				dumpOnce(b, path, workers, &out)
			}
			b.ReportMetric(float64(out.n)/b.Elapsed().Seconds()/1e9, "GB/s")
			if cpu := (tracetest.CPUTime() - cpu0).Seconds(); cpu > 0 {
				b.ReportMetric(float64(out.n)/cpu/1e9, "GB/cpu-s")
			}
		})
	}
}

// BenchmarkDumpPerf times `viewer dump` of a generated perf.data of 1 M
// EventHeader events (perftest.Generate) into a counter, as the command
// runs it: on every core and on one goroutine. The target is twice
// perf-decode's speed on the same file (1.6 M events/s on two cores).
func BenchmarkDumpPerf(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "eh.data")
	fh, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := errors.Join(perftest.Generate(fh, n, perftest.GenerateOptions{}), fh.Close()); err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{runtime.GOMAXPROCS(0), 1} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			var out countWriter
			cpu0 := tracetest.CPUTime()
			for b.Loop() {
				dumpOnce(b, path, workers, &out)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			if cpu := (tracetest.CPUTime() - cpu0).Seconds(); cpu > 0 {
				b.ReportMetric(float64(n)*float64(b.N)/cpu, "events/cpu-s")
			}
			b.ReportMetric(float64(out.n)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// countWriter counts what is written to it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// parallelInputs are NetTrace and perf.data files for
// TestDumpParallelFormats: a v6 file whose threads are renamed after
// events were read (across sequence points that forget the thread
// table), with stacks, label lists and an event without a schema; a
// generated EventHeader perf.data; and every real NetTrace and perf.data
// file when ../shared is there.
func parallelInputs(t *testing.T) map[string]string {
	dir := t.TempDir()
	inputs := map[string]string{}
	write := func(name string, b []byte) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		inputs[name] = p
	}
	var buf bytes.Buffer
	w := nettracetest.NewWriter(&buf, nettracetest.TraceInfo{TicksPerSecond: 1e9, PointerSize: 8})
	w.Metadata(0, nettracetest.Metadata{ID: 1, Provider: "P", EventID: 1, Name: "Tick",
		Fields: []nettracetest.Field{{Name: "N", Type: nettracetest.TypeUInt32}, {Name: "S", Type: nettracetest.TypeUTF16String}}},
		nettracetest.Metadata{ID: 2, Provider: "Microsoft-Windows-DotNETRuntime", EventID: 4321, Version: 2})
	payload := append([]byte{7, 0, 0, 0}, 'h', 0, 'i', 0, '<', 0, 0, 0)
	ticks := int64(0)
	for round := range 6 {
		w.Threads(nettracetest.Thread{Index: 1, PID: 1, TID: 10, Name: "main-" + strconv.Itoa(round)},
			nettracetest.Thread{Index: 2, PID: 1, TID: 11 + int64(round)})
		w.Stacks(1, []uint64{0x1000, 0x2000}, []uint64{0x3000})
		w.LabelLists(1, []trace.Label{{Key: "ActivityId", Value: trace.GUIDValue([16]byte{1, 2, 3})}})
		var evs []nettracetest.Event
		for i := range 300 {
			ticks += 10
			e := nettracetest.Event{MetadataID: 1, Seq: uint32(round*300 + i + 1), Thread: uint64(1 + i%2), Capture: uint64(1 + i%2),
				Stack: uint32(i % 3), Labels: uint32(i % 2), Ticks: ticks, Sorted: true, Payload: payload}
			if i%50 == 0 {
				e.MetadataID, e.Payload = 2, []byte{0xde, 0xad, 0, byte(i)}
			}
			evs = append(evs, e)
		}
		if err := w.Events(true, evs...); err != nil {
			t.Fatal(err)
		}
		w.SequencePoint(ticks, nettracetest.FlushThreads)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	write("renames.nettrace", buf.Bytes())
	f, err := os.Create(filepath.Join(dir, "eventheader.data"))
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(perftest.Generate(f, 20000, perftest.GenerateOptions{}), f.Close()); err != nil {
		t.Fatal(err)
	}
	inputs["eventheader.data"] = f.Name()
	if _, err := os.Stat("../../../shared/realdata"); err == nil || os.Getenv("CI") != "" {
		for _, sub := range []string{"nettrace", "perf"} {
			root := tracetest.RealData(t, sub)
			filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".nettrace") || strings.HasSuffix(p, ".netperf") || strings.HasSuffix(p, ".data")) {
					inputs[strings.TrimPrefix(p, root)] = p
				}
				return nil
			})
		}
	}
	return inputs
}

// TestDumpParallelFormats checks that the parallel dump of NetTrace and
// perf.data files (symbols learnt as the command learns them) writes
// exactly the bytes, and ends with exactly the error, of the
// one-goroutine dump.
func TestDumpParallelFormats(t *testing.T) {
	ctx := context.Background()
	open := func(path string) (*wrap.File, render.Symbolizer) {
		f, err := wrap.OpenFile(ctx, path, formats(), wrap.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		sym, err := learnSymbols(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return f, sym
	}
	for name, path := range parallelInputs(t) {
		f, sym := open(path)
		var want bytes.Buffer
		wantErr := dump(ctx, f.Reader, sym, &want, io.Discard)
		f.Close()
		if want.Len() == 0 {
			t.Errorf("%s: no output", name)
		}
		batches := []int{7, dumpBatchEvents}
		if tracetest.Exhaustive() {
			batches = append(batches, 1)
		}
		for _, batch := range batches {
			f, sym := open(path)
			pd, ok := f.Reader.(trace.PayloadDecoder)
			if !ok {
				t.Fatalf("%s: the reader is no PayloadDecoder", name)
			}
			var got bytes.Buffer
			err := dumpParallel(ctx, f.Reader, pd, sym, 2, batch, &got)
			f.Close()
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("%s, batches of %d: output differs (%d bytes, want %d)", name, batch, got.Len(), want.Len())
			}
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Errorf("%s, batches of %d: error %v, want %v", name, batch, err, wantErr)
			}
		}
	}
}
