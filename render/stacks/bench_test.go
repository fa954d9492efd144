package stacks

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/synth"
)

// fakeSymbols names synthetic addresses "modD!fADDR" (D the depth mod 4),
// valid for the whole trace.
type fakeSymbols struct{}

func (fakeSymbols) Observe(trace.Reader, trace.Event)            {}
func (fakeSymbols) Finish(trace.Reader) (frames, resolved int64) { return 0, 0 }
func (fakeSymbols) Symbolize(pid int64, t trace.Time, addr uint64) (trace.Frame, bool) {
	return trace.Frame{Addr: addr, Module: "mod" + strconv.Itoa(int(addr>>20&3)), Func: "f" + strconv.FormatUint(addr, 16)}, true
}
func (s fakeSymbols) SymbolizeSpan(pid int64, t trace.Time, addr uint64) (trace.Frame, bool, trace.Time, trace.Time) {
	f, ok := s.Symbolize(pid, t, addr)
	return f, ok, math.MinInt64, math.MaxInt64
}

// BenchmarkAggregate aggregates a sub-range holding about a million
// samples with 30-frame stacks (4096 distinct) into the flame graph, and
// reports the reply's size at 2000 px. Run it with -cpu 1.
func BenchmarkAggregate(b *testing.B) {
	cfg := synth.Config{Events: 1_800_000, Tracks: 16, Types: 1, Seed: 3, Stacks: 4096, StackDepth: 30}
	x, err := render.Build(context.Background(), synth.New(cfg), render.Options{SpillDir: b.TempDir(), Symbols: fakeSymbols{}})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	first, last := x.Span()
	q := Query{From: first + (last-first)/10, To: last - (last-first)/10, Event: "Event0"}
	for _, w := range []string{"count", "time"} {
		b.Run(w, func(b *testing.B) {
			q.Weight, _ = ParseWeight(w)
			var r *Result
			for b.Loop() {
				a, _, err := Aggregate(context.Background(), x, q)
				if err != nil {
					b.Fatal(err)
				}
				r = a.Result(2000, 2*2000, q.Weight.Unit())
			}
			js, _ := json.Marshal(r.Reply)
			b.ReportMetric(float64(r.Samples), "samples")
			b.ReportMetric(float64(len(js)), "reply-bytes")
			b.ReportMetric(float64(len(r.Nodes)), "nodes")
			b.ReportMetric(float64(r.Pruned), "pruned")
		})
	}
}
