package render

import (
	"math/rand/v2"
	"testing"
)

// TestPyramid checks the index pyramid against its definition, however
// the events arrive: a level-0 node is the majority vote of its block's
// 16 types taken in order, a node above is the vote of its two children,
// and every node of an aligned block the track holds whole is there.
func TestPyramid(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 40 {
		n := rng.IntN(20000)
		types := make([]uint16, n)
		kinds := 1 + rng.IntN(4)
		for i := range types {
			types[i] = uint16(rng.IntN(kinds))
			if rng.IntN(3) == 0 && i > 0 {
				types[i] = types[i-1]
			}
		}
		tr := newTrack(nil)
		tr.types.appendAll(types)
		for from := 0; from < n; {
			to := min(n, from+rng.IntN([]int{1, 17, 300, 5000}[rng.IntN(4)])+1)
			tr.grown(from, to)
			from = to
		}
		// The definition, level by level.
		var want []node
		for lo := 0; lo+1<<minLevel <= n; lo += 1 << minLevel {
			c, w := types[lo], uint32(1)
			for _, x := range types[lo+1 : lo+1<<minLevel] {
				c, w = voteFor(c, w, x)
			}
			want = append(want, makeNode(c, w))
		}
		for k := 0; len(want) > 0; k++ {
			if k >= len(tr.nodes) || tr.nodes[k].len() != len(want) {
				t.Fatalf("round %d (%d events): level %d has no %d nodes", round, n, k, len(want))
			}
			for i, nd := range want {
				if got := tr.nodes[k].at(i); got != nd {
					t.Fatalf("round %d (%d events): level %d node %d is %x, want %x", round, n, k, i, got, nd)
				}
			}
			var up []node
			for i := 0; i+1 < len(want); i += 2 {
				up = append(up, vote(want[i], want[i+1]))
			}
			want = up
		}
	}
}
