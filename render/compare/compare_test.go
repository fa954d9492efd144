package compare

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"viewer/render"
	"viewer/trace/perf"
	"viewer/trace/perf/perftest"
)

// recording describes perftest.GenerateSyscalls's recording: n
// syscalls, slice longer 2 µs longer, the ticks in skip left out.
type recording struct {
	n      int
	longer int
	skip   map[int]bool
}

func (rc recording) write(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "r.data")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := perftest.GenerateSyscalls(f, perftest.SyscallsOptions{N: rc.n, Longer: rc.longer, Skip: rc.skip}); err != nil {
		t.Fatal(err)
	}
	return p
}

func index(t *testing.T, name string) *render.Index {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, _ := f.Stat()
	r, err := perf.Format{}.Open(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	pr := r.(*perf.Reader)
	x, err := render.Build(context.Background(), r, render.Options{SpillDir: t.TempDir(), Derive: perf.NewSched(pr)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func (r Row) String() string {
	return fmt.Sprintf("%s %s %s %g→%g", r.Kind, r.Key, r.Measure, r.A, r.B)
}

// TestSelf compares a trace with itself, whole and as two identical
// halves of a periodic recording: every delta is zero.
func TestSelf(t *testing.T) {
	x := index(t, recording{n: 40, longer: -1}.write(t))
	tab, err := Compare(context.Background(), Whole(x), Whole(x), Options{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[Kind]bool{}
	for _, r := range tab.Rows {
		kinds[r.Kind] = true
		if r.Delta != 0 || r.Rel != 0 || r.Score != 0 {
			t.Errorf("self: %v: delta %g, rel %g, score %g", r, r.Delta, r.Rel, r.Score)
		}
	}
	for k := KindType; k <= KindField; k++ {
		if !kinds[k] {
			t.Errorf("no %v rows", k)
		}
	}
	// The two halves: 20 periods of 10 µs each.
	first, _ := x.Span()
	half := first + 200_000
	tab, err = Compare(context.Background(), Side{x, first, half}, Side{x, half, half + 200_000}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tab.Rows {
		if r.Delta != 0 {
			t.Errorf("halves: %v", r)
		}
	}
}

// TestKnownChanges compares a recording with a copy missing three ticks
// and with one syscall 2 µs longer: exactly the counts of the tick type
// and of the thread, and the duration measures the long slice moves,
// change, by exactly what was done, and they rank before every
// unchanged row.
func TestKnownChanges(t *testing.T) {
	const n = 50
	a := index(t, recording{n: n, longer: -1}.write(t))
	b := index(t, recording{n: n, longer: 17, skip: map[int]bool{3: true, 20: true, 41: true}}.write(t))
	tab, err := Compare(context.Background(), Whole(a), Whole(b), Options{})
	if err != nil {
		t.Fatal(err)
	}
	secs := tab.SecondsA
	if tab.SecondsB != secs {
		t.Fatalf("ranges of %g and %g s", secs, tab.SecondsB)
	}
	want := map[string]float64{ // "kind key measure" → delta
		"type test/tick count": -3, "type test/tick rate": -3 / secs,
		"track app 7 count": -3, "track app 7 rate": -3 / secs,
		"slices app 7/syscalls mean": 2000.0 / n, "slices app 7/syscalls p99": 2000, "slices app 7/syscalls max": 2000,
		"slice read mean": 2000.0 / n, "slice read p99": 2000, "slice read max": 2000,
	}
	changed := 0
	for i, r := range tab.Rows {
		k := r.Kind.String() + " " + r.Key + " " + r.Measure.String()
		d, ok := want[k]
		if !ok {
			if r.Delta != 0 {
				t.Errorf("unexpected change: %v", r)
			}
			continue
		}
		changed++
		if math.Abs(r.Delta-d) > 1e-9*math.Abs(d) {
			t.Errorf("%s: delta %g, want %g", k, r.Delta, d)
		}
		if i >= len(want) {
			t.Errorf("%s ranked %d, after unchanged rows", k, i)
		}
		if r.Score <= 0 {
			t.Errorf("%s: score %g", k, r.Score)
		}
		if rel := r.Delta / math.Abs(r.A); r.Rel != rel {
			t.Errorf("%s: rel %g, want %g", k, r.Rel, rel)
		}
	}
	if changed != len(want) {
		var got []string
		for _, r := range tab.Rows[:min(len(tab.Rows), 15)] {
			got = append(got, r.String())
		}
		t.Errorf("%d of the %d expected rows found; table starts:\n%s", changed, len(want), strings.Join(got, "\n"))
	}
}

// TestScore checks the significance scores against their definitions.
func TestScore(t *testing.T) {
	if got, want := poisson(100, 144, 1, 1), 44/math.Sqrt(244); math.Abs(got-want) > 1e-12 {
		t.Errorf("poisson(100, 144) = %g, want %g", got, want)
	}
	// equal rates over unequal ranges: no change
	if got := poisson(100, 200, 1, 2); got != 0 {
		t.Errorf("poisson(100 in 1 s, 200 in 2 s) = %g", got)
	}
	if got := poisson(0, 0, 1, 1); got != 0 {
		t.Errorf("poisson(0, 0) = %g", got)
	}
	if got := spread(10, 10, 0); got != 0 {
		t.Errorf("spread of no change = %g", got)
	}
	if got := spread(2000, 4000, 0); math.Abs(got-2000/(4000e-9)) > 1 {
		t.Errorf("spread of constant samples = %g", got)
	}
	if got := spread(10, 13, 1.5); got != 2 {
		t.Errorf("spread(10, 13, se 1.5) = %g", got)
	}
	one := func(v ...float64) *values {
		x := &values{}
		for _, f := range v {
			x.add(f)
		}
		return x
	}
	if got := spread(10, 14, stdErr(one(10), one(14))); got != 4.0/14 {
		t.Errorf("one value a side: score %g, want the relative change %g", got, 4.0/14)
	}
	// one value against 1, 3 (variance 2): se = √(2/1 + 2/2)
	if got, want := stdErr(one(5), one(1, 3)), math.Sqrt(3); math.Abs(got-want) > 1e-12 {
		t.Errorf("stdErr borrowing a variance = %g, want %g", got, want)
	}
	r := newRow(KindType, "x", Count, 0, 5, 1)
	if !math.IsInf(r.Rel, 1) {
		t.Errorf("rel of 0 → 5 = %g", r.Rel)
	}
}
