package perf

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"viewer/trace"
	"viewer/trace/perf/perftest"
	"viewer/trace/tracetest"
)

// benchEvents is the size of the generated benchmark files.
const benchEvents = 1_000_000

var benchFiles sync.Map // name → path

// benchFile generates (once per process) a file of benchEvents samples.
func benchFile(b *testing.B, name string, o perftest.GenerateOptions) string {
	b.Helper()
	if p, ok := benchFiles.Load(name); ok {
		return p.(string)
	}
	dir, err := os.MkdirTemp("", "perfbench")
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	if err := perftest.Generate(f, benchEvents, o); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	benchFiles.Store(name, p)
	return p
}

func indexAll(b *testing.B, path string, opts Options) (*Reader, []trace.Event) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	st, _ := f.Stat()
	r, err := NewReader(f, st.Size(), opts)
	if err != nil {
		b.Fatal(err)
	}
	evs := make([]trace.Event, 0, benchEvents)
	for {
		e, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		evs = append(evs, e)
	}
	if len(evs) != benchEvents {
		b.Fatalf("%d events", len(evs))
	}
	return r, evs
}

// BenchmarkIndex reads every event header (types, tracks, labels, time
// order) of 1 M generated samples without decoding fields.
func BenchmarkIndex(b *testing.B) {
	for _, tc := range []struct {
		name string
		gen  perftest.GenerateOptions
		opts Options
	}{
		{"eventheader-file-rounds", perftest.GenerateOptions{}, Options{}},
		{"eventheader-file-fullsort", perftest.GenerateOptions{}, Options{Order: OrderFullSort}},
		{"eventheader-pipe", perftest.GenerateOptions{Pipe: true}, Options{}},
		{"eventheader-zstd", perftest.GenerateOptions{Compress: true}, Options{}},
		{"sched-file", perftest.GenerateOptions{SchedEvery: 1}, Options{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			path := benchFile(b, tc.name[:len(tc.name)-len(suffixAfterDash(tc.name))], tc.gen)
			st, _ := os.Stat(path)
			b.SetBytes(st.Size())
			runtime.GC()
			b.ResetTimer()
			cpu0 := tracetest.CPUTime().Seconds()
			for b.Loop() {
				indexAll(b, path, tc.opts)
			}
			report(b, benchEvents, cpu0)
		})
	}
}

// report states events per wall-clock second and per CPU second (the
// machine is shared, so wall time overstates the cost).
func report(b *testing.B, events int, cpu0 float64) {
	n := float64(events) * float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(n/(tracetest.CPUTime().Seconds()-cpu0), "events/cpu-s")
}

// suffixAfterDash returns the ordering suffix of a benchmark name so that
// the two orderings share one generated file.
func suffixAfterDash(name string) string {
	for _, s := range []string{"-rounds", "-fullsort"} {
		if len(name) > len(s) && name[len(name)-len(s):] == s {
			return s
		}
	}
	return ""
}

// BenchmarkDecode decodes every field of 1 M indexed events: Details
// (fields, label, raw bytes) and Fields (fields into a reused slice).
func BenchmarkDecode(b *testing.B) {
	for _, tc := range []struct {
		name string
		gen  perftest.GenerateOptions
	}{
		{"eventheader-file", perftest.GenerateOptions{}},
		{"sched-file", perftest.GenerateOptions{SchedEvery: 1}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r, evs := indexAll(b, benchFile(b, tc.name, tc.gen), Options{})
			runtime.GC()
			b.ResetTimer()
			cpu0 := tracetest.CPUTime().Seconds()
			for b.Loop() {
				for _, e := range evs {
					if _, err := r.Details(e); err != nil {
						b.Fatal(err)
					}
				}
			}
			report(b, len(evs), cpu0)
		})
		b.Run(tc.name+"-fields", func(b *testing.B) {
			r, evs := indexAll(b, benchFile(b, tc.name, tc.gen), Options{})
			runtime.GC()
			b.ResetTimer()
			cpu0 := tracetest.CPUTime().Seconds()
			var dst []trace.Field
			for b.Loop() {
				for _, e := range evs {
					var err error
					if dst, err = r.Fields(e, dst[:0]); err != nil {
						b.Fatal(err)
					}
				}
			}
			report(b, len(evs), cpu0)
		})
	}
}
