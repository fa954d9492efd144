package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/cpel/cpeltest"
	"viewer/trace/elog/elogtest"
	"viewer/trace/nettrace"
	"viewer/trace/nettrace/nettracetest"
	"viewer/trace/perf"
	"viewer/trace/perf/perftest"
)

// Hostile inputs: about 1 MB each, built here for every registered format
// to aim at its worst case — a valid header followed by the most records
// the bytes allow, claimed counts and sizes at the readers' Max… limits,
// deep nesting, formats that expand, and random bytes after a valid
// header. Each must be read (or refused) within the bounds below;
// BenchmarkHostile reports the real figures.
const (
	hostileSize     = 1 << 20
	hostileMaxTime  = 5 * time.Second // generous: the CI machine is shared
	hostileMaxAlloc = 100 << 20       // bytes allocated while reading one input
)

// hostileInput is one input and the format that must recognize it.
type hostileInput struct {
	name, format string
	data         []byte
}

// hostileResult is what reading one input cost.
type hostileResult struct {
	events  int
	err     error // the reader's FormatError, if any
	elapsed time.Duration
	alloc   uint64
}

// readHostile opens data, reads every event and decodes every event's
// details, stack and labels, measuring wall time and bytes allocated. A
// panic or an error that is not a *trace.FormatError is returned as fail.
func readHostile(data []byte) (res hostileResult, fail error) {
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	defer func() {
		res.elapsed = time.Since(start)
		runtime.ReadMemStats(&ms1)
		res.alloc = ms1.TotalAlloc - ms0.TotalAlloc
		if p := recover(); p != nil {
			buf := make([]byte, 8<<10)
			fail = fmt.Errorf("panic: %v\n%s", p, buf[:runtime.Stack(buf, false)])
		}
	}()
	r, err := trace.Open(bytes.NewReader(data), int64(len(data)), formats())
	if err != nil {
		res.err = err
		return res, nil // refused cleanly
	}
	for {
		e, err := r.ReadEvent()
		if err == io.EOF {
			return res, nil
		}
		if err != nil {
			res.err = err
			if _, ok := errors.AsType[*trace.FormatError](err); !ok {
				return res, fmt.Errorf("error is not a *trace.FormatError: %v", err)
			}
			return res, nil
		}
		r.Details(e)
		r.Stack(e.Stack)
		r.Labels(e.Labels)
		res.events++
	}
}

// TestHostile reads every hostile input under the time and allocation
// bounds, and checks that each is recognized as the format it targets.
func TestHostile(t *testing.T) {
	for _, in := range hostileInputs(t) {
		t.Run(in.name, func(t *testing.T) {
			f, err := trace.Sniff(bytes.NewReader(in.data), int64(len(in.data)), formats())
			if err != nil || f.Name() != in.format {
				t.Fatalf("not recognized as %s: %v", in.format, err)
			}
			res, fail := readHostile(in.data)
			if fail != nil {
				t.Fatal(fail)
			}
			t.Logf("%d bytes: %d events in %v, %.1f MB allocated, err %v",
				len(in.data), res.events, res.elapsed.Round(time.Millisecond), float64(res.alloc)/1e6, res.err)
			if res.elapsed > hostileMaxTime {
				t.Errorf("took %v, more than %v", res.elapsed, hostileMaxTime)
			}
			if res.alloc > hostileMaxAlloc {
				t.Errorf("allocated %d bytes, more than %d", res.alloc, hostileMaxAlloc)
			}
		})
	}
}

// BenchmarkHostile reports, per hostile input, the milliseconds and the
// megabytes allocated to read it.
func BenchmarkHostile(b *testing.B) {
	for _, in := range hostileInputs(b) {
		b.Run(in.name, func(b *testing.B) {
			var total time.Duration
			var alloc uint64
			for range b.N {
				res, fail := readHostile(in.data)
				if fail != nil {
					b.Fatal(fail)
				}
				total += res.elapsed
				alloc += res.alloc
			}
			b.ReportMetric(float64(total)/1e6/float64(b.N), "ms/input")
			b.ReportMetric(float64(alloc)/1e6/float64(b.N), "MB/input")
		})
	}
}

