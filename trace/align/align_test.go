package align

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/align/aligntest"
	"viewer/trace/nettrace"
	"viewer/trace/perf"
)

// readAll returns a trace's metadata and event times.
func readAll(t *testing.T, f trace.Format, data []byte) (*trace.Meta, []trace.Time) {
	t.Helper()
	r, err := f.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var times []trace.Time
	for {
		e, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		times = append(times, e.Time)
	}
	return r.Meta(), times
}

// TestNetTraceAndPerf writes a NetTrace (10 MHz ticks, a SYSTEMTIME wall)
// and a perf.data (-k monotonic, CLOCK_DATA) whose events happen at the
// same wall times, and checks that they land at the same aligned times
// and walls.
func TestNetTraceAndPerf(t *testing.T) {
	var nt bytes.Buffer
	pf, err := os.Create(filepath.Join(t.TempDir(), "perf.data"))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if err := aligntest.SameWall(&nt, pf); err != nil {
		t.Fatal(err)
	}
	walls := aligntest.Walls

	nm, ntimes := readAll(t, nettrace.Format{}, nt.Bytes())
	pdata, err := os.ReadFile(pf.Name())
	if err != nil {
		t.Fatal(err)
	}
	pm, ptimes := readAll(t, perf.Format{}, pdata)
	if len(ntimes) != len(walls) || len(ptimes) != len(walls) {
		t.Fatalf("read %d NetTrace and %d perf events, want %d each", len(ntimes), len(ptimes), len(walls))
	}
	for _, order := range [][2]int{{0, 1}, {1, 0}} {
		ts := []Trace{Of(nm, ntimes[0]), Of(pm, ptimes[0])}
		times := [][]trace.Time{ntimes, ptimes}
		ax := Align([]Trace{ts[order[0]], ts[order[1]]})
		for i, wt := range walls {
			a := ax.Time(0, times[order[0]][i])
			b := ax.Time(1, times[order[1]][i])
			if a != b {
				t.Errorf("order %v: event %d at aligned %d in one trace, %d in the other", order, i, a, b)
			}
			if got, ok := ax.Wall(a); !ok || !got.Equal(wt) {
				t.Errorf("order %v: event %d at wall %v, want %v", order, i, got, wt)
			}
		}
		if got := ax.Time(0, times[order[0]][0]); got != 0 {
			t.Errorf("order %v: first event at aligned %d, want 0", order, got)
		}
		for i := range 2 {
			if h := ax.Places[i].How; h != ByWall {
				t.Errorf("order %v: trace %d placed by %v, want wall", order, i, h)
			}
		}
	}
}

// TestDomain checks that traces of one clock domain align on their raw
// times, not on walls that disagree by microseconds; that a domain whose
// walls disagree by more than the tolerance (another boot) falls back to
// the walls; and that offsets move a trace of a domain as they move any.
func TestDomain(t *testing.T) {
	wall := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := Trace{Clock: trace.Clock{TicksPerSecond: 1e9, Wall: wall}, Domain: "monotonic on \"h\"", First: 1000}
	b := a
	b.Clock.Wall = wall.Add(3 * time.Microsecond) // gettimeofday read a little later
	b.First = 500

	ax := Align([]Trace{a, b})
	if ax.Places[1].How != ByDomain || ax.Places[1].Ref != 0 {
		t.Fatalf("b placed %+v, want by domain on trace 0", ax.Places[1])
	}
	if ax.Time(0, 2000) != ax.Time(1, 2000) {
		t.Errorf("raw time 2000 at %d and %d", ax.Time(0, 2000), ax.Time(1, 2000))
	}
	if got := ax.Time(1, 500); got != 0 {
		t.Errorf("b's first event (the earliest) at %d, want 0", got)
	}
	if got, _ := ax.Wall(ax.Time(0, 2000)); !got.Equal(wall.Add(2000)) {
		t.Errorf("wall of a's 2000 = %v, want a's own %v", got, wall.Add(2000))
	}

	b.Offset = 1500 * time.Microsecond
	ax = Align([]Trace{a, b})
	if d := ax.Time(1, 2000) - ax.Time(0, 2000); d != trace.Time(b.Offset) {
		t.Errorf("offset %v moved b by %d", b.Offset, d)
	}

	b.Offset = 0
	b.Clock.Wall = wall.Add(DomainTolerance + time.Millisecond) // rebooted
	ax = Align([]Trace{a, b})
	if ax.Places[1].How != ByWall {
		t.Errorf("b with a wall %v off placed by %v, want wall", DomainTolerance+time.Millisecond, ax.Places[1].How)
	}
	if d := ax.Time(1, 2000) - ax.Time(0, 2000); d != trace.Time(DomainTolerance+time.Millisecond) {
		t.Errorf("b by wall %d ns after a, want %v", d, DomainTolerance+time.Millisecond)
	}
}

