package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"viewer/ui"
	"viewer/web"
)

// TestCompareAPIAgreesWithDiff: GET /api/compare on two recordings
// served as `viewer serve` serves them answers the rows `viewer diff
// --json` prints for the same files, in the same order, with the same
// values.
func TestCompareAPIAgreesWithDiff(t *testing.T) {
	a := diffRecording(t, "a.data", 50, -1)
	b := diffRecording(t, "b.data", 50, 17, 3, 20, 41)
	d, err := runDiffJSON(t, a, b)
	if err != nil {
		t.Fatal(err)
	}
	s, err := web.New(web.Config{
		DataDir: t.TempDir(), Formats: formats(), Symbols: symbolSource, Derive: deriver, Static: ui.Static(),
		MaxUpload: 1 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer func() { s.CloseSessions(); hs.Close(); s.Close() }()
	var ids []string
	for _, p := range []string{a, b} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(hs.URL+"/api/traces?name=r.data", "application/octet-stream", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var up struct{ ID, Error string }
		json.NewDecoder(resp.Body).Decode(&up)
		resp.Body.Close()
		if up.ID == "" {
			t.Fatalf("upload: %d %s", resp.StatusCode, up.Error)
		}
		waitIndexed(t, hs.URL, up.ID)
		ids = append(ids, up.ID)
	}
	var api diffJSON
	getJSON(t, hs.URL+"/api/compare?limit=5000&a="+ids[0]+"&b="+ids[1], &api)
	if len(api.Rows) != len(d.Rows) || len(d.Rows) < 20 {
		t.Fatalf("API: %d rows, diff: %d", len(api.Rows), len(d.Rows))
	}
	for i := range d.Rows {
		x, y := api.Rows[i], d.Rows[i]
		same := x.Kind == y.Kind && x.Key == y.Key && x.Measure == y.Measure && x.A == y.A && x.B == y.B &&
			x.Delta == y.Delta && x.Score == y.Score && (x.Rel == nil) == (y.Rel == nil) && (x.Rel == nil || *x.Rel == *y.Rel)
		if !same {
			t.Errorf("row %d: API %+v, diff %+v", i, x, y)
		}
	}
}
