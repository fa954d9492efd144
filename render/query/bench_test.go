package query

import (
	"context"
	"math"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"viewer/render"
	"viewer/trace/synth"
	"viewer/trace/tracetest"
)

// benchEvents is the size of the benchmarks' synthetic trace (issue 16:
// 10 million); VIEWER_BENCH_EVENTS overrides it.
var benchEvents = func() int64 {
	if n, err := strconv.ParseInt(os.Getenv("VIEWER_BENCH_EVENTS"), 10, 64); err == nil && n > 0 {
		return n
	}
	return 10_000_000
}()

var bench struct {
	once  sync.Once
	x     *render.Index
	types []int64 // events per type
	err   error
}

// benchIndex builds the benchmarks' index once per process.
func benchIndex(b *testing.B) *render.Index {
	bench.once.Do(func() {
		cfg := synth.Config{Events: benchEvents, Seed: 16}
		bench.x, bench.err = render.Build(context.Background(), synth.New(cfg), render.Options{SpillDir: os.TempDir()})
		if bench.err != nil {
			return
		}
		bench.types = make([]int64, len(bench.x.Meta().Types))
		for _, c := range bench.x.Stats().Counts {
			bench.types[c.ID-1] = c.Count // synth type i has id i+1
		}
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.x
}

// scan runs q over the whole trace and returns its hits.
func scan(b *testing.B, x *render.Index, ctx context.Context, q string, budget int64) (hits int64, err error) {
	e, err := ParseExpr(q)
	if err != nil {
		b.Fatal(err)
	}
	for _, err := range x.Hits(ctx, render.Filter{Expr: e, Budget: budget}, render.At(math.MinInt64), false) {
		if err != nil {
			return hits, err
		}
		hits++
	}
	return hits, nil
}

// perCPU reports n units of work per op per CPU-second of the process
// (all its threads), the rate a shared machine's load does not skew.
func perCPU(b *testing.B, cpu0 time.Duration, n float64, unit string) {
	b.ReportMetric(n*float64(b.N)/b.Elapsed().Seconds(), unit+"/s")
	if cpu := tracetest.CPUTime() - cpu0; cpu > 0 {
		b.ReportMetric(n*float64(b.N)/cpu.Seconds(), unit+"/cpu-s")
	}
}

// BenchmarkEventName is a predicate on an event name over every event:
// the metric is events of the trace per second.
func BenchmarkEventName(b *testing.B) {
	x := benchIndex(b)
	var hits int64
	cpu0 := tracetest.CPUTime()
	for b.Loop() {
		hits, _ = scan(b, x, context.Background(), "@event = Event7", 0)
	}
	perCPU(b, cpu0, float64(x.Events()), "events")
	b.ReportMetric(float64(hits), "hits")
}

// BenchmarkField is a field predicate on one event type: the metric is
// events of that type per second.
func BenchmarkField(b *testing.B) {
	x := benchIndex(b)
	var hits int64
	cpu0 := tracetest.CPUTime()
	for b.Loop() {
		hits, _ = scan(b, x, context.Background(), "Event7 and value >= 500", 0)
	}
	perCPU(b, cpu0, float64(bench.types[7]), "type-events")
	b.ReportMetric(float64(hits), "hits")
	b.ReportMetric(100*float64(bench.types[7])/float64(x.Events()), "%-of-events")
}

// BenchmarkFieldCommonType is BenchmarkField on the most frequent type
// (Event0, the dominant type of the busiest track).
func BenchmarkFieldCommonType(b *testing.B) {
	x := benchIndex(b)
	var hits int64
	cpu0 := tracetest.CPUTime()
	for b.Loop() {
		hits, _ = scan(b, x, context.Background(), "Event0 and value >= 500", 0)
	}
	perCPU(b, cpu0, float64(bench.types[0]), "type-events")
	b.ReportMetric(float64(hits), "hits")
	b.ReportMetric(100*float64(bench.types[0])/float64(x.Events()), "%-of-events")
}

var fewTypes struct {
	once sync.Once
	x    *render.Index
	n0   int64 // events of type 0
	err  error
}

// BenchmarkFieldFewTypes is BenchmarkField on a synthetic trace of 4
// event types (a type is a quarter of the events, as a runtime's sample
// or allocation events are of a .NET trace).
func BenchmarkFieldFewTypes(b *testing.B) {
	fewTypes.once.Do(func() {
		fewTypes.x, fewTypes.err = render.Build(context.Background(), synth.New(synth.Config{Events: benchEvents, Seed: 16, Types: 4}), render.Options{SpillDir: os.TempDir()})
		if fewTypes.err == nil {
			for _, c := range fewTypes.x.Stats().Counts {
				if c.ID == 1 {
					fewTypes.n0 = c.Count
				}
			}
		}
	})
	if fewTypes.err != nil {
		b.Fatal(fewTypes.err)
	}
	x := fewTypes.x
	var hits int64
	cpu0 := tracetest.CPUTime()
	for b.Loop() {
		hits, _ = scan(b, x, context.Background(), "Event0 and value >= 500", 0)
	}
	perCPU(b, cpu0, float64(fewTypes.n0), "type-events")
	b.ReportMetric(float64(hits), "hits")
	b.ReportMetric(100*float64(fewTypes.n0)/float64(x.Events()), "%-of-events")
}

// BenchmarkFreeText is free text over every event's fields, label and
// labels: the metric is events per second.
func BenchmarkFreeText(b *testing.B) {
	x := benchIndex(b)
	var hits int64
	cpu0 := tracetest.CPUTime()
	for b.Loop() {
		hits, _ = scan(b, x, context.Background(), `"zzzz"`, 0)
	}
	perCPU(b, cpu0, float64(x.Events()), "events")
	b.ReportMetric(float64(hits), "hits")
}

// BenchmarkCutOff runs a query that would scan every payload of the
// trace twice over (a regular expression over every event's label,
// matching 1 event in 1000) under the server's default budget: a 1.5 s
// deadline and 10 million decodes. The metric is the seconds until it
// returns with what it found.
func BenchmarkCutOff(b *testing.B) {
	x := benchIndex(b)
	var hits int64
	var err error
	var took time.Duration
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		start := time.Now()
		hits, err = scan(b, x, ctx, `label ~ /value=999$/ or "zzzz"`, 10_000_000)
		took = time.Since(start)
		cancel()
		if err == nil {
			b.Fatal("the query was not cut off")
		}
	}
	b.ReportMetric(took.Seconds(), "s-to-cutoff")
	b.ReportMetric(float64(hits), "hits")
}
