package stacks

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"viewer/render"
	"viewer/trace"
)

// refPath is an independent, slow rendering of what a stack becomes:
// the path under the root, or nil when left out.
func refPath(frames []string, track trace.TrackID, o Options) []string {
	fs := slices.Clone(frames)
	if fs == nil {
		fs = []string{}
	}
	for _, t := range o.Transforms {
		var out []string
		switch t.Op {
		case Focus:
			i := slices.Index(reversed(fs), t.Arg)
			if i < 0 {
				return nil
			}
			out = fs[:len(fs)-i]
		case Merge:
			for _, f := range fs {
				if f != t.Arg {
					out = append(out, f)
				}
			}
		case Drop:
			re := regexp.MustCompile(t.Arg)
			for _, f := range fs {
				if !re.MatchString(f) {
					out = append(out, f)
				}
			}
		case Module:
			for _, f := range fs {
				if f == t.Arg || strings.HasPrefix(f, t.Arg+"!") {
					if len(out) > 0 && out[len(out)-1] == t.Arg {
						continue
					}
					f = t.Arg
				}
				out = append(out, f)
			}
		case Recursion:
			if t.Arg == "" {
				for _, f := range fs {
					if len(out) == 0 || out[len(out)-1] != f {
						out = append(out, f)
					}
				}
			} else {
				lo, hi := slices.Index(fs, t.Arg), len(fs)-1-slices.Index(reversed(fs), t.Arg)
				out = fs
				if lo >= 0 && hi > lo {
					out = append(slices.Clone(fs[:lo]), fs[hi:]...)
				}
			}
		}
		fs = append([]string{}, out...)
	}
	p := []string{}
	if o.PerThread {
		p = append(p, fmt.Sprint("T", track))
	}
	switch o.View.Kind {
	case Top:
		p = append(p, reversed(fs)...)
	case Bottom:
		p = append(p, fs...)
	case Callers:
		i := slices.Index(fs, o.View.Func)
		if i < 0 {
			return nil
		}
		p = append(p, fs[i:]...)
	case Callees:
		i := slices.Index(reversed(fs), o.View.Func)
		if i < 0 {
			return nil
		}
		p = append(p, reversed(fs[:len(fs)-i])...)
	}
	return p
}

func reversed(s []string) []string {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

// paths flattens a reply into path → [total, self].
func paths(r *Reply) map[string][2]int64 {
	out := map[string][2]int64{}
	key := make([]string, len(r.Nodes))
	for i, n := range r.Nodes {
		k := r.Names[n[1]]
		if n[0] >= 0 {
			k = key[n[0]] + ";" + k
		}
		key[i] = k
		out[k] = [2]int64{n[2], n[3]}
	}
	return out
}

func TestAggregateBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	funcs := []string{"m!a", "m!b", "m!c", "n!d", "n!e", "0x10", "f"}
	var samples [][]string
	for range 300 {
		fs := make([]string, rng.IntN(7))
		for j := range fs {
			fs[j] = funcs[rng.IntN(len(funcs))]
		}
		samples = append(samples, fs)
	}
	opts := []Options{
		{},
		{View: View{Kind: Bottom}},
		{View: View{Kind: Callers, Func: "m!b"}},
		{View: View{Kind: Callees, Func: "m!b"}, PerThread: true},
		{Transforms: []Transform{{Op: Focus, Arg: "m!c"}}},
		{Transforms: []Transform{{Op: Merge, Arg: "m!a"}, {Op: Recursion}}},
		{Transforms: []Transform{{Op: Module, Arg: "m"}}, PerThread: true},
		{Transforms: []Transform{{Op: Drop, Arg: `^0x|e$`}, {Op: Recursion, Arg: "m!b"}}},
		{Transforms: []Transform{{Op: Recursion, Arg: "n!d"}}, View: View{Kind: Bottom}},
	}
	for i, o := range opts {
		o.Refs = true
		o.ThreadName = func(id trace.TrackID) string { return fmt.Sprint("T", id) }
		a, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][2]int64{}
		var total int64
		for k, fs := range samples {
			tr, w := trace.TrackID(k%3), int64(1+k%5)
			a.Add(Sample{Time: trace.Time(k), Track: tr, Stack: a.Intern(fs), Weight: w, Ev: render.EventID{Track: tr, Index: int32(k)}})
			p := refPath(fs, tr, o)
			if p == nil {
				continue
			}
			total += w
			key := RootName
			for _, f := range p {
				x := want[key]
				want[key] = [2]int64{x[0] + w, x[1]}
				key += ";" + f
			}
			x := want[key]
			want[key] = [2]int64{x[0] + w, x[1] + w}
		}
		if total == 0 {
			want[RootName] = [2]int64{}
		}
		r := a.Result(0, 0, "samples")
		got := paths(&r.Reply)
		if len(got) != len(want) {
			t.Errorf("options %d: %d nodes, want %d", i, len(got), len(want))
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("options %d: %s = %v, want %v", i, k, got[k], w)
			}
		}
		// The hits of a node are the samples whose path goes through it.
		if len(r.Nodes) > 1 {
			hits, _ := r.Hits(1, 1000)
			var sum int64
			for _, h := range hits {
				sum += int64(1 + h.Ev.Index%5)
			}
			if sum != r.Nodes[1][2] {
				t.Errorf("options %d: node 1's hits weigh %d, its total is %d", i, sum, r.Nodes[1][2])
			}
		}
		// Collapsed adds up to the root.
		var sum int64
		for _, c := range a.Collapsed() {
			sum += c.Weight
		}
		if sum != r.Nodes[0][2] {
			t.Errorf("options %d: collapsed weighs %d, root %d", i, sum, r.Nodes[0][2])
		}
	}
}

