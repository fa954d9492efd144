package browser

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/nettrace"
	"viewer/trace/synth"
	"viewer/ui"
	"viewer/web"
)

// viewerServer runs the real web server with the embedded frontend
// (ui.Static) and a synthetic demo trace.
type viewerServer struct {
	*httptest.Server
	s *web.Server
}

func newViewerServer(t testing.TB) *viewerServer {
	t.Helper()
	return startViewerServer(t, web.Config{
		Formats:   []trace.Format{synth.Format{}},
		MaxUpload: 1 << 20,
		Demo:      func() (string, []byte) { return "demo.synth", synth.File(200_000, 1, 24) },
	})
}

// newNetTraceServer serves the viewer binary's own demo trace
// (cmd/viewer/demo.nettrace) with the NetTrace reader and its stacks
// symbolized, as `viewer serve` does.
func newNetTraceServer(t testing.TB) *viewerServer {
	t.Helper()
	demo, err := os.ReadFile("../../cmd/viewer/demo.nettrace")
	if err != nil {
		t.Fatal(err)
	}
	return startViewerServer(t, web.Config{
		Formats:   []trace.Format{nettrace.Format{}},
		Symbols:   func(trace.Reader) render.SymbolSource { return clr.NewSymbols() },
		MaxUpload: int64(len(demo)),
		Demo:      func() (string, []byte) { return "demo.nettrace", demo },
	})
}

// startViewerServer starts web.Server with cfg, the embedded frontend and
// a fresh data directory.
func startViewerServer(t testing.TB, cfg web.Config) *viewerServer {
	t.Helper()
	cfg.DataDir = t.TempDir()
	cfg.Static = ui.Static()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(s.Handler())
	hs.Config.RegisterOnShutdown(s.CloseSessions)
	hs.Start()
	t.Cleanup(func() {
		s.CloseSessions()
		hs.Close()
		s.Close()
	})
	return &viewerServer{hs, s}
}

// traceIDs lists the library's trace ids, newest first.
func (vs *viewerServer) traceIDs(t testing.TB) []string {
	t.Helper()
	resp, err := http.Get(vs.URL + "/api/traces")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct{ ID, Name, State string }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range list {
		ids = append(ids, e.ID)
	}
	return ids
}

func (vs *viewerServer) demo(t testing.TB) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ids := vs.traceIDs(t); len(ids) > 0 {
			return ids[0]
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the library holds no demo trace")
	return ""
}
