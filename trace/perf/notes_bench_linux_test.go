package perf

import (
	"os"
	"runtime"
	"syscall"
	"testing"

	"viewer/trace"
	"viewer/trace/perf/perftest"
	"viewer/trace/span"
)

// BenchmarkSchedNotes reads a generated scheduler recording in batches
// as render.Build does, and with derive shows each batch to a
// span.Driver deriving with Sched, as render.Build does: the difference
// is what deriving costs the reading goroutine (the one a load waits
// for), in CPU time per event of the benchmark's thread (wall time on
// this shared machine varies more than the difference). The Driver
// derives on other goroutines, which this does not count.
func BenchmarkSchedNotes(b *testing.B) {
	f, err := os.CreateTemp(b.TempDir(), "sched-*.data")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	const n = 2000000
	if err := perftest.GenerateSched(f, n, 4, 16); err != nil {
		b.Fatal(err)
	}
	size, _ := f.Seek(0, 2)
	for _, derive := range []bool{false, true} {
		name := "read"
		if derive {
			name = "read+derive"
		}
		b.Run(name, func(b *testing.B) {
			evs := make([]trace.Event, 8192)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var r0, r1 syscall.Rusage
			syscall.Getrusage(1, &r0) // RUSAGE_THREAD (Linux)
			for b.Loop() {
				r, err := NewReader(f, size, Options{})
				if err != nil {
					b.Fatal(err)
				}
				var v *span.Driver
				if derive {
					v = span.NewDriver(r, NewSched(r))
				}
				for done := false; !done; {
					k := 0
					for ; k < len(evs); k++ {
						e, err := r.ReadEvent()
						if err != nil {
							done = true
							break
						}
						evs[k] = e
					}
					if v != nil && k > 0 {
						v.ObserveEvents(evs[:k])
					}
				}
				if v != nil {
					v.Finish()
				}
			}
			syscall.Getrusage(1, &r1)
			cpu := (r1.Utime.Nano() + r1.Stime.Nano()) - (r0.Utime.Nano() + r0.Stime.Nano())
			b.ReportMetric(float64(cpu)/float64(b.N)/n, "cpu-ns/event")
		})
	}
}
