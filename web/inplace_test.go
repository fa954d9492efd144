package web

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestInPlace: a trace added in place is indexed and served from where
// it is, the library holds no copy, the entry survives a restart, a
// change to the file is refused with a message saying so, and deleting
// the entry leaves the file.
func TestInPlace(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(t.TempDir(), "big.synth")
	data := synthFile(3000, 1)
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, dir, nil)
	e, err := ts.s.AddInPlace(name)
	if err != nil {
		t.Fatal(err)
	}
	ti := ts.waitReady(e.ID.String())
	if ti.Stats == nil || ti.Stats.Events != 3000 || ti.Size != int64(len(data)) {
		t.Fatalf("in place: %+v", ti)
	}
	if _, err := os.Stat(filepath.Join(dir, tracesDir, e.ID.String(), traceFile)); !os.IsNotExist(err) {
		t.Errorf("the library holds a copy of a trace opened in place (%v)", err)
	}
	if _, err := ts.s.AddInPlace(filepath.Join(dir, "nonexistent")); err == nil {
		t.Errorf("a missing file was added")
	}
	if junk := filepath.Join(t.TempDir(), "junk"); os.WriteFile(junk, []byte("not a trace"), 0o600) == nil {
		if _, err := ts.s.AddInPlace(junk); err == nil || !strings.Contains(err.Error(), "unwrap") {
			t.Errorf("a file of no known format: %v", err)
		}
	}
	ts.close()

	// The file grows (as a trace rewritten by another tool): refused on
	// the next open, after a restart.
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("more"))
	f.Close()
	ts2 := newTestServer(t, dir, nil)
	var got TraceInfo
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		for _, x := range ts2.list() {
			if x.ID == e.ID {
				got = x
			}
		}
		if got.State == StateFailed || time.Now().After(deadline) {
			break
		}
		ts2.do("GET", "/api/traces/"+e.ID.String()+"/meta", nil) // starts the build
	}
	if got.State != StateFailed || !strings.Contains(got.Error, "changed since it was added") {
		t.Errorf("a changed file: state %s, error %q", got.State, got.Error)
	}
	// Same size and time, other content at an end: refused too.
	os.WriteFile(name, data, 0o600)
	st, _ := os.Stat(name)
	changed := append([]byte(nil), data...)
	changed[len(changed)-1] ^= 1
	os.WriteFile(name, changed, 0o600)
	os.Chtimes(name, st.ModTime(), st.ModTime())
	fixed := e
	fixed.ModTime = st.ModTime().UTC()
	if _, err := openInPlace(fixed); err == nil || !strings.Contains(err.Error(), "other content") {
		t.Errorf("other content of the same size and time: %v", err)
	}
	if resp, _ := ts2.do("DELETE", "/api/traces/"+e.ID.String(), nil); resp.StatusCode != 204 {
		t.Errorf("delete: %d", resp.StatusCode)
	}
	if _, err := os.Stat(name); err != nil {
		t.Errorf("deleting the entry removed the file: %v", err)
	}
}
