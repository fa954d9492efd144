package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"viewer/trace"
	"viewer/trace/tracetest"
)

// TestDemoTrace checks that the embedded demo opens and has what the first
// page should show.
func TestDemoTrace(t *testing.T) {
	name, data := demoTrace()
	if name == "" || len(data) == 0 {
		t.Fatal("no demo trace")
	}
	r, err := trace.Open(bytes.NewReader(data), int64(len(data)), formats())
	if err != nil {
		t.Fatal(err)
	}
	res := tracetest.Check(t, r, false)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	m := r.Meta()
	if len(m.Tracks) < 5 || len(m.Lost) != 1 || m.Lost[0].Count != 37 {
		t.Errorf("demo: %d tracks, lost %+v", len(m.Tracks), m.Lost)
	}
}

// TestDemoCurrent checks that demo.nettrace is what the generator makes,
// so a change to the writer or the generator cannot leave a stale demo.
func TestDemoCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	out := filepath.Join(t.TempDir(), "demo.nettrace")
	cmd := exec.Command("go", "run", "./internal/demogen", "-o", out)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if _, want := demoTrace(); !bytes.Equal(got, want) {
		t.Error("demo.nettrace is stale: run go generate ./cmd/viewer")
	}
}
