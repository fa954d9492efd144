package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"viewer/trace/perf/perftest"
)

// diffRecording writes perftest.GenerateSyscalls's recording of n
// syscalls, the one numbered longer 2 µs longer, the ticks numbered in
// skip left out.
func diffRecording(t *testing.T, name string, n, longer int, skip ...int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := perftest.SyscallsOptions{N: n, Longer: longer, Skip: map[int]bool{}}
	for _, k := range skip {
		o.Skip[k] = true
	}
	if err := perftest.GenerateSyscalls(f, o); err != nil {
		t.Fatal(err)
	}
	return p
}

type diffJSON struct {
	Rows []struct {
		Kind, Key, Measure string
		A, B, Delta, Score float64
		Rel                *float64
	} `json:"rows"`
	Failed []string `json:"failed"`
}

func runDiffJSON(t *testing.T, args ...string) (diffJSON, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"diff", "--json"}, args...), &out, &errOut)
	var d diffJSON
	if jerr := json.Unmarshal(out.Bytes(), &d); jerr != nil {
		t.Fatalf("diff %q: %v (%v): %s", args, jerr, err, errOut.String())
	}
	return d, err
}

// TestDiffSelf: a trace against itself has every delta zero (JSON and
// text), and so do two equal ranges of one periodic trace.
func TestDiffSelf(t *testing.T) {
	a := diffRecording(t, "a.data", 40, -1)
	for _, args := range [][]string{{a, a}, {"--ranges", "0..200us,200us..400us", a}} {
		d, err := runDiffJSON(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Rows) < 10 {
			t.Fatalf("diff %q: %d rows", args, len(d.Rows))
		}
		for _, r := range d.Rows {
			if r.Delta != 0 || r.Rel == nil || *r.Rel != 0 || r.Score != 0 {
				t.Errorf("diff %q: %+v", args, r)
			}
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"diff", a, a}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasPrefix(lines[2], "  score") {
		t.Fatalf("text table header: %q", lines[2])
	}
	for _, l := range lines[3:] {
		if f := strings.Fields(l); len(f) < 8 || f[0] != "0" || f[3] != "0" || f[4] != "0.0%" {
			t.Errorf("text row with a change: %q", l)
		}
	}
}

// TestDiffKnown: against a copy with three ticks removed and one syscall
// lengthened by 2 µs, exactly those rows change, ranked first.
func TestDiffKnown(t *testing.T) {
	a := diffRecording(t, "a.data", 50, -1)
	b := diffRecording(t, "b.data", 50, 17, 3, 20, 41)
	d, err := runDiffJSON(t, a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"type test/tick count": -3, "track app 7 count": -3,
		"slices app 7/syscalls mean": 40, "slices app 7/syscalls p99": 2000, "slices app 7/syscalls max": 2000,
		"slice read mean": 40, "slice read p99": 2000, "slice read max": 2000,
	}
	rates := 0
	for i, r := range d.Rows {
		k := r.Kind + " " + r.Key + " " + r.Measure
		if r.Measure == "rate" && r.Delta != 0 {
			rates++
			if i >= 10 {
				t.Errorf("%s ranked %d", k, i)
			}
			continue
		}
		w, ok := want[k]
		if !ok {
			if r.Delta != 0 {
				t.Errorf("unexpected change %s: %+v", k, r)
			}
			continue
		}
		delete(want, k)
		if r.Delta != w {
			t.Errorf("%s: delta %g, want %g", k, r.Delta, w)
		}
		if i >= 10 {
			t.Errorf("%s ranked %d, after unchanged rows", k, i)
		}
	}
	if len(want) > 0 || rates != 2 {
		t.Errorf("rows missing: %v; %d rate rows changed, want 2", want, rates)
	}
}

// TestDiffFailIf checks --fail-if's exit status both ways, its
// directions, units and subjects, and that a threshold naming no row is
// an error.
func TestDiffFailIf(t *testing.T) {
	a := diffRecording(t, "a.data", 50, -1)
	b := diffRecording(t, "b.data", 50, 17, 3, 20, 41)
	// tick count −6%, read max +100% (2 µs → 4 µs), mean +40 ns
	for _, c := range []struct {
		expr string
		fail bool
	}{
		{"tick count -5%", true},
		{"tick count -10%", false},
		{"tick count +1%", false}, // it fell
		{"tick count 5%", true},   // either way
		{"test/tick count -2", true},
		{"test/tick count -3", false},
		{"type:test/tick count -2", true},
		{"read max +99%", true},
		{"read max +100%", false},
		{"app 7/syscalls mean +39", true},
		{"app 7/syscalls mean +40", false},
		{"app 7 count -1%", true}, // 150 → 147 events
		{"app 7 count -3%", false},
	} {
		d, err := runDiffJSON(t, "--fail-if", c.expr, a, b)
		if got := errors.Is(err, errThreshold); got != c.fail || err != nil && !got {
			t.Errorf("--fail-if %q: err %v, want failure %v", c.expr, err, c.fail)
		}
		if (len(d.Failed) > 0) != c.fail {
			t.Errorf("--fail-if %q: failed %q", c.expr, d.Failed)
		}
	}
	// Malformed thresholds, and one that matches no row (no such track).
	for _, bad := range []string{"tick count", "tick speed +1%", "tick count +x%", "tick count +-1%", "track:test/tick count -2"} {
		if err := run(context.Background(), []string{"diff", "--fail-if", bad, a, b}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || errors.Is(err, errThreshold) {
			t.Errorf("--fail-if %q: err %v, want a usage error", bad, err)
		}
	}
	// Two thresholds, one exceeded: status 1, the table still printed.
	var out bytes.Buffer
	err := run(context.Background(), []string{"diff", "--fail-if", "tick count -10%", "--fail-if", "read max +50%", a, b}, &out, &bytes.Buffer{})
	if !errors.Is(err, errThreshold) || !strings.Contains(out.String(), `"read"`) {
		t.Errorf("err %v, output:\n%s", err, out.String())
	}
}
