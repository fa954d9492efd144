package nettrace

import (
	"bytes"
	"io"
	"runtime"
	"testing"

	"viewer/trace"
	"viewer/trace/nettrace/nettracetest"
	"viewer/trace/tracetest"
)

// benchRead reads data to its end; details decodes every event's
// payload as `viewer dump` does (AppendDetails into reused storage), and
// reports the allocations per pass and per block next to the events per
// second: decoding should allocate per block (chunks of strings), not
// per event.
func benchRead(b *testing.B, data []byte, details bool) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var n, blocks int
	var fields []trace.Field
	var label []byte
	cpu0 := tracetest.CPUTime()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			b.Fatal(err)
		}
		n = 0
		for {
			e, err := r.ReadEvent()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if details {
				if fields, label, err = r.AppendDetails(fields[:0], label[:0], e); err != nil {
					b.Fatal(err)
				}
			}
			n++
		}
		blocks = r.blocks
	}
	runtime.ReadMemStats(&ms1)
	if allocs := float64(ms1.Mallocs-ms0.Mallocs) / float64(b.N); blocks > 0 {
		b.ReportMetric(allocs/float64(blocks), "allocs/block")
		b.ReportMetric(allocs/float64(n), "allocs/event")
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	// On a shared machine wall time overstates the cost; CPU time of the
	// process (GC included) does not.
	if cpu := (tracetest.CPUTime() - cpu0).Seconds(); cpu > 0 {
		b.ReportMetric(float64(n)*float64(b.N)/cpu, "events/cpu-s")
		b.ReportMetric(float64(len(data))*float64(b.N)/cpu/1e6, "MB/cpu-s")
	}
}

// BenchmarkHeartRateMonitor streams the largest real file (29.6 MB).
func BenchmarkHeartRateMonitor(b *testing.B) {
	r, data := openReal(b, "perfview/HeartRateMonitor.10068.nettrace")
	_ = r
	b.Run("located", func(b *testing.B) { benchRead(b, data, false) })
	b.Run("decoded", func(b *testing.B) { benchRead(b, data, true) })
}

// generate writes a v6 file of n small events the way the runtime lays
// them out: each event block holds one thread's events in time order, the
// threads' blocks interleave, and a sequence point follows every ~8 MB.
func generate(tb testing.TB, n, threads int) []byte {
	var buf bytes.Buffer
	buf.Grow(n * 16)
	w := nettracetest.NewWriter(&buf, nettracetest.TraceInfo{SyncTicks: 0, TicksPerSecond: 1e9, PointerSize: 8})
	fields := []nettracetest.Field{{Name: "Count", Type: nettracetest.TypeUInt32}, {Name: "Flags", Type: nettracetest.TypeUInt16}}
	w.Metadata(0, nettracetest.Metadata{ID: 1, Provider: "Bench", EventID: 1, Name: "Tick", Fields: fields},
		nettracetest.Metadata{ID: 2, Provider: "Bench", EventID: 2, Name: "Tock", Fields: fields})
	const perBlock = 1000
	var rows []nettracetest.Thread
	for i := range threads {
		rows = append(rows, nettracetest.Thread{Index: uint64(i + 1), PID: 1, TID: int64(100 + i)})
	}
	w.Threads(rows...)
	w.Stacks(1, []uint64{0x1000, 0x2000}, []uint64{0x3000, 0x4000, 0x5000})
	seq := make([]uint32, threads)
	evs := make([]nettracetest.Event, perBlock)
	payload := []byte{1, 0, 0, 0, 2, 0}
	var ticks int64
	sp := buf.Len()
	for done := 0; done < n; {
		base := ticks
		for th := range threads {
			k := min(perBlock, n-done)
			if k == 0 {
				break
			}
			for i := range k {
				seq[th]++
				evs[i] = nettracetest.Event{MetadataID: uint32(1 + i%2), Seq: seq[th], Thread: uint64(th + 1), Capture: uint64(th + 1),
					Proc: uint32(th), Stack: uint32(1 + i%3/2), Ticks: base + int64(i*threads*10+th), Sorted: true, Payload: payload}
			}
			if err := w.Events(true, evs[:k]...); err != nil {
				tb.Fatal(err)
			}
			done += k
		}
		ticks = base + int64(perBlock*threads*10)
		if buf.Len()-sp > 8<<20 {
			w.SequencePoint(ticks, 0)
			w.Stacks(1, []uint64{0x1000, 0x2000}, []uint64{0x3000, 0x4000, 0x5000})
			sp = buf.Len()
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkGenerated streams a generated v6 file of 5M small events.
func BenchmarkGenerated(b *testing.B) {
	data := generate(b, 5_000_000, 8)
	b.Run("located", func(b *testing.B) { benchRead(b, data, false) })
	b.Run("decoded", func(b *testing.B) { benchRead(b, data, true) })
	// one thread: the file is in time order and no merge is needed
	data = generate(b, 5_000_000, 1)
	b.Run("located-1thread", func(b *testing.B) { benchRead(b, data, false) })
}