// hostileInputs builds every input; random-after-header inputs keep the
// head of a small valid file of each format and fill the rest of the
// megabyte with seeded random bytes.
func hostileInputs(tb testing.TB) []hostileInput {
	tb.Helper()
	var ins []hostileInput
	add := func(format, name string, data []byte) {
		ins = append(ins, hostileInput{name: format + "/" + name, format: format, data: data})
	}
	for _, g := range []struct {
		format string
		inputs func(testing.TB) map[string][]byte
		small  func(testing.TB) []byte
		head   int // bytes of the small file kept before random bytes
	}{
		{"nettrace", hostileNetTrace, smallNetTrace, 0},
		{"cpel", hostileCPEL, smallCPEL, 8},
		{"elog", hostileElog, smallElog, 0},
		{"perf", hostilePerf, smallPerf, 0},
	} {
		inputs := g.inputs(tb)
		var biggest []byte
		for name, data := range inputs {
			add(g.format, name, data)
			if len(data) > len(biggest) {
				biggest = data
			}
		}
		small := g.small(tb)
		for seed := range uint64(3) {
			rng := rand.New(rand.NewPCG(seed, 99))
			head := g.head
			if head == 0 {
				head = len(small) / 2
			}
			data := append(make([]byte, 0, hostileSize), small[:head]...)
			for len(data) < hostileSize {
				data = append(data, byte(rng.Uint32()))
			}
			add(g.format, fmt.Sprintf("random-after-%dB-seed%d", head, seed), data)
			// The largest structured input with bits flipped past its
			// first kilobyte: parsing gets deep before meeting damage.
			data = bytes.Clone(biggest)
			for range 300 {
				data[1024+rng.IntN(len(data)-1024)] ^= byte(1 << rng.IntN(8))
			}
			add(g.format, fmt.Sprintf("flipped-bits-seed%d", seed), data)
		}
	}
	return ins
}

// --- CPEL ---

