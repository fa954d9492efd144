package ui

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// TestJS runs the JavaScript unit tests in ui/jstest (node's built-in test
// runner, no packages) so that `go test ./...` covers the frontend's pure
// modules too. Without node it skips, except under CI, which must run them
// (.ci/run installs nodejs).
func TestJS(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node not found: CI must run the JavaScript tests in ui/jstest (install nodejs)")
		}
		t.Skip("node not found: skipping the JavaScript tests in ui/jstest (install nodejs to run them)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// With no file arguments, node --test runs every *.test.js under its
	// working directory.
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=tap")
	cmd.Dir = "jstest"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test in ui/jstest: %v\n%s", err, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
	if !regexp.MustCompile(`(?m)^# pass [1-9]`).Match(out) {
		t.Fatalf("node --test in ui/jstest reported no passing tests:\n%s", out)
	}
}
