package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"viewer/trace/perf/perftest"
)

// mergedLine is what the merge tests read of a line of `viewer dump A B`.
type mergedLine struct {
	Trace  string `json:"trace"`
	TimeNS int64  `json:"time_ns"`
	Wall   string `json:"wall"`
	Event  string `json:"event"`
	CPU    int    `json:"cpu"`
}

func (l mergedLine) wall(t *testing.T) time.Time {
	t.Helper()
	w, err := time.Parse(time.RFC3339Nano, l.Wall)
	if err != nil {
		t.Fatalf("wall %q: %v", l.Wall, err)
	}
	return w
}

func readMerged(t *testing.T, out []byte) []mergedLine {
	t.Helper()
	var lines []mergedLine
	for _, s := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		var l mergedLine
		if err := json.Unmarshal(s, &l); err != nil {
			t.Fatalf("%v: %s", err, s)
		}
		lines = append(lines, l)
	}
	return lines
}

// schedFile writes a perf.data of syscalls on cpu at the given sample
// times; with wallNS not 0 it has CLOCK_DATA: the wall wallNS at sample
// time clockNS, on the named host.
func schedFile(t *testing.T, name, host string, wallNS, clockNS uint64, cpu uint32, times []uint64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := perftest.SchedOptions("x86_64")
	o.Hostname, o.WallNS, o.ClockNS = host, wallNS, clockNS
	w, err := perftest.NewWriter(f, o)
	if err != nil {
		t.Fatal(err)
	}
	s := &perftest.SchedWriter{W: w}
	for _, tm := range times {
		s.SysEnter(tm, cpu, 7, 7, 0)
	}
	w.FinishedRound()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDumpMergedKnownOffset merges two writer-made perf.data files of
// two machines (two clock domains) recorded at the same time: B's
// clock's 0 lies a known 1.234567891 s of wall time after A's. The
// merged dump is in wall order, every event keeps its own time_ns, its
// wall is its own file's, and the offset comes back exactly from the
// lines; --offset moves B by exactly what it says.
func TestDumpMergedKnownOffset(t *testing.T) {
	const wallA, clockA = 1_780_000_000_000_000_000, 5_000_000_000_000 // A read its clock (5000 s) at wall wallA
	const known = 1_234_567_891                                        // wall of B's Time 0 − wall of A's Time 0
	// B read the wall 777 ns later than A; its clock then showed clockB.
	const wallB, clockB = wallA + 777, clockA + 777 - known
	var ta, tb []uint64
	for i := range 50 {
		ta = append(ta, clockA+uint64(i)*10_000)             // at walls wallA + i·10 µs
		tb = append(tb, clockA-known+uint64(i)*10_000+5_000) // 5 µs after each of A's
	}
	a := schedFile(t, "a.data", "host-a", wallA, clockA, 0, ta)
	b := schedFile(t, "b.data", "host-b", wallB, clockB, 1, tb)

	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"dump", a, b}, &out, &errOut); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr: %s", errOut.String())
	}
	lines := readMerged(t, out.Bytes())
	if len(lines) != len(ta)+len(tb) {
		t.Fatalf("%d lines, want %d", len(lines), len(ta)+len(tb))
	}
	var ia, ib int
	base := map[string]int64{} // wall − time_ns per trace
	for k, l := range lines {
		w := l.wall(t)
		if k > 0 && w.Before(lines[k-1].wall(t)) {
			t.Fatalf("line %d at %v, before line %d at %v", k, w, k-1, lines[k-1].wall(t))
		}
		var want uint64
		switch l.Trace {
		case a:
			want, ia = ta[ia], ia+1
		case b:
			want, ib = tb[ib], ib+1
		default:
			t.Fatalf("line %d: trace %q", k, l.Trace)
		}
		if l.TimeNS != int64(want) {
			t.Errorf("line %d (%s): time_ns %d, want its own %d", k, l.Trace, l.TimeNS, want)
		}
		d := w.UnixNano() - l.TimeNS
		if b0, ok := base[l.Trace]; ok && b0 != d {
			t.Errorf("line %d: wall − time_ns = %d, was %d", k, d, b0)
		}
		base[l.Trace] = d
		if k%2 == 0 && l.Trace != a || k%2 == 1 && l.Trace != b {
			t.Errorf("line %d from %s: the two files' events should alternate", k, l.Trace)
		}
	}
	if got := base[b] - base[a]; got != known {
		t.Errorf("recovered offset %d ns, want %d", got, known)
	}
	if got := base[a]; got != wallA-clockA {
		t.Errorf("A's wall of Time 0 %d, want %d", got, wallA-clockA)
	}

	// --offset by base name: B's walls move by exactly 1.5 ms, times stay.
	out.Reset()
	if err := run(context.Background(), []string{"dump", "--offset", "b.data=+1.5ms", a, b}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	shifted := map[string]int64{}
	for _, l := range readMerged(t, out.Bytes()) {
		shifted[l.Trace] = l.wall(t).UnixNano() - l.TimeNS
	}
	if shifted[a] != base[a] || shifted[b]-base[b] != 1_500_000 {
		t.Errorf("--offset b.data=+1.5ms: A moved %d, B moved %d ns", shifted[a]-base[a], shifted[b]-base[b])
	}

	if err := run(context.Background(), []string{"dump", "--offset", "c.data=1ms", a, b}, &out, &errOut); err == nil {
		t.Error("--offset of a file not given: no error")
	}
}