func cpelBytes(tb testing.TB, w *cpeltest.Writer) []byte {
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func smallCPEL(tb testing.TB) []byte {
	w := &cpeltest.Writer{Date: 1700000000}
	t := w.StringTable("FileStrtab")
	w.EventDefs(t, []cpeltest.EventDef{{Code: 1, Name: "ev", Format: "%s"}, {Code: 2, Name: "n", Format: "len %u"}})
	w.TrackDefs(t, []cpeltest.TrackDef{{ID: 1, Format: "cpu %d"}})
	s := t.Add("hello")
	w.EventList(t, 1e6, []cpeltest.Record{{Ticks: 1, Track: 1, Code: 1, Datum: s}, {Ticks: 2, Track: 1, Code: 2, Datum: 7}})
	return cpelBytes(tb, w)
}

func hostileCPEL(tb testing.TB) map[string][]byte {
	m := map[string][]byte{}
	const rec = 20 // bytes of one event record

	// One section of the most records 1 MB holds, in reverse time order:
	// the reader must sort them all (MaxUnsortedEvents), on unknown
	// tracks and codes (fallback names).
	w := &cpeltest.Writer{}
	t := w.StringTable("S")
	n := hostileSize / rec
	w.Events(t, 3, n, func(i int) cpeltest.Record {
		return cpeltest.Record{Ticks: uint64(n - i), Track: uint32(i), Code: uint32(i * 7), Datum: uint32(i)}
	})
	m["reversed-records-unknown-ids"] = cpelBytes(tb, w)

	// Thousands of one-event sections, each with its own string table:
	// the merge heap and the per-section buffers at their widest.
	w = &cpeltest.Writer{}
	for i := range 8000 {
		t := w.StringTable(fmt.Sprintf("T%d", i))
		w.EventList(t, uint32(1+i), []cpeltest.Record{{Ticks: uint64(8000 - i), Track: 1, Code: 1, Datum: 1}})
	}
	m["many-sections"] = cpelBytes(tb, w)

	// Datum formats that expand: long runs of directives with huge
	// widths, %k with no symbol table, %s on offsets everywhere; events
	// fill the rest.
	w = &cpeltest.Writer{}
	t = w.StringTable("F")
	var defs []cpeltest.EventDef
	var tracks []cpeltest.TrackDef
	for c := range 64 {
		defs = append(defs, cpeltest.EventDef{Code: uint32(c), Name: strings.Repeat("%999999d", 50),
			Format: strings.Repeat([]string{"%4096s", "%-4096k", "%.*d%n", "%0999999999u", "%s%s%s"}[c%5], 400)})
		tracks = append(tracks, cpeltest.TrackDef{ID: uint32(c), Format: strings.Repeat("%999d", 100)})
	}
	w.EventDefs(t, defs)
	w.TrackDefs(t, tracks)
	long := t.Add(strings.Repeat("x", 200<<10)) // no NUL for a long way
	size := len(cpelBytes(tb, w))
	n = (hostileSize - size) / rec
	w.Events(t, 1e9, n, func(i int) cpeltest.Record {
		return cpeltest.Record{Ticks: uint64(i), Track: uint32(i % 64), Code: uint32(i % 64), Datum: long + uint32(i%1000)}
	})
	m["expanding-formats"] = cpelBytes(tb, w)
	return m
}

// --- elog ---

func elogBytes(tb testing.TB, w *elogtest.Writer, n int, gen func(i int) elogtest.Event) []byte {
	var buf bytes.Buffer
	if err := w.WriteFunc(&buf, n, gen); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func elogWriter(types []elogtest.EventType, tracks []string) *elogtest.Writer {
	return &elogtest.Writer{
		RingSize:      1 << 20,
		SerializeTime: elogtest.TimeStamp{OSNsec: 3e17, CPU: 5000},
		InitTime:      elogtest.TimeStamp{OSNsec: 3e17 - 1e9},
		Types:         types,
		Tracks:        tracks,
		StringTable:   []byte("a\x00"),
	}
}

func smallElog(tb testing.TB) []byte {
	w := elogWriter([]elogtest.EventType{{Format: "rx %d %s", FormatArgs: "i4s8"}}, []string{"main"})
	return elogBytes(tb, w, 20, func(i int) elogtest.Event {
		return elogtest.Event{Time: float64(i) * 1e-6, Args: []elogtest.Value{{N: uint64(i)}, {S: "pkt"}}}
	})
}

func hostileElog(tb testing.TB) map[string][]byte {
	m := map[string][]byte{}

	// The most argument-less events 1 MB holds, times running backwards.
	w := elogWriter([]elogtest.EventType{{Format: "tick", FormatArgs: ""}}, []string{"t"})
	one := len(elogBytes(tb, w, 1, func(int) elogtest.Event { return elogtest.Event{} }))
	two := len(elogBytes(tb, w, 2, func(int) elogtest.Event { return elogtest.Event{} }))
	n := (hostileSize - one) / max(1, two-one)
	m["reversed-tiny-events"] = elogBytes(tb, w, n, func(i int) elogtest.Event {
		return elogtest.Event{Time: float64(n-i) * 1e-9}
	})

	// Many types and tracks, formats of many directives with huge widths,
	// enum indexes out of range, strings as long as a megabyte allows.
	var types []elogtest.EventType
	var tracks []string
	for i := range 2000 {
		types = append(types, elogtest.EventType{
			Format:     strings.Repeat("%999999d %s %-4096x ", 10),
			FormatArgs: "i4t4i8",
			Enums:      []string{"e"},
		})
		tracks = append(tracks, strings.Repeat("track", 20)+fmt.Sprint(i))
	}
	w = elogWriter(types, tracks)
	size := len(elogBytes(tb, w, 0, nil))
	n = max(1, (hostileSize-size)/20)
	m["expanding-formats"] = elogBytes(tb, w, n, func(i int) elogtest.Event {
		return elogtest.Event{Type: uint16(i % 2000), Track: uint16(i % 2000), Time: float64(i) * 1e-6,
			Args: []elogtest.Value{{N: uint64(i)}, {N: 1 << 31}, {N: uint64(i) << 40}}}
	})
	w = elogWriter([]elogtest.EventType{{Format: strings.Repeat("%s", 64), FormatArgs: "s0"}}, []string{"t"})
	m["long-strings"] = elogBytes(tb, w, 8, func(i int) elogtest.Event {
		return elogtest.Event{Time: float64(i), Args: []elogtest.Value{{S: strings.Repeat("y", hostileSize/10)}}}
	})
	return m
}

// --- NetTrace ---

func netTraceBytes(tb testing.TB, build func(w *nettracetest.Writer) error) []byte {
	var buf bytes.Buffer
	w := nettracetest.NewWriter(&buf, nettracetest.TraceInfo{
		Wall: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), TicksPerSecond: 1e7, PointerSize: 8,
	})
	if err := build(w); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func smallNetTrace(tb testing.TB) []byte {
	return netTraceBytes(tb, func(w *nettracetest.Writer) error {
		w.Metadata(0, nettracetest.Metadata{ID: 1, Provider: "P", EventID: 1, Name: "E",
			Fields: []nettracetest.Field{{Name: "x", Type: nettracetest.TypeUInt32}}})
		w.Threads(nettracetest.Thread{Index: 1, Name: "main", PID: 1, TID: 2})
		var evs []nettracetest.Event
		for i := range 20 {
			evs = append(evs, nettracetest.Event{MetadataID: 1, Seq: uint32(i + 1), Thread: 1, Capture: 1,
				Ticks: int64(i), Sorted: true, Payload: []byte{byte(i), 0, 0, 0}})
		}
		return w.Events(true, evs...)
	})
}

func hostileNetTrace(tb testing.TB) map[string][]byte {
	m := map[string][]byte{}

	// Empty-payload events with compressed headers, the smallest records
	// the format has, in blocks of the most events allowed, out of order
	// within each block.
	m["tiny-events"] = netTraceBytes(tb, func(w *nettracetest.Writer) error {
		w.Metadata(0, nettracetest.Metadata{ID: 1, Provider: "P", EventID: 1, Name: "E"})
		w.Threads(nettracetest.Thread{Index: 1, Name: "main", PID: 1, TID: 2})
		evs := make([]nettracetest.Event, 45000)
		for b := range 2 {
			for i := range evs {
				evs[i] = nettracetest.Event{MetadataID: 1, Seq: uint32(b*len(evs) + i + 1), Thread: 1, Capture: 1,
					Ticks: int64(b*len(evs) + len(evs) - i)}
			}
			if err := w.Events(true, evs...); err != nil {
				return err
			}
		}
		return nil
	})

	// Schemas nested to MaxDepth, with arrays of arrays of structs, and
	// payloads whose array counts claim the most elements (65535 per
	// level) while holding a few bytes.
	nest := func(depth int) nettracetest.Field {
		f := nettracetest.Field{Name: "leaf", Type: nettracetest.TypeUInt64}
		for d := range depth {
			inner := f
			if d%2 == 0 {
				f = nettracetest.Field{Name: "a", Type: nettracetest.TypeArray, Elem: &inner}
			} else {
				f = nettracetest.Field{Name: "o", Type: nettracetest.TypeObject, Fields: []nettracetest.Field{inner, {Name: "n", Type: nettracetest.TypeUInt32}}}
			}
		}
		return f
	}
	m["nested-arrays"] = netTraceBytes(tb, func(w *nettracetest.Writer) error {
		var rows []nettracetest.Metadata
		for i := range 40 {
			rows = append(rows, nettracetest.Metadata{ID: uint32(i + 1), Provider: "P", EventID: uint32(i), Name: "N",
				Fields: []nettracetest.Field{nest(i % nettrace.MaxDepth), {Name: "s", Type: nettracetest.TypeUTF16String}}})
		}
		w.Metadata(0, rows...)
		w.Threads(nettracetest.Thread{Index: 1, PID: 1, TID: 2})
		payload := bytes.Repeat([]byte{0xff, 0xff}, 64) // every count 65535
		var evs []nettracetest.Event
		for i := range hostileSize / (len(payload) + 8) {
			evs = append(evs, nettracetest.Event{MetadataID: uint32(i%40 + 1), Seq: uint32(i + 1), Thread: 1, Capture: 1,
				Ticks: int64(i), Sorted: true, Payload: payload})
		}
		return w.Events(true, evs...)
	})

	// Stacks: many stacks of the most frames a block takes.
	m["many-stacks"] = netTraceBytes(tb, func(w *nettracetest.Writer) error {
		w.Metadata(0, nettracetest.Metadata{ID: 1, Provider: "P", EventID: 1, Name: "E"})
		w.Threads(nettracetest.Thread{Index: 1, PID: 1, TID: 2})
		frames := make([]uint64, 4096)
		for i := range frames {
			frames[i] = uint64(i) << 12
		}
		stacks := make([][]uint64, 30)
		for i := range stacks {
			stacks[i] = frames
		}
		if err := w.Stacks(1, stacks...); err != nil {
			return err
		}
		var evs []nettracetest.Event
		for i := range 10000 {
			evs = append(evs, nettracetest.Event{MetadataID: 1, Seq: uint32(i + 1), Thread: 1, Capture: 1,
				Ticks: int64(i), Sorted: true, Stack: uint32(i%30 + 1)})
		}
		return w.Events(true, evs...)
	})
	return m
}

// --- perf ---

// seekBuffer is an in-memory io.WriteSeeker for file-mode perf.data.
type seekBuffer struct {
	b   []byte
	off int64
}

func (s *seekBuffer) Write(p []byte) (int, error) {
	if need := s.off + int64(len(p)); need > int64(len(s.b)) {
		s.b = append(s.b, make([]byte, need-int64(len(s.b)))...)
	}
	copy(s.b[s.off:], p)
	s.off += int64(len(p))
	return len(p), nil
}

func (s *seekBuffer) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		s.off = off
	case io.SeekCurrent:
		s.off += off
	case io.SeekEnd:
		s.off = int64(len(s.b)) + off
	}
	return s.off, nil
}

