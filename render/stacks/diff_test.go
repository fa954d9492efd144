package stacks

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// diffPaths flattens a diff reply into path → [totA, selfA, totB, selfB],
// checking that it is in preorder with children in name order.
func diffPaths(t *testing.T, r *DiffReply) map[string][4]float64 {
	t.Helper()
	out := map[string][4]float64{}
	key := make([]string, len(r.Nodes))
	last := map[int]string{} // parent → last child name seen
	for i, n := range r.Nodes {
		p, name := int(n[0]), r.Names[int(n[1])]
		k := name
		if i == 0 {
			if p != -1 || name != RootName {
				t.Fatalf("root %v %q", n, name)
			}
		} else {
			if p < 0 || p >= i {
				t.Fatalf("node %d: parent %d not before it", i, p)
			}
			if prev, ok := last[p]; ok && prev >= name {
				t.Errorf("node %d: %q after its sibling %q", i, name, prev)
			}
			last[p] = name
			k = key[p] + ";" + name
		}
		key[i] = k
		out[k] = [4]float64{n[2], n[3], n[4], n[5]}
	}
	return out
}

// TestDiffBruteForce builds two random aggregations and checks every node
// of their diff against path weights summed by brute force, divided by
// each side's total.
func TestDiffBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	funcs := []string{"m!a", "m!b", "m!c", "n!d", "n!e", "f"}
	for _, view := range []View{{}, {Kind: Bottom}, {Kind: Callers, Func: "m!b"}} {
		var sides [2]*Aggregator
		want := map[string][4]float64{}
		for s := range sides {
			a, err := New(Options{View: view})
			if err != nil {
				t.Fatal(err)
			}
			sides[s] = a
			type pw struct {
				path []string
				w    int64
			}
			var kept []pw
			var total int64
			// side B has more samples and its own function, "only!b"
			n := 200 + 150*s
			for k := range n {
				fs := make([]string, rng.IntN(6))
				for j := range fs {
					fs[j] = funcs[rng.IntN(len(funcs)-s)]
				}
				if s == 1 && k%7 == 0 {
					fs = append([]string{"only!b"}, fs...)
				}
				w := int64(1 + rng.IntN(4))
				total += w
				a.Add(Sample{Stack: a.Intern(fs), Weight: w})
				if p := refPath(fs, 0, Options{View: view}); p != nil {
					kept = append(kept, pw{p, w})
				}
			}
			if _, ok := want[RootName]; !ok { // the root is there even when no sample is kept
				want[RootName] = [4]float64{}
			}
			for _, k := range kept {
				f := float64(k.w) / float64(total)
				key := RootName
				add := func(key string, self bool) {
					x := want[key]
					x[2*s] += f
					if self {
						x[2*s+1] += f
					}
					want[key] = x
				}
				for _, fr := range k.path {
					add(key, false)
					key += ";" + fr
				}
				add(key, true)
			}
		}
		r := Diff(sides[0], sides[1], 0, 0, "samples")
		if r.TotalA != sides[0].Total() || r.TotalB != sides[1].Total() || r.SamplesA != 200 || r.SamplesB != 350 {
			t.Errorf("view %v: totals %d %d, samples %d %d", view, r.TotalA, r.TotalB, r.SamplesA, r.SamplesB)
		}
		got := diffPaths(t, r)
		if len(got) != len(want) {
			t.Errorf("view %v: %d nodes, want %d", view, len(got), len(want))
		}
		onlyB := 0
		for k, w := range want {
			g, ok := got[k]
			if !ok {
				t.Errorf("view %v: no node %s", view, k)
				continue
			}
			for j := range w {
				if math.Abs(g[j]-w[j]) > 1e-12 {
					t.Errorf("view %v: %s = %v, want %v", view, k, g, w)
					break
				}
			}
			if strings.Contains(k, "only!b") {
				onlyB++
				if g[0] != 0 || g[1] != 0 || g[2] == 0 {
					t.Errorf("view %v: %s, a path of B only, weighs %v", view, k, g)
				}
			}
		}
		if view.Kind != Callers && onlyB == 0 {
			t.Errorf("view %v: no node of B's own function", view)
		}
	}
}

// TestDiffSelf: a tree against itself has equal weights on both sides.
func TestDiffSelf(t *testing.T) {
	a, _ := New(Options{})
	for i := range 100 {
		a.Add(Sample{Stack: a.Intern([]string{string(rune('a' + i%5)), "main"}), Weight: int64(i)})
	}
	r := Diff(a, a, 0, 0, "ns")
	if len(r.Nodes) != 7 {
		t.Fatalf("%d nodes, want 7", len(r.Nodes))
	}
	for i, n := range r.Nodes {
		if n[2] != n[4] || n[3] != n[5] {
			t.Errorf("node %d: %v", i, n)
		}
	}
	if r.Nodes[0][2] != 1 || r.Unit != "ns" {
		t.Errorf("root %v, unit %q", r.Nodes[0], r.Unit)
	}
}

// TestDiffPrune: nodes light on both sides go, a node heavy on one side
// only stays, and maxNodes caps the tree.
func TestDiffPrune(t *testing.T) {
	a, _ := New(Options{})
	b, _ := New(Options{})
	for i := range 1000 {
		a.Add(Sample{Stack: a.Intern([]string{"main"}), Weight: 1})
		fs := []string{"main"}
		switch {
		case i%2 == 0:
			fs = []string{"grew", "main"} // half of B, nothing of A
		case i%100 == 1:
			fs = []string{"rare", "main"} // 1% of B
		}
		b.Add(Sample{Stack: b.Intern(fs), Weight: 1})
	}
	r := Diff(a, b, 50, 0, "samples") // threshold 2%: rare goes
	got := diffPaths(t, r)
	if _, ok := got["all;main;rare"]; ok || r.Pruned != 1 {
		t.Errorf("rare kept (pruned %d): %v", r.Pruned, got)
	}
	if g := got["all;main;grew"]; g != [4]float64{0, 0, 0.5, 0.5} {
		t.Errorf("grew = %v", g)
	}
	r = Diff(a, b, 0, 2, "samples") // the root and main
	if len(r.Nodes) != 2 || r.Pruned != 2 {
		t.Errorf("capped to 2: %d nodes, %d pruned", len(r.Nodes), r.Pruned)
	}
	empty, _ := New(Options{})
	empty2, _ := New(Options{})
	if r := Diff(empty, empty2, 100, 10, "samples"); len(r.Nodes) != 1 || r.Nodes[0] != [6]float64{-1, 0, 0, 0, 0, 0} {
		t.Errorf("empty diff %+v", r)
	}
}
