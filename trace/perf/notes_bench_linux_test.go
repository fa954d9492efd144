package perf

import (
	"os"
	"runtime"
	"syscall"
	"testing"

	"viewer/trace"
	"viewer/trace/perf/perftest"
)

// BenchmarkSchedNotes reads a generated scheduler recording in batches
// as render.Build does, noting each batch for Sched on the reading
// goroutine: the difference is what noting costs there, in CPU time per
// event of the benchmark's thread (wall time on this shared machine
// varies more than the difference).
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
	for _, note := range []bool{false, true} {
		name := "read"
		if note {
			name = "read+note"
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
				var s *Sched
				if note {
					s = NewSched(r)
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
					if s != nil {
						s.NoteEvents(r, evs[:k])
						nb := s.batch // dropped, as deriving from it would
						nb.notes, nb.switches, nb.text = nb.notes[:0], nb.switches[:0], nb.text[:0]
					}
				}
			}
			syscall.Getrusage(1, &r1)
			cpu := (r1.Utime.Nano() + r1.Stime.Nano()) - (r0.Utime.Nano() + r0.Stime.Nano())
			b.ReportMetric(float64(cpu)/float64(b.N)/n, "cpu-ns/event")
		})
	}
}