func TestPrune(t *testing.T) {
	a, _ := New(Options{Refs: true})
	for i := range 1000 {
		fs := []string{"main"}
		if i%100 == 0 {
			fs = []string{fmt.Sprint("rare", i), "main"}
		}
		a.Add(Sample{Stack: a.Intern(fs), Weight: 1, Ev: render.EventID{Index: int32(i)}})
	}
	r := a.Result(200, 0, "samples") // threshold 5: the rare leaves (1 each) go
	if len(r.Nodes) != 2 || r.Pruned != 10 || r.Nodes[1] != [4]int64{0, 1, 1000, 990} {
		t.Fatalf("pruned reply %+v", r.Reply)
	}
	if hits, more := r.Hits(1, 5000); len(hits) != 1000 || more {
		t.Errorf("node 1: %d hits, more %v", len(hits), more)
	}
	if hits, more := r.Hits(1, 10); len(hits) != 10 || !more {
		t.Errorf("node 1 capped: %d hits, more %v", len(hits), more)
	}
	r = a.Result(0, 5, "samples") // the root, main and the three heaviest... all weigh 1: only main
	if len(r.Nodes) != 2 || r.Pruned != 10 {
		t.Fatalf("capped reply %+v", r.Reply)
	}
}

func TestTransformsRoundTrip(t *testing.T) {
	ts := []Transform{{Focus, "System.Private.CoreLib!System.Threading.Thread.Run(int32, class System.String)"}, {Recursion, ""}, {Drop, `^0x[0-9a-f]+$`}, {Module, "m"}, {Merge, "a.b"}}
	s := FormatTransforms(ts)
	if !regexp.MustCompile(`^[A-Za-z0-9_.-]*$`).MatchString(s) {
		t.Errorf("tf %q is not URL-safe", s)
	}
	got, err := ParseTransforms(s)
	if err != nil || !slices.Equal(got, ts) {
		t.Errorf("ParseTransforms(%q) = %v, %v", s, got, err)
	}
	for _, bad := range []string{"x", "f", "f!!", "..", "dKA"} { // dKA = d "("
		if _, err := ParseTransforms(bad); err == nil {
			t.Errorf("ParseTransforms(%q) did not fail", bad)
		}
	}
}

// epochSymbols names address a "old" before time 1000 and "new" from
// then on, and says so with its spans.
type epochSymbols struct{ calls *int }

func (epochSymbols) Observe(trace.Reader, trace.Event)  {}
func (epochSymbols) Finish(trace.Reader) (int64, int64) { return 0, 0 }
func (s epochSymbols) Symbolize(pid int64, t trace.Time, a uint64) (trace.Frame, bool) {
	f, ok, _, _ := s.SymbolizeSpan(pid, t, a)
	return f, ok
}
func (s epochSymbols) SymbolizeSpan(pid int64, t trace.Time, a uint64) (trace.Frame, bool, trace.Time, trace.Time) {
	*s.calls++
	if a != 1 {
		return trace.Frame{Addr: a, Module: "m", Func: "main"}, true, -1 << 63, 1<<63 - 1
	}
	if t < 1000 {
		return trace.Frame{Addr: a, Module: "m", Func: "old"}, true, -1 << 63, 1000
	}
	return trace.Frame{Addr: a, Module: "m", Func: "new"}, true, 1000, 1<<63 - 1
}

// TestResolverSpans checks that cached stack names are reused only
// inside the span their symbols hold for.
func TestResolverSpans(t *testing.T) {
	a, _ := New(Options{})
	calls := 0
	r := NewResolver(func(trace.StackID) []uint64 { return []uint64{1, 2} }, epochSymbols{&calls}, a)
	for tm := trace.Time(0); tm < 2000; tm += 10 {
		a.Add(Sample{Time: tm, Stack: r.Stack(-1, 1, tm), Weight: 1})
	}
	got := paths(&a.Result(0, 0, "samples").Reply)
	if got["all;m!main;m!old"] != [2]int64{100, 100} || got["all;m!main;m!new"] != [2]int64{100, 100} {
		t.Errorf("tree %v", got)
	}
	if calls != 4 { // two frames, named twice
		t.Errorf("%d symbol calls, want 4", calls)
	}
}
