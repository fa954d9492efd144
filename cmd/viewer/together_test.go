package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeTogether checks that `viewer serve A B --together` prints the
// URL of the combined view of A and B, and that the URL opens it.
func TestServeTogether(t *testing.T) {
	a, b := diffRecording(t, "a.perf.data", 10, -1), diffRecording(t, "b.perf.data", 12, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--port", "0", "--data", t.TempDir(), "--together", a, b}, &stdout, &stderr)
	}()
	re := regexp.MustCompile(`viewer: together: (http://127\.0\.0\.1:\d+/v\?t=([0-9a-f-]{36}),([0-9a-f-]{36}))\n`)
	deadline := time.Now().Add(20 * time.Second)
	var m []string
	for m == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no combined URL printed; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v; stderr %q", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		m = re.FindStringSubmatch(stdout.String())
	}
	if m[2] == m[3] || !strings.Contains(stdout.String(), "/t/"+m[2]) || !strings.Contains(stdout.String(), "/t/"+m[3]) {
		t.Errorf("the combined URL does not name the two traces printed: %q", stdout.String())
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "/api/together/ws?t="+m[2]+","+m[3]) {
		t.Errorf("combined page: %d %.300s", resp.StatusCode, body)
	}
	cancel()
	<-done
}