// TestDumpMergedNoWall merges a file with a wall clock and one without:
// the second's first event lands on the first's, a notice on stderr says
// so, and its lines carry the aligned wall.
func TestDumpMergedNoWall(t *testing.T) {
	const wall, clock = 1_780_000_000_000_000_000, 2_000_000_000
	a := schedFile(t, "a.data", "h", wall, clock, 0, []uint64{clock + 100, clock + 200, clock + 300})
	b := schedFile(t, "b.data", "h", 0, 0, 0, []uint64{70_000, 70_150})
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"dump", a, b}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), b+" has no wall clock") {
		t.Errorf("no notice about %s: %q", b, errOut.String())
	}
	got := ""
	for _, l := range readMerged(t, out.Bytes()) {
		got += fmt.Sprintf("%s %d %d\n", filepath.Base(l.Trace), l.TimeNS, l.wall(t).UnixNano()-wall)
	}
	want := "a.data 2000000100 100\nb.data 70000 100\na.data 2000000200 200\nb.data 70150 250\na.data 2000000300 300\n"
	if got != want {
		t.Errorf("merged (file, time_ns, wall − A's clock reference):\n%swant\n%s", got, want)
	}
}

// TestDumpMergedRealPerf records two perf sessions at the same time (one
// of sched_switch, one of sched_switch and syscalls) on CLOCK_MONOTONIC
// and merges them: the lines are in wall order, interleave, keep their
// own times, and the two files share one clock (wall − time_ns is the
// same for both: they align on their raw clock, not on their walls).
// The same switches recorded by both sessions lie within microseconds.
func TestDumpMergedRealPerf(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "sched.data"), filepath.Join(dir, "sys.data")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	outs := make([][]byte, 2)
	// B records inside A's window: A runs 2 s, B starts once A's file
	// has its header (perf is recording) and runs 0.5 s. Under load a
	// perf session can take most of a second to start.
	for i, args := range [][]string{
		{"record", "-q", "-e", "sched:sched_switch", "-k", "CLOCK_MONOTONIC", "-a", "-o", a, "--", "sleep", "2"},
		{"record", "-q", "-e", "sched:sched_switch,raw_syscalls:sys_enter", "-k", "CLOCK_MONOTONIC", "-a", "-o", b, "--", "sleep", "0.5"},
	} {
		if i == 1 {
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if st, err := os.Stat(a); err == nil && st.Size() > 0 {
					break
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			outs[i], errs[i] = exec.CommandContext(ctx, "perf", args...).CombinedOutput()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("perf record in CI: %v: %s", err, outs[i])
			}
			t.Skipf("perf cannot record here (needs perf and root or perf_event_paranoid ≤ -1): %v: %s", err, bytes.TrimSpace(outs[i]))
		}
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"dump", a, b}, &out, &errOut); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	lines := readMerged(t, out.Bytes())
	var n [2]int
	switches := map[int][]int64{} // B's sched_switch times per CPU
	var base int64
	for k, l := range lines {
		w := l.wall(t)
		if k > 0 && w.Before(lines[k-1].wall(t)) {
			t.Fatalf("line %d at %v, before line %d at %v", k, w, k-1, lines[k-1].wall(t))
		}
		if d := w.UnixNano() - l.TimeNS; k == 0 {
			base = d
		} else if d != base {
			t.Fatalf("line %d (%s): wall − time_ns = %d, line 0's %d: not aligned on the shared clock", k, l.Trace, d, base)
		}
		switch l.Trace {
		case a:
			n[0]++
		case b:
			n[1]++
			if l.Event == "sched_switch" {
				switches[l.CPU] = append(switches[l.CPU], l.TimeNS)
			}
		}
	}
	if n[0] == 0 || n[1] == 0 {
		t.Fatalf("%d events of %s, %d of %s", n[0], a, n[1], b)
	}
	// Single-file dumps give the same times in the same order per file.
	for _, f := range []string{a, b} {
		var one bytes.Buffer
		if err := run(context.Background(), []string{"dump", f}, &one, &errOut); err != nil {
			t.Fatal(err)
		}
		var own []int64
		for _, l := range readMerged(t, one.Bytes()) {
			own = append(own, l.TimeNS)
		}
		var merged []int64
		for _, l := range lines {
			if l.Trace == f {
				merged = append(merged, l.TimeNS)
			}
		}
		if fmt.Sprint(own) != fmt.Sprint(merged) {
			t.Errorf("%s: merged times differ from its own dump's", f)
		}
	}
	// The switches both sessions saw: each session stamps the event
	// itself, so the two times differ by the microsecond or so between.
	// Only where both sessions were recording: under load one starts or
	// ends well before the other.
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	for _, f := range []string{a, b} {
		first, last := int64(math.MaxInt64), int64(math.MinInt64)
		for _, l := range lines {
			if l.Trace == f {
				first, last = min(first, l.TimeNS), max(last, l.TimeNS)
			}
		}
		lo, hi = max(lo, first), min(hi, last)
	}
	near, both := 0, 0
	for _, l := range lines {
		if l.Trace != a || l.Event != "sched_switch" || l.TimeNS < lo || l.TimeNS > hi {
			continue
		}
		both++
		for _, tb := range switches[l.CPU] {
			if d := tb - l.TimeNS; d > -50_000 && d < 50_000 {
				near++
				break
			}
		}
	}
	if both == 0 || near < both/2 {
		t.Errorf("only %d of %s's %d switches while both recorded have one in %s within 50 µs", near, a, both, b)
	}
}

