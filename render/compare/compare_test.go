package compare

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"viewer/render"
	"viewer/trace/perf"
	"viewer/trace/perf/perftest"
	"viewer/trace/perf/tracefs/tracefstest"
)

const tickFormat = `name: tick
ID: 900
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:u32 value;	offset:8;	size:4;	signed:0;

print fmt: "value=%u", REC->value
`

// recording describes a generated perf.data: thread 7 makes n read
// syscalls, one every 10 µs lasting 2 µs (slice longer lasts 2 µs more),
// and a test:tick (value 42) 5 µs after each syscall starts, except the
// ticks in skip.
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
	o := perftest.SchedOptions("x86_64")
	o.Formats = append(o.Formats, tracefstest.Format{System: "test", Text: tickFormat})
	o.Attrs = append(o.Attrs, perftest.Attr{Name: "test:tick", Type: perftest.TypeTracepoint, Config: 900,
		SampleType: o.Attrs[0].SampleType, SampleIDAll: true, ClockID: 1, IDs: []uint64{40}})
	w, err := perftest.NewWriter(f, o)
	if err != nil {
		t.Fatal(err)
	}
	w.Comm(7, 7, "app", 1)
	s := &perftest.SchedWriter{W: w}
	for i := range rc.n {
		t0 := uint64(1e9 + i*10_000)
		s.SysEnter(t0, 0, 7, 7, 0)
		if !rc.skip[i] {
			raw := binary.LittleEndian.AppendUint16(nil, 900)
			raw = append(raw, 0, 0)
			raw = binary.LittleEndian.AppendUint32(raw, 7)
			raw = binary.LittleEndian.AppendUint32(raw, 42)
			w.Sample(perftest.Sample{Attr: 4, PID: 7, TID: 7, Time: t0 + 1000, CPU: 0, Period: 1, Raw: raw})
		}
		end := t0 + 2000
		if i == rc.longer {
			end += 2000
		}
		s.SysExit(end, 0, 7, 7, 0, 8)
	}
	w.FinishedRound()
	if err := w.Close(); err != nil {
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
