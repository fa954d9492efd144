package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"viewer/trace/tracetest"
)

// spansSummary runs `viewer spans --summary --json FILE`.
func spansSummary(t *testing.T, file string) spanSummary {
	t.Helper()
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"spans", "--summary", "--json", file}, &out, &errb); err != nil {
		t.Fatalf("viewer spans --summary %s: %v: %s", file, err, errb.String())
	}
	var s spanSummary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// threadKey names a thread as timehist's rows do: [tid] or [tid/pid].
type threadKey struct{ tid, pid int64 }

// timehistKey is the thread timehist counts a sample of (pid, tid) for.
// Samples of a thread that is exiting carry tid -1 (perf script prints
// "16443/-1"); perf's thread table keeps one thread for tid -1, whatever
// the pid, so timehist adds them all up there, while viewer spans keeps
// them apart per process (trace/perf NOTES.md §sched).
func timehistKey(tid, pid int64) threadKey {
	if tid == -1 {
		return threadKey{-1, -1}
	}
	return threadKey{tid, pid}
}

// timehistRun is one row of `perf sched timehist -s`.
type timehistRun struct {
	count int
	runMS float64
}

// timehistLine matches a row of the runtime summary:
// "comm[tid/pid]  parent  sched-in  run-time ..." (comm may hold spaces
// and brackets; the last [tid] or [tid/pid] before the numbers counts).
var timehistLine = regexp.MustCompile(`^\s*(.*)\[(-?\d+)(?:/(-?\d+))?\]\s+-?\d+\s+(\d+)\s+(\d+\.\d+)\s`)

// perfTimehist runs perf sched timehist -s on a copy of file and returns
// its rows by thread and its total run time in ms.
func perfTimehist(t *testing.T, perf, file string) (map[threadKey]timehistRun, float64) {
	t.Helper()
	out, err := exec.Command(perf, "sched", "timehist", "-s", "-i", file).Output()
	if err != nil {
		t.Skipf("perf sched timehist cannot read %s: %v", file, err)
	}
	rows := map[threadKey]timehistRun{}
	total := -1.0
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Runtime summary") {
			in = true
			continue
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Total run time (msec):"); ok {
			total, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
		m := timehistLine.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		tid, _ := strconv.ParseInt(m[2], 10, 64)
		pid := tid
		if m[3] != "" {
			pid, _ = strconv.ParseInt(m[3], 10, 64)
		}
		n, _ := strconv.Atoi(m[4])
		ms, _ := strconv.ParseFloat(m[5], 64)
		k := timehistKey(tid, pid)
		r := rows[k]
		r.count += n
		r.runMS += ms
		rows[k] = r
	}
	if total < 0 || len(rows) == 0 {
		t.Fatalf("perf sched timehist -s printed no summary:\n%s", out)
	}
	return rows, total
}

