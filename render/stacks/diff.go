package stacks

import (
	"slices"
	"strings"
)

// DiffReply is two aggregations laid out as one tree, for a differential
// flame graph: every path that either side has, each node with its
// weights on both sides as fractions of that side's total, so that
// traces or ranges of different lengths compare.
type DiffReply struct {
	TotalA   int64    `json:"total_a"`   // weight of every sample of side A
	TotalB   int64    `json:"total_b"`   // of side B
	SamplesA int64    `json:"samples_a"` // number of samples of side A
	SamplesB int64    `json:"samples_b"`
	Unit     string   `json:"unit"`
	Names    []string `json:"names"` // names[0] is "all"
	// Nodes are [parent, name, totalA, selfA, totalB, selfB] in preorder,
	// node 0 the root (parent -1), children in name order; name indexes
	// Names; the weights are fractions of TotalA and TotalB (0 on a side
	// whose total is 0).
	Nodes   [][6]float64 `json:"nodes"`
	Pruned  int          `json:"pruned"`            // nodes left out as lighter than 1/width of the root on both sides
	Partial bool         `json:"partial,omitempty"` // a side's aggregation stopped early
}

// diffNode is a node of the merged tree, its weights as fractions.
type diffNode struct {
	parent      int32
	name        string
	totA, selfA float64
	totB, selfB float64
	weight      float64 // max(totA, totB): what pruning looks at
	end         int32   // one past its subtree (preorder)
}

// Diff lays out a and b, aggregated with the same options, as one tree
// (see [DiffReply]). Like [Aggregator.Result] it leaves out the nodes
// lighter than the root / width on both sides (width ≤ 0 keeps every
// node) and, when more than maxNodes would remain (maxNodes > 0), the
// lightest of them, a node's weight being the larger of its two
// fractions.
func Diff(a, b *Aggregator, width, maxNodes int, unit string) *DiffReply {
	a.finish()
	b.finish()
	kidsA, startA := a.children()
	kidsB, startB := b.children()
	frac := func(w, total int64) float64 {
		if total == 0 {
			return 0
		}
		return float64(w) / float64(total)
	}
	var merged []diffNode
	var walk func(na, nb, parent int32)
	walk = func(na, nb, parent int32) {
		me := int32(len(merged))
		d := diffNode{parent: parent}
		if na >= 0 {
			d.name = a.names[a.nodes[na].name]
			d.totA, d.selfA = frac(a.nodes[na].total, a.total), frac(a.nodes[na].self, a.total)
		}
		if nb >= 0 {
			d.name = b.names[b.nodes[nb].name]
			d.totB, d.selfB = frac(b.nodes[nb].total, b.total), frac(b.nodes[nb].self, b.total)
		}
		d.weight = max(d.totA, d.totB)
		merged = append(merged, d)
		// Both sides' children are in name order: merge them.
		var ka, kb []int32
		if na >= 0 {
			ka = kidsA[startA[na]:startA[na+1]]
		}
		if nb >= 0 {
			kb = kidsB[startB[nb]:startB[nb+1]]
		}
		for len(ka) > 0 || len(kb) > 0 {
			c := 0
			switch {
			case len(ka) == 0:
				c = 1
			case len(kb) == 0:
				c = -1
			default:
				c = strings.Compare(a.names[a.nodes[ka[0]].name], b.names[b.nodes[kb[0]].name])
			}
			switch {
			case c < 0:
				walk(ka[0], -1, me)
				ka = ka[1:]
			case c > 0:
				walk(-1, kb[0], me)
				kb = kb[1:]
			default:
				walk(ka[0], kb[0], me)
				ka, kb = ka[1:], kb[1:]
			}
		}
		merged[me].end = int32(len(merged))
	}
	walk(0, 0, -1)

	r := &DiffReply{TotalA: a.total, TotalB: b.total, SamplesA: a.samples, SamplesB: b.samples, Unit: unit, Nodes: [][6]float64{}}
	floor := -1.0 // nodes must weigh more than floor
	if maxNodes > 0 && len(merged) > maxNodes {
		// A node weighs no more than its parent on either side, so
		// keeping the heaviest keeps a tree.
		ws := make([]float64, 0, len(merged)-1)
		for _, d := range merged[1:] {
			ws = append(ws, d.weight)
		}
		slices.Sort(ws)
		floor = ws[len(ws)-maxNodes] // maxNodes-1 kids at most, and the root
	}
	root := merged[0].weight
	out := make([]int32, len(merged)) // merged index → output index
	nameOut := map[string]int{}
	for i := 0; i < len(merged); {
		d := &merged[i]
		if i > 0 && (d.weight <= floor || width > 0 && (d.weight == 0 || d.weight*float64(width) < root)) {
			r.Pruned += int(d.end) - i
			i = int(d.end)
			continue
		}
		nm, ok := nameOut[d.name]
		if !ok {
			nm = len(r.Names)
			r.Names = append(r.Names, d.name)
			nameOut[d.name] = nm
		}
		parent := -1.0
		if d.parent >= 0 {
			parent = float64(out[d.parent])
		}
		out[i] = int32(len(r.Nodes))
		r.Nodes = append(r.Nodes, [6]float64{parent, float64(nm), d.totA, d.selfA, d.totB, d.selfB})
		i++
	}
	return r
}
