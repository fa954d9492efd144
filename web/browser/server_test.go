package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"viewer/render/gen"
	"viewer/trace"
	"viewer/ui"
	"viewer/web"
)

// synthFormat is a test-only trace format: a one-line text header naming
// the parameters of a render/gen synthetic trace, so that a file of a few
// bytes stands for a large trace with stacks, labels, lost events and
// decoded fields.
//
//	SYNTH1 events=N seed=S tracks=T [truncate]\n
type synthFormat struct{}

const synthMagic = "SYNTH1 "

func (synthFormat) Name() string { return "synth" }

func (synthFormat) Match(head []byte) bool { return bytes.HasPrefix(head, []byte(synthMagic)) }

func (synthFormat) Open(r io.ReaderAt, size int64) (trace.Reader, error) {
	if size > 4096 {
		return nil, &trace.FormatError{Format: "synth", Off: 0, Msg: "header too long"}
	}
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, err
	}
	line, _, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return nil, &trace.FormatError{Format: "synth", Off: size, Msg: "no header line", Err: trace.ErrTruncated}
	}
	var cfg gen.Config
	for f := range strings.FieldsSeq(strings.TrimPrefix(string(line), synthMagic)) {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "events":
			_, err = fmt.Sscan(v, &cfg.Events)
		case "seed":
			_, err = fmt.Sscan(v, &cfg.Seed)
		case "tracks":
			_, err = fmt.Sscan(v, &cfg.Tracks)
		case "truncate":
			cfg.Truncate = true
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return nil, &trace.FormatError{Format: "synth", Off: 7, Msg: err.Error()}
		}
	}
	return gen.New(cfg), nil
}

func synthFile(events int64, seed uint64, tracks int) []byte {
	return fmt.Appendf(nil, "%sevents=%d seed=%d tracks=%d\n", synthMagic, events, seed, tracks)
}

// viewerServer runs the real web server with the embedded frontend
// (ui.Static) and a synthetic demo trace.
type viewerServer struct {
	*httptest.Server
	s *web.Server
}

func newViewerServer(t testing.TB) *viewerServer {
	t.Helper()
	s, err := web.New(web.Config{
		DataDir:   t.TempDir(),
		Formats:   []trace.Format{synthFormat{}},
		Static:    ui.Static(),
		MaxUpload: 1 << 20,
		Demo:      func() (string, []byte) { return "demo.synth", synthFile(200_000, 1, 24) },
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
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