// checkTimehist compares the per-thread run time and switch count of
// `viewer spans --summary` with perf sched timehist -s, and the switches
// per CPU with the sched_switch count per CPU that want gives.
func checkTimehist(t *testing.T, perf, file string, switchesPerCPU map[int]int) {
	want, wantTotal := perfTimehist(t, perf, file)
	s := spansSummary(t, file)
	got := map[threadKey]threadRun{}
	var total int64
	for _, r := range s.Threads {
		if r.TID == 0 && r.PID == 0 {
			continue // the idle task: timehist keeps it apart
		}
		k := timehistKey(r.TID, r.PID)
		g := got[k]
		got[k] = threadRun{Thread: r.Thread, TID: r.TID, PID: r.PID, RunNS: g.RunNS + r.RunNS, Switches: g.Switches + r.Switches}
		total += r.RunNS
	}
	for tid, w := range want {
		g, ok := got[tid]
		if !ok {
			t.Errorf("tid %d: timehist has %d switches, %.3f ms; viewer spans has none", tid, w.count, w.runMS)
			continue
		}
		ms := float64(g.RunNS) / 1e6
		if g.Switches != w.count {
			t.Errorf("tid %d (%s): %d switches, timehist %d", tid, g.Thread, g.Switches, w.count)
		}
		// timehist prints 3 decimals: 0.01 ms absorbs the rounding.
		if d := math.Abs(ms - w.runMS); d > 0.01 && d > 0.01*w.runMS {
			t.Errorf("tid %d (%s): run time %.3f ms, timehist %.3f ms", tid, g.Thread, ms, w.runMS)
		}
	}
	for tid, g := range got {
		if _, ok := want[tid]; !ok {
			t.Errorf("tid %d (%s): viewer spans has %d switches, timehist none", tid, g.Thread, g.Switches)
		}
	}
	if d := math.Abs(float64(total)/1e6 - wantTotal); d > 0.001*wantTotal {
		t.Errorf("total run time %.3f ms, timehist %.3f ms", float64(total)/1e6, wantTotal)
	}
	cpus := map[int]int{}
	for _, tr := range s.Tracks {
		if tr.Kind != "cpu" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(tr.Track, "CPU "))
		if err != nil {
			t.Fatalf("CPU track %q", tr.Track)
		}
		cpus[n] = tr.Switches
	}
	if len(switchesPerCPU) == 0 {
		t.Fatal("no sched_switch events in the reference")
	}
	for cpu, n := range switchesPerCPU {
		if cpus[cpu] != n {
			t.Errorf("CPU %d: %d switches, %d sched_switch events", cpu, cpus[cpu], n)
		}
	}
	for cpu, n := range cpus {
		if _, ok := switchesPerCPU[cpu]; !ok && n != 0 {
			t.Errorf("CPU %d: %d switches, no sched_switch events", cpu, n)
		}
	}
	t.Logf("%d threads, total run time %.3f ms (timehist %.3f ms), switches per CPU %v", len(want), float64(total)/1e6, wantTotal, switchesPerCPU)
}

// scriptSwitches counts sched_switch lines per CPU in perf script output
// (`comm pid/tid [cpu] time: sched:sched_switch: …`).
func scriptSwitches(t *testing.T, r io.Reader) map[int]int {
	t.Helper()
	n := map[int]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, " sched:sched_switch:") {
			continue
		}
		i := strings.Index(line, " [")
		j := strings.Index(line[i+2:], "]")
		if i < 0 || j < 0 {
			t.Fatalf("perf script line %q", line)
		}
		cpu, err := strconv.Atoi(line[i+2 : i+2+j])
		if err != nil {
			t.Fatalf("perf script line %q: %v", line, err)
		}
		n[cpu]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func lookPerf(t *testing.T) string {
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf is not installed (Debian: apt-get install linux-perf): cannot compare with perf sched timehist")
	}
	return perf
}

// TestSpansTimehist checks viewer spans --summary against perf sched
// timehist -s on the shared recordings, and the switches per CPU against
// the sched_switch lines per CPU of their perf script output.
func TestSpansTimehist(t *testing.T) {
	perf := lookPerf(t)
	for _, name := range []string{"sched-syscalls-monotonic.data", "sched-noclock.data"} {
		t.Run(name, func(t *testing.T) {
			src := tracetest.RealData(t, "perf/local-recordings/"+name)
			// perf refuses files it does not own: work on a copy.
			file := filepath.Join(t.TempDir(), name)
			copySpanInput(t, src, file)
			var script io.Reader
			if f, err := os.Open(src + ".perf-script.txt"); err == nil {
				defer f.Close()
				script = f
			} else {
				f, err := os.Open(src + ".perf-script.txt.gz")
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				zr, err := gzip.NewReader(f)
				if err != nil {
					t.Fatal(err)
				}
				script = zr
			}
			checkTimehist(t, perf, file, scriptSwitches(t, script))
		})
	}
}