// TestNoWall checks that a trace without a wall clock puts its first
// event (plus its offset) at the earliest first event of the others, and
// that without any wall clock there is none on the axis.
func TestNoWall(t *testing.T) {
	wall := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := Trace{Clock: trace.Clock{TicksPerSecond: 1e9, Wall: wall}, First: 7_000}
	b := Trace{Clock: trace.Clock{TicksPerSecond: 1e9, Wall: wall.Add(-time.Second)}, First: 1_000_006_500} // first event 500 ns before a's
	c := Trace{Clock: trace.Clock{TicksPerSecond: 1e9}, First: 123_456, Offset: 40}
	ax := Align([]Trace{a, b, c})
	if ax.Places[2].How != ByFirstEvent {
		t.Fatalf("c placed by %v", ax.Places[2].How)
	}
	if got := ax.Time(1, b.First); got != 0 {
		t.Errorf("earliest first event at %d", got)
	}
	if got := ax.Time(0, a.First); got != 500 {
		t.Errorf("a's first event at %d, want 500", got)
	}
	if got := ax.Time(2, c.First); got != 40 {
		t.Errorf("c's first event at %d, want its offset 40", got)
	}
	if got, _ := ax.Wall(0); !got.Equal(wall.Add(6_500)) {
		t.Errorf("origin %v, want %v", got, wall.Add(6_500))
	}
	ax = Align([]Trace{c, {Clock: trace.Clock{TicksPerSecond: 1e9}, First: -5}})
	if _, ok := ax.Wall(0); ok || !ax.Origin.IsZero() {
		t.Errorf("an axis of traces without walls has origin %v", ax.Origin)
	}
	if ax.Time(0, c.First) != 40 || ax.Time(1, -5) != 0 {
		t.Errorf("first events at %d and %d, want 40 and 0", ax.Time(0, c.First), ax.Time(1, -5))
	}
}

// TestAlignRandom compares Align with the definition on random traces
// with walls, domains, offsets and tick rates: a trace's event is at the
// wall of its own clock (or its domain reference's raw clock) plus its
// offset, and the earliest first event is at aligned time 0.
func TestAlignRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	for iter := range 2000 {
		n := 1 + rng.IntN(5)
		ts := make([]Trace, n)
		for i := range ts {
			tr := &ts[i]
			tr.Clock.TicksPerSecond = []uint64{1e9, 1e7, 3_124_099}[rng.IntN(3)]
			tr.Clock.OriginTicks = rng.Int64N(1e12)
			if rng.IntN(4) > 0 {
				tr.Clock.Wall = base.Add(time.Duration(rng.Int64N(int64(time.Hour))))
			}
			if rng.IntN(2) == 0 {
				tr.Domain = "d"
			}
			tr.First = trace.Time(rng.Int64N(1e10) - 1e9)
			tr.Offset = time.Duration(rng.Int64N(2e9) - 1e9)
		}
		ax := Align(ts)
		// brute force: the aligned wall of trace i's Time t
		wallOf := func(i int, at trace.Time) (time.Time, bool) {
			p := ax.Places[i]
			if ts[i].Clock.Wall.IsZero() {
				return time.Time{}, false
			}
			if p.Ref >= 0 {
				j := p.Ref
				if ts[j].Domain != ts[i].Domain || ts[j].Clock.Wall.IsZero() || ax.Places[j].Ref >= 0 || j >= i {
					t.Fatalf("iter %d: trace %d placed on %d: %+v %+v", iter, i, j, ts[i], ts[j])
				}
				tj := at + trace.Time(rawOrigin(ts[i].Clock)-rawOrigin(ts[j].Clock))
				return ts[j].Clock.Wall.Add(time.Duration(tj) + ts[i].Offset), true
			}
			return ts[i].Clock.Wall.Add(time.Duration(at) + ts[i].Offset), true
		}
		for i := range ts {
			for _, tt := range []trace.Time{ts[i].First, ts[i].First + 12345, 0} {
				want, ok := wallOf(i, tt)
				if !ok {
					if ax.Places[i].How != ByFirstEvent || ax.Time(i, ts[i].First) != trace.Time(ts[i].Offset) {
						t.Fatalf("iter %d: trace %d without wall placed %+v", iter, i, ax.Places[i])
					}
					continue
				}
				if got, _ := ax.Wall(ax.Time(i, tt)); !got.Equal(want) {
					t.Fatalf("iter %d: trace %d Time %d at wall %v, want %v (%+v)", iter, i, tt, got, want, ax.Places[i])
				}
			}
		}
		earliest, anyWall := trace.Time(1<<63-1), false
		for i := range ts {
			if !ts[i].Clock.Wall.IsZero() {
				anyWall = true
				earliest = min(earliest, ax.Time(i, ts[i].First))
			}
		}
		if anyWall && earliest != 0 {
			t.Fatalf("iter %d: earliest first event with a wall at %d, want 0", iter, earliest)
		}
	}
}
