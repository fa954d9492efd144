package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPerfCallchains records scheduler events with call chains (`perf
// record -g`) and checks `viewer dump` against `perf script` sample by
// sample: the same number of frames (the PERF_CONTEXT_* markers are not
// frames) and the same frames in the kernel, which dump names
// `[kernel.kallsyms]!0x…` as perf script names unresolved kernel frames.
// It skips when perf is missing or cannot record here.
func TestPerfCallchains(t *testing.T) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf is not installed")
	}
	data := filepath.Join(t.TempDir(), "g.data")
	rec := exec.Command(perf, "record", "-q", "-g", "-e", "sched:sched_switch", "-o", data, "--",
		"sh", "-c", "for i in 1 2 3; do ls / >/dev/null; sleep 0.01; done")
	if out, err := rec.CombinedOutput(); err != nil {
		t.Skipf("perf record -g cannot record here: %v: %s", err, bytes.TrimSpace(out))
	}
	script, err := exec.Command(perf, "script", "-i", data).Output()
	if err != nil {
		t.Skipf("perf script cannot read its own recording: %v", err)
	}
	// perf script: a sample's line, then one indented line per frame,
	// "ADDR SYMBOL (DSO)", then a blank line.
	type frames struct{ n, kernel int }
	var want []frames
	for _, line := range strings.Split(string(script), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
		case line[0] == '\t' || line[0] == ' ' && len(want) > 0 && !strings.Contains(line, "sched:"):
			want[len(want)-1].n++
			if strings.HasSuffix(line, "([kernel.kallsyms])") {
				want[len(want)-1].kernel++
			}
		default:
			want = append(want, frames{})
		}
	}
	var out bytes.Buffer
	if err := runDump(context.Background(), []string{data}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var got []frames
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e struct {
			Event string   `json:"event"`
			Stack []string `json:"stack"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Event != "sched_switch" {
			continue
		}
		f := frames{n: len(e.Stack)}
		for _, fr := range e.Stack {
			if strings.HasPrefix(fr, "[kernel.kallsyms]!0x") {
				f.kernel++
			}
		}
		got = append(got, f)
	}
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("dump has %d samples, perf script %d", len(got), len(want))
	}
	kernel := 0
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sample %d: %d frames (%d in the kernel), perf script %d (%d)", i, got[i].n, got[i].kernel, want[i].n, want[i].kernel)
		}
		kernel += want[i].kernel
	}
	if kernel == 0 {
		t.Error("no kernel frame in the recording: the check compared nothing")
	}
	t.Logf("%d samples, %d kernel frames, as perf script shows", len(want), kernel)
}
