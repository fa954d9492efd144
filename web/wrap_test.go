package web

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// zipOf returns a zip of the entries, given as name, content pairs.
func zipOf(t *testing.T, entries ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i := 0; i+1 < len(entries); i += 2 {
		w, err := zw.Create(entries[i].(string))
		if err != nil {
			t.Fatal(err)
		}
		w.Write(entries[i+1].([]byte))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gzipOf(data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func zstdOf(data []byte) []byte {
	enc, _ := zstd.NewWriter(nil)
	return enc.EncodeAll(data, nil)
}

// TestWrappedUploads: wrapped uploads store the trace inside, deduplicated
// by the trace's hash; a zip of two traces is refused with their names
// unless member names one; bombs, oversized traces and zips without a
// trace are refused with a message, leaving nothing behind.
func TestWrappedUploads(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, dir, func(c *Config) { c.MaxUpload = 64 << 20 })
	tr := synthFile(1000, 1)
	status, id, msg := ts.upload("t.zip", zipOf(t, "README", []byte("notes"), "dir/t.synth", tr))
	if status != http.StatusCreated {
		t.Fatalf("zip upload: %d %s", status, msg)
	}
	ti := ts.waitReady(id)
	if ti.Wrapper != "zip" || ti.Member != "dir/t.synth" || ti.Size != int64(len(tr)) || ti.Format != "synth" || ti.Name != "t.zip" || ti.Stats.Events != 1000 {
		t.Errorf("entry of a zip upload: %+v, stats %+v", ti.Entry, ti.Stats)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"plain", tr}, {"t.gz", gzipOf(tr)}, {"t.zst", zstdOf(tr)}} {
		resp, b := ts.do("POST", "/api/traces?name="+c.name, bytes.NewReader(c.data))
		var r struct {
			ID       string
			Existing bool
		}
		json.Unmarshal(b, &r)
		if resp.StatusCode != http.StatusOK || r.ID != id || !r.Existing {
			t.Errorf("%s of the same trace: %d %s, want existing %s", c.name, resp.StatusCode, b, id)
		}
	}
	status, gid, msg := ts.upload("u.gz", gzipOf(synthFile(500, 2)))
	if status != http.StatusCreated {
		t.Fatalf("gzip upload: %d %s", status, msg)
	}
	if ti := ts.waitReady(gid); ti.Wrapper != "gzip" || ti.Member != "" || ti.Stats.Events != 500 {
		t.Errorf("entry of a gzip upload: %+v", ti.Entry)
	}

	two := zipOf(t, "a.synth", synthFile(10, 3), "b/c.synth", synthFile(20, 4))
	status, _, msg = ts.upload("two.zip", two)
	if status != http.StatusUnprocessableEntity || !strings.Contains(msg, `the zip holds 2 traces ("a.synth", "b/c.synth")`) || !strings.Contains(msg, "member=NAME") {
		t.Errorf("zip of two traces: %d %q", status, msg)
	}
	resp, b := ts.do("POST", "/api/traces?name=two.zip&member=b/c.synth", bytes.NewReader(two))
	var r struct{ ID string }
	json.Unmarshal(b, &r)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("member=b/c.synth: %d %s", resp.StatusCode, b)
	}
	if ti := ts.waitReady(r.ID); ti.Member != "b/c.synth" || ti.Stats.Events != 20 {
		t.Errorf("member upload: %+v", ti.Entry)
	}
	before := len(ts.list())

	bomb := zipOf(t, "bomb.synth", append([]byte(synthFile(10, 5)), make([]byte, 60<<20)...))
	for _, c := range []struct {
		name, query string
		data        []byte
		status      int
		want        string
	}{
		{"zip bomb", "", bomb, http.StatusRequestEntityTooLarge, "expands more than 256 times"},
		{"zstd bomb", "", zstdOf(append([]byte(synthFile(10, 5)), make([]byte, 60<<20)...)), http.StatusRequestEntityTooLarge, "likely decompression bomb"},
		{"no trace", "", zipOf(t, "a.txt", []byte("hello"), "b.gz", gzipOf(tr)), http.StatusUnsupportedMediaType, `"b.gz" (a gzip file: only one layer`},
		{"missing member", "&member=zz", two, http.StatusUnprocessableEntity, `no entry "zz"; the archive holds "a.synth", "b/c.synth"`},
		{"member of a gzip", "&member=zz", gzipOf(tr), http.StatusUnprocessableEntity, "a gzip file holds one trace"},
		{"member of a trace", "&member=zz", tr, http.StatusBadRequest, "not a zip"},
		{"cut gzip", "", gzipOf(tr)[:20], http.StatusUnprocessableEntity, "cut short"},
		{"not a trace inside", "", gzipOf([]byte("hello")), http.StatusUnsupportedMediaType, "the file inside is not a trace format this viewer knows (first bytes 68 65 6c 6c 6f)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, b := ts.do("POST", "/api/traces?name=x"+c.query, bytes.NewReader(c.data))
			var r struct{ Error string }
			json.Unmarshal(b, &r)
			if resp.StatusCode != c.status || !strings.Contains(r.Error, c.want) {
				t.Errorf("got %d %q, want %d with %q", resp.StatusCode, r.Error, c.status, c.want)
			}
			if strings.Contains(r.Error, dir) {
				t.Errorf("the message names a server path: %q", r.Error)
			}
			if n := len(ts.list()); n != before {
				t.Errorf("library holds %d traces, want %d", n, before)
			}
		})
	}
	if f := libraryFiles(t, dir); len(f) != before {
		t.Errorf("refused uploads left %v", f)
	}

	// The unwrapped trace may not exceed the upload limit.
	small := newTestServer(t, t.TempDir(), nil) // 1 MiB
	status, _, msg = small.upload("big.gz", gzipOf(append([]byte(synthFile(10, 5)), make([]byte, 2<<20)...)))
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "larger than 1 MiB, the unwrapping limit") {
		t.Errorf("a gzip over the upload limit: %d %q", status, msg)
	}
}
