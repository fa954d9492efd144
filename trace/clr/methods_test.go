package clr

import (
	"math/rand/v2"
	"slices"
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
	for i := range 9000 { // over several chunks, sorted once half way and again at the end
		if i == 5000 {
			m.Resolve(0, 0)
		}
		start := uint64(rng.IntN(300000))
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
		addr := uint64(rng.IntN(300400))
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

// TestMethodMapResolveSpan checks that ResolveSpan answers as Resolve and
// that the answer holds at every time of the span it returns, on random
// overlapping ranges with loads and unloads.
func TestMethodMapResolveSpan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := NewMethodMap()
	for i := range 200 {
		start := uint64(rng.IntN(5000))
		load := trace.Time(rng.IntN(1000))
		if rng.IntN(3) == 0 {
			load = Always
		}
		m.AddMethod(load, start, uint32(1+rng.IntN(300)), string(rune('A'+i%26))+string(rune('a'+i/26%26)), 0)
		if rng.IntN(3) == 0 {
			m.Unload(max(load, 0)+trace.Time(rng.IntN(500)), start)
		}
	}
	for range 3000 {
		addr := uint64(rng.IntN(5400))
		at := trace.Time(rng.IntN(1600)) - 100
		f, ok, from, to := m.ResolveSpan(at, addr)
		if g, gok := m.Resolve(at, addr); g != f || gok != ok {
			t.Fatalf("ResolveSpan(%d, %d) = %v %v, Resolve %v %v", at, addr, f, ok, g, gok)
		}
		if from > at || to <= at {
			t.Fatalf("ResolveSpan(%d, %d): span [%d, %d) misses the time", at, addr, from, to)
		}
		for _, u := range []trace.Time{max(from, -200), min(to, 1700) - 1, max(from, -200) + (min(to, 1700)-max(from, -200))/2} {
			if g, gok := m.Resolve(u, addr); g != f || gok != ok {
				t.Fatalf("ResolveSpan(%d, %d) = %v %v over [%d, %d), but Resolve(%d) = %v %v", at, addr, f, ok, from, to, u, g, gok)
			}
		}
	}
}

// TestRangesOnlyCountsTheSame builds a full map and a RangesOnly map
// from the same random adds (repeated rundown entries, unloads of them,
// loads out of time and address order, a Resolve in the middle) and
// checks CountResolved of both against Resolve on the full map, frame by
// frame.
func TestRangesOnlyCountsTheSame(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 9))
		full, ranges := NewMethodMap(), NewMethodMap()
		ranges.RangesOnly()
		for i := range 400 {
			start := uint64(rng.IntN(40)) * 16
			size := uint32(8 + 8*rng.IntN(3))
			load := Always
			if rng.IntN(4) == 0 {
				load = trace.Time(rng.IntN(1000))
			}
			switch rng.IntN(5) {
			case 0:
				at := trace.Time(rng.IntN(1000))
				full.Unload(at, start)
				ranges.Unload(at, start)
			default:
				full.AddMethod(load, start, size, "m", 1)
				ranges.AddMethod(load, start, size, "m", 1)
			}
			if i == 300 { // a Resolve in the middle sorts the full map; adding goes on
				full.Resolve(0, 0)
				ranges.Resolve(0, 0)
			}
		}
		full.Finish()
		ranges.Finish()
		var frames []FrameAt
		want := int64(0)
		for range 2000 {
			f := FrameAt{Time: trace.Time(rng.IntN(1100)), Addr: uint64(rng.IntN(40*16 + 32))}
			switch rng.IntN(50) {
			case 0:
				f.Time = MaxTime
			case 1:
				f.Time = Always
			}
			frames = append(frames, f)
			_, ok := full.Resolve(f.Time, f.Addr)
			if ok {
				want++
			}
			if _, got := ranges.Resolve(f.Time, f.Addr); got != ok {
				t.Fatalf("seed %d: Resolve(%d, %#x) of the ranges map says %v, the full map %v", seed, f.Time, f.Addr, got, ok)
			}
		}
		if got := ranges.CountResolved(slices.Clone(frames)); got != want {
			t.Errorf("seed %d: ranges map resolves %d frames, the full map %d", seed, got, want)
		}
		if got := full.CountResolved(frames); got != want {
			t.Errorf("seed %d: full map CountResolved %d, Resolve %d", seed, got, want)
		}
		if want == 0 || want == int64(len(frames)) {
			t.Errorf("seed %d: %d of %d frames resolve: the test checks nothing", seed, want, len(frames))
		}
	}
}