func perfBytes(tb testing.TB, opts perftest.WriterOptions, body func(w *perftest.Writer)) []byte {
	f := &seekBuffer{}
	w, err := perftest.NewWriter(f, opts)
	if err != nil {
		tb.Fatal(err)
	}
	body(w)
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return f.b
}

func smallPerf(tb testing.TB) []byte {
	f := &seekBuffer{}
	if err := perftest.Generate(f, 30, perftest.GenerateOptions{SchedEvery: 3}); err != nil {
		tb.Fatal(err)
	}
	return f.b
}

func hostilePerf(tb testing.TB) map[string][]byte {
	m := map[string][]byte{}
	// Samples with nothing but a time: the smallest records, times
	// running backwards inside each round.
	attr := perftest.Attr{Name: "sw:cpu-clock", Type: perftest.TypeSoftware, SampleType: perftest.SampleTime, IDs: []uint64{1}}
	m["tiny-samples"] = perfBytes(tb, perftest.WriterOptions{Attrs: []perftest.Attr{attr}}, func(w *perftest.Writer) {
		n := hostileSize / 16
		for i := range n {
			w.Sample(perftest.Sample{Time: uint64(n - i)})
			if i%100000 == 99999 {
				w.FinishedRound()
			}
		}
	})

	// Callchains of MaxCallchain frames, each distinct, on many threads.
	attr = perftest.Attr{Name: "sw:cpu-clock", Type: perftest.TypeSoftware, SampleType: perftest.SampleIP | perftest.SampleTID | perftest.SampleTime | perftest.SampleCPU | perftest.SampleCallchain, IDs: []uint64{1}}
	m["long-callchains"] = perfBytes(tb, perftest.WriterOptions{Attrs: []perftest.Attr{attr}}, func(w *perftest.Writer) {
		chain := make([]uint64, perf.MaxCallchain)
		for i := range hostileSize / (8 * len(chain)) {
			for j := range chain {
				chain[j] = uint64(i*len(chain)+j) << 4
			}
			w.Sample(perftest.Sample{IP: 1, PID: int32(i), TID: int32(i), Time: uint64(i), Callchain: chain})
		}
	})

	// COMPRESSED records: random addresses keep the ratio low, so a
	// megabyte of zstd frames holds several of records; and a bomb of
	// identical samples, far beyond perf's ratio, which must be refused.
	attr = perftest.Attr{Name: "sw:cpu-clock", Type: perftest.TypeSoftware, SampleType: perftest.SampleIP | perftest.SampleTID | perftest.SampleTime, IDs: []uint64{1}}
	rng := rand.New(rand.NewPCG(1, 2))
	m["compressed"] = perfBytes(tb, perftest.WriterOptions{Compress: true, Attrs: []perftest.Attr{attr}}, func(w *perftest.Writer) {
		for i := range 70_000 {
			w.Sample(perftest.Sample{IP: rng.Uint64(), PID: 1, TID: int32(i % 64), Time: uint64(rng.IntN(1e6))})
			if i%10000 == 9999 {
				w.FinishedRound()
			}
		}
	})
	m["compression-bomb"] = perfBytes(tb, perftest.WriterOptions{Compress: true, Attrs: []perftest.Attr{attr}}, func(w *perftest.Writer) {
		for i := range 4_000_000 {
			w.Sample(perftest.Sample{IP: 1, PID: 1, TID: 1, Time: 5})
			if i%200000 == 199999 {
				w.FinishedRound()
			}
		}
	})

	// Many comm and mmap records: threads and mappings tables at their
	// largest, with names at MaxCommLen.
	m["many-threads"] = perfBytes(tb, perftest.WriterOptions{Attrs: []perftest.Attr{attr}}, func(w *perftest.Writer) {
		name := strings.Repeat("c", perf.MaxCommLen)
		for i := range hostileSize / 600 {
			w.Comm(int32(i), int32(i), name, uint64(i))
			w.Mmap2(int32(i), int32(i), uint64(i)<<20, 1<<20, name)
			w.Sample(perftest.Sample{IP: uint64(i) << 20, PID: int32(i), TID: int32(i), Time: uint64(i)})
		}
	})
	return m
}
