package ipctest

import (
	"os"
	"testing"
)

// TempDir returns a new directory for stand-ins' sockets, removed when
// the test ends. It is made under the system's temporary directory, not
// t.TempDir's deeper one: a Unix socket's path holds at most 107 bytes.
func TempDir(tb testing.TB) string {
	tb.Helper()
	d, err := os.MkdirTemp("", "ipc")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// StartTest is Start for a test: in a TempDir when cfg.Dir is empty,
// closed when the test ends; a failure to start fails the test.
func StartTest(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	if cfg.Dir == "" {
		cfg.Dir = TempDir(tb)
	}
	s, err := Start(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}