// TestSpansTimehistFresh records the scheduler here and checks the same.
func TestSpansTimehistFresh(t *testing.T) {
	perf := lookPerf(t)
	if os.Getenv("CI") != "" {
		t.Skip("not in CI: recording the scheduler needs perf_event access the CI machine need not give")
	}
	file := filepath.Join(t.TempDir(), "fresh.data")
	rec := exec.Command(perf, "record", "-q", "-e", "sched:sched_switch,sched:sched_wakeup", "-a", "-o", file, "--",
		"sh", "-c", "for i in 1 2 3 4 5; do ls /usr/bin >/dev/null; sleep 0.01; done")
	if out, err := rec.CombinedOutput(); err != nil {
		t.Skipf("perf record cannot record the scheduler here: %v: %s", err, bytes.TrimSpace(out))
	}
	script, err := exec.Command(perf, "script", "-i", file, "-F", "comm,tid,pid,cpu,time,event,trace").Output()
	if err != nil {
		t.Skipf("perf script cannot read its own recording: %v", err)
	}
	checkTimehist(t, perf, file, scriptSwitches(t, bytes.NewReader(script)))
}

func copySpanInput(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSpansDemoActivities: on the demo trace, the request activities of
// `viewer spans` are the Start/Stop pairs that `viewer dump` shows,
// computed here from the dump alone: paired by provider, task and
// ActivityId, on the Start's thread, nested as RelatedActivityId says
// (a parent open on the same thread), the runtime's own opcodes left out.
func TestSpansDemoActivities(t *testing.T) {
	var dump, errb bytes.Buffer
	if err := run(context.Background(), []string{"dump", "demo.nettrace"}, &dump, &errb); err != nil {
		t.Fatal(err, errb.String())
	}
	type ev struct {
		TimeNS   int64             `json:"time_ns"`
		Track    string            `json:"track"`
		Provider string            `json:"provider"`
		Event    string            `json:"event"`
		Opcode   int               `json:"opcode"`
		Labels   map[string]string `json:"labels"`
	}
	type open struct {
		start int64
		track string
		depth int
		name  string
	}
	opens := map[string]*open{} // by provider/task/activity
	byID := map[string]*open{}
	var want []string
	sc := bufio.NewScanner(&dump)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e ev
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		id := e.Labels["ActivityId"]
		if (e.Opcode != 1 && e.Opcode != 2) || id == "" || strings.HasPrefix(e.Provider, "Microsoft-Windows-DotNETRuntime") {
			continue
		}
		task := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(e.Event, "Start"), "Stop"), "/")
		key := e.Provider + "/" + task + "/" + id
		if e.Opcode == 1 {
			o := &open{start: e.TimeNS, track: e.Track, name: e.Provider + "/" + task}
			if p := byID[e.Labels["RelatedActivityId"]]; p != nil && p.track == e.Track {
				o.depth = p.depth + 1
			}
			opens[key], byID[id] = o, o
			continue
		}
		o := opens[key]
		if o == nil {
			t.Fatalf("demo: a stop without start at %d", e.TimeNS)
		}
		delete(opens, key)
		delete(byID, id)
		want = append(want, fmt.Sprintf("%s/activities %s %d %d %d", o.track, o.name, o.start, e.TimeNS, o.depth))
	}
	if len(opens) != 0 || len(want) < 1000 {
		t.Fatalf("demo: %d activities, %d left open", len(want), len(opens))
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"spans", "demo.nettrace"}, &out, &errb); err != nil {
		t.Fatal(err, errb.String())
	}
	var got []string
	sc = bufio.NewScanner(&out)
	for sc.Scan() {
		var s struct {
			Track   string `json:"track"`
			Kind    string `json:"kind"`
			Name    string `json:"name"`
			StartNS int64  `json:"start_ns"`
			EndNS   int64  `json:"end_ns"`
			Depth   int    `json:"depth"`
			Open    string `json:"open"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(s.Track, "/activities") {
			continue // the GC track (TestSpansGC)
		}
		if s.Open != "" {
			t.Errorf("open slice %+v", s)
		}
		got = append(got, fmt.Sprintf("%s %s %d %d %d", s.Track, s.Name, s.StartNS, s.EndNS, s.Depth))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("viewer spans: %d slices, the dump's pairs: %d; first got %q, want %q", len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
	}
}

// TestSpansGC checks the GC tracks of `viewer spans` on the demo and on
// every real .NET trace against the trace's dump, read without the clr
// package (gcsFromDump): one "GC gen G" slice per GC/Start, at its time,
// with the generation, reason and number of the event as arguments and
// the pause the dump works out; and one "pause" slice per suspension a GC
// ran in, as long as that pause.
func TestSpansGC(t *testing.T) {
	paths := []string{"demo.nettrace"}
	for _, p := range realTraces(t) {
		if ext := filepath.Ext(p); ext == ".nettrace" || ext == ".netperf" {
			paths = append(paths, p)
		}
	}
	withGCs := 0
	for _, path := range paths {
		name := filepath.Base(path)
		starts, pauses := gcsFromDump(t, path)
		type gcSlice struct {
			Track   string                     `json:"track"`
			Kind    string                     `json:"kind"`
			Name    string                     `json:"name"`
			StartNS int64                      `json:"start_ns"`
			EndNS   int64                      `json:"end_ns"`
			Depth   int                        `json:"depth"`
			Args    map[string]json.RawMessage `json:"args"`
		}
		var gcs []gcSlice
		pauseSlices := map[int64]bool{}
		for _, l := range bytes.Split(bytes.TrimSpace(viewerOut(t, "spans", path)), []byte("\n")) {
			var s gcSlice
			if len(l) == 0 {
				continue
			}
			if err := json.Unmarshal(l, &s); err != nil {
				t.Fatal(err)
			}
			if s.Kind != "slices" || !(s.Track == "GC" || strings.HasSuffix(s.Track, "/GC") || strings.HasPrefix(s.Track, "GC (pid ")) {
				continue
			}
			switch {
			case s.Name == "pause" && s.Depth == 0:
				pauseSlices[s.EndNS-s.StartNS] = true
			case strings.HasPrefix(s.Name, "GC gen ") && s.Depth == 1:
				gcs = append(gcs, s)
			default:
				t.Errorf("%s: unexpected GC track slice %+v", name, s)
			}
		}
		if len(gcs) != len(starts) {
			t.Errorf("%s: %d GC slices, %d GC/Start events", name, len(gcs), len(starts))
			continue
		}
		if len(gcs) > 0 {
			withGCs++
		}
		wantPauses := map[int64]bool{}
		for i, g := range gcs {
			s := starts[i]
			arg := func(k string) string {
				var v string
				if json.Unmarshal(g.Args[k], &v) == nil {
					return v
				}
				return string(g.Args[k])
			}
			if g.StartNS != s.Time || g.Name != "GC gen "+s.field("Depth") || arg("Generation") != s.field("Depth") ||
				arg("Reason") != s.field("Reason") || arg("Number") != s.field("Count") {
				t.Errorf("%s: GC slice %d is %+v, its GC/Start %+v", name, i, g, s)
			}
			switch p := pauses[i]; {
			case p == nil && g.Args["PauseNs"] != nil:
				t.Errorf("%s: GC %d has a pause of %s ns, the dump none", name, i, g.Args["PauseNs"])
			case p != nil && arg("PauseNs") != itoa(*p):
				t.Errorf("%s: GC %d pause %s ns, the dump says %d ns", name, i, g.Args["PauseNs"], *p)
			case p != nil:
				wantPauses[*p] = true
			}
		}
		if !maps.Equal(pauseSlices, wantPauses) {
			t.Errorf("%s: pause slices last %v ns, the GCs' pauses %v ns", name, slices.Sorted(maps.Keys(pauseSlices)), slices.Sorted(maps.Keys(wantPauses)))
		}
	}
	if withGCs < 2 {
		t.Errorf("%d traces with GCs (the demo and at least one real one expected)", withGCs)
	}
}
