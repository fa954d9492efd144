package render

import (
	"math/rand/v2"
	"testing"
)

// TestBitmapBruteForce checks Rank, Select, Next and Count against a
// plain []bool on random sets of many densities and lengths.
func TestBitmapBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 63, 64, 65, 511, 512, 513, 1000, 4097} {
		for _, p := range []float64{0, 0.001, 0.1, 0.5, 0.99, 1} {
			set := make([]bool, n)
			b := NewBitmap(n)
			for i := range set {
				if rng.Float64() < p {
					set[i] = true
					b.Set(i)
				}
			}
			b.Finish()
			var members []int
			for i, ok := range set {
				if ok {
					members = append(members, i)
				}
			}
			if b.Count() != len(members) {
				t.Fatalf("n=%d p=%v: Count %d, want %d", n, p, b.Count(), len(members))
			}
			rank := 0
			for i := 0; i <= n; i++ {
				if got := b.Rank(i); got != rank {
					t.Fatalf("n=%d p=%v: Rank(%d) = %d, want %d", n, p, i, got, rank)
				}
				next := -1
				if rank < len(members) {
					next = members[rank]
				}
				if got := b.Next(i); got != next {
					t.Fatalf("n=%d p=%v: Next(%d) = %d, want %d", n, p, i, got, next)
				}
				if i < n {
					if b.Has(i) != set[i] {
						t.Fatalf("n=%d p=%v: Has(%d) = %v", n, p, i, !set[i])
					}
					if set[i] {
						rank++
					}
				}
			}
			for r := -1; r <= len(members); r++ {
				want := -1
				if r >= 0 && r < len(members) {
					want = members[r]
				}
				if got := b.Select(r); got != want {
					t.Fatalf("n=%d p=%v: Select(%d) = %d, want %d", n, p, r, got, want)
				}
			}
			if b.Has(-1) || b.Has(n) {
				t.Fatalf("n=%d: Has out of range", n)
			}
		}
	}
}
