package symbols

import (
	"math/rand/v2"
	"testing"
)

// TestLookup compares Lookup with a linear scan on random tables,
// duplicates included.
func TestLookup(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		n := rng.IntN(20)
		syms := make([]Symbol, n)
		for i := range syms {
			syms[i] = Symbol{Value: uint64(rng.IntN(100)), Name: string(rune('a' + i))}
		}
		tab := NewTable(syms)
		for v := uint64(0); v < 110; v++ {
			var want Symbol
			found := false
			for _, s := range syms { // the largest value <= v, first given among equals
				if s.Value <= v && (!found || s.Value > want.Value) {
					want, found = s, true
				}
			}
			got, ok := tab.Lookup(v)
			if ok != found || got != want {
				t.Fatalf("table %v: Lookup(%d) = %v %v, want %v %v", syms, v, got, ok, want, found)
			}
		}
	}
}

func TestName(t *testing.T) {
	tab := NewTable([]Symbol{{0x402400, "dispatch_node"}, {0x401000, "main"}})
	for _, tt := range []struct {
		v    uint64
		want string
		ok   bool
	}{
		{0x402468, "dispatch_node+0x68", true},
		{0x402400, "dispatch_node", true},
		{0x401fff, "main+0xfff", true},
		{0xfff, "", false},
	} {
		if got, ok := tab.Name(tt.v); got != tt.want || ok != tt.ok {
			t.Errorf("Name(%#x) = %q %v, want %q %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
	var empty *Table
	if _, ok := empty.Lookup(1); ok || empty.Len() != 0 {
		t.Error("nil table found a symbol")
	}
}
