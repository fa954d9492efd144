package perf

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"

	"viewer/trace/perf/perftest"
	"viewer/trace/span"
)

// BenchmarkSched reads a generated scheduler recording with and without
// Sched, and reports the wall time (ns/event) and the CPU time the whole
// process spends per event (cpu-ns/event), the goroutines that derive
// included: on a machine with no idle core the CPU, not the wall time,
// is what deriving costs the load. The difference between the two runs
// is the derivation's.
func BenchmarkSched(b *testing.B) {
	var f memFile
	const n = 1000000
	if err := perftest.GenerateSched(&f, n, 4, 16); err != nil {
		b.Fatal(err)
	}
	for _, derive := range []bool{false, true} {
		b.Run(fmt.Sprint("derive=", derive), func(b *testing.B) {
			var r0, r1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
			for b.Loop() {
				r, err := NewReader(bytes.NewReader(f.b), int64(len(f.b)), Options{})
				if err != nil {
					b.Fatal(err)
				}
				var d span.Deriver
				if derive {
					d = NewSched(r)
				}
				if _, err := span.Derive(r, d); err != nil {
					b.Fatal(err)
				}
			}
			syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
			cpu := (r1.Utime.Nano() + r1.Stime.Nano()) - (r0.Utime.Nano() + r0.Stime.Nano())
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/event")
			b.ReportMetric(float64(cpu)/float64(b.N)/n, "cpu-ns/event")
		})
	}
}
