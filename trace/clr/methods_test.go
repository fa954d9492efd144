package clr

import (
	"math/rand/v2"
	"testing"

	"viewer/trace"
)

func TestMethodMapTimeAndUnload(t *testing.T) {
	m := NewMethodMap()
	m.AddModule(1, `C:\app\bin\mvc-hello-world.dll`)
	m.AddMethod(Always, 0x1000, 0x100, MethodName("Example.Program", "Main", "void  (class System.String[])"), 1)
	m.AddMethod(500, 0x2000, 0x40, "Tier0.Work(int32)", 1)
	m.AddMethod(900, 0x2000, 0x40, "Tier1.Work(int32)", 1) // re-jitted at the same address
	m.Unload(700, 0x2000)

	tests := []struct {
		t    trace.Time
		addr uint64
		want string
		ok   bool
	}{
		{0, 0x1000, "mvc-hello-world!Example.Program.Main(class System.String[])", true},
		{0, 0x10ff, "mvc-hello-world!Example.Program.Main(class System.String[])", true},
		{0, 0x1100, "0x1100", false},
		{499, 0x2010, "0x2010", false}, // not loaded yet
		{600, 0x2010, "mvc-hello-world!Tier0.Work(int32)", true},
		{800, 0x2010, "0x2010", false}, // unloaded at 700
		{950, 0x2010, "mvc-hello-world!Tier1.Work(int32)", true},
	}
	for _, tt := range tests {
		f, ok := m.Resolve(tt.t, tt.addr)
		if f.String() != tt.want || ok != tt.ok {
			t.Errorf("Resolve(%d, %#x) = %q, %v; want %q, %v", tt.t, tt.addr, f.String(), ok, tt.want, tt.ok)
		}
	}
}

// TestMethodMapBruteForce compares Resolve with a scan of every method on
// random overlapping ranges.
func TestMethodMapBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := NewMethodMap()
	var all []Method
	for i := range 300 {
		start := uint64(rng.IntN(10000))
		size := uint32(1 + rng.IntN(300))
		load := trace.Time(rng.IntN(1000))
		if rng.IntN(3) == 0 {
			load = Always
		}
		name := string(rune('A'+i%26)) + string(rune('a'+i/26%26))
		m.AddMethod(load, start, size, name, 0)
		all = append(all, Method{Start: start, Size: size, Name: name, Loaded: load, Unloaded: MaxTime})
	}
	for range 5000 {
		addr := uint64(rng.IntN(10400))
		at := trace.Time(rng.IntN(1100))
		var best *Method
		for i := range all {
			me := &all[i]
			if addr >= me.Start && addr < me.Start+uint64(me.Size) && at >= me.Loaded {
				if best == nil || me.Loaded > best.Loaded {
					best = me
				}
			}
		}
		f, ok := m.Resolve(at, addr)
		if (best != nil) != ok || (ok && f.Func != best.Name && !sameLoad(all, best, addr, f.Func)) {
			t.Fatalf("Resolve(%d, %d) = %q %v, want %+v", at, addr, f.Func, ok, best)
		}
	}
}

// sameLoad allows ties: two methods loaded at the same time both holding addr.
func sameLoad(all []Method, best *Method, addr uint64, got string) bool {
	for _, me := range all {
		if me.Name == got && me.Loaded == best.Loaded && addr >= me.Start && addr < me.Start+uint64(me.Size) {
			return true
		}
	}
	return false
}