// TestStatsSeveral checks that `viewer stats A B` prints each file's
// one-file output, byte for byte, under a header line, and that --json
// gives each file's object.
func TestStatsSeveral(t *testing.T) {
	a := schedFile(t, "a.data", "h", 1_780_000_000_000_000_000, 1e9, 0, []uint64{1e9 + 5})
	b := schedFile(t, "b.data", "h", 0, 0, 1, []uint64{7, 8, 9})
	one := func(args ...string) string {
		var out bytes.Buffer
		if err := run(context.Background(), append([]string{"stats"}, args...), &out, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	want := "==> " + a + " <==\n" + one(a) + "\n==> " + b + " <==\n" + one(b)
	if got := one(a, b); got != want {
		t.Errorf("stats A B:\n%s\nwant\n%s", got, want)
	}
	var all struct {
		Files []struct {
			File  string          `json:"file"`
			Stats json.RawMessage `json:"stats"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(one("--json", a, b)), &all); err != nil {
		t.Fatal(err)
	}
	if len(all.Files) != 2 {
		t.Fatalf("%d files in --json", len(all.Files))
	}
	for i, f := range []string{a, b} {
		var got, want bytes.Buffer
		json.Compact(&got, all.Files[i].Stats)
		json.Compact(&want, []byte(one("--json", f)))
		if all.Files[i].File != f || got.String() != want.String() {
			t.Errorf("file %d: %s %s, want %s %s", i, all.Files[i].File, got.String(), f, want.String())
		}
	}
}
