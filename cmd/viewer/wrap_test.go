package main

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"viewer/trace/tracetest"
	"viewer/web"
)

// zipFile writes a zip of deflated entries, given as name, source file
// pairs in order.
func zipFile(t *testing.T, out string, entries ...string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for i := 0; i+1 < len(entries); i += 2 {
		name, src := entries[i], entries[i+1]
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		copyFile(t, w, src)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, w io.Writer, src string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if _, err := io.Copy(w, in); err != nil {
		t.Fatal(err)
	}
}

// compressFile writes src gzip- or zstd-compressed to out.
func compressFile(t *testing.T, out, src, kind string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	var w io.WriteCloser
	if kind == "gzip" {
		w = gzip.NewWriter(f)
	} else {
		w, err = zstd.NewWriter(f)
		if err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, w, src)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func runOut(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	return out.String(), err
}

// TestWrappedStats checks that a zipped copy of each shared .nettrace and
// .netperf, and gzip and zstd copies of a perf.data and of a CPEL file,
// give the same `viewer stats` (JSON and text) as the plain files.
func TestWrappedStats(t *testing.T) {
	t.Parallel()
	type copyOf struct{ src, kind string }
	var cases []copyOf
	filepath.WalkDir(tracetest.RealData(t, "nettrace"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && (strings.HasSuffix(p, ".nettrace") || strings.HasSuffix(p, ".netperf")) {
			cases = append(cases, copyOf{p, "zip"})
		}
		return nil
	})
	if len(cases) < 10 {
		t.Errorf("only %d .nettrace and .netperf files to zip", len(cases))
	}
	// Every one in exhaustive runs (CI), four of them otherwise.
	cases = tracetest.Sample(cases, 1, 3, 18)
	for _, p := range []string{
		filepath.Join(tracetest.RealData(t, "perf"), "local-recordings", "sched-noclock.data"),
		filepath.Join(tracetest.RealData(t, "cpel"), "vpp_rich.cpel"),
	} {
		cases = append(cases, copyOf{p, "gzip"}, copyOf{p, "zstd"})
	}
	dir := t.TempDir()
	for _, c := range cases {
		name := filepath.Base(c.src) + "." + c.kind
		t.Run(name, func(t *testing.T) {
			wrapped := filepath.Join(dir, name)
			if c.kind == "zip" {
				zipFile(t, wrapped, "traces/"+filepath.Base(c.src), c.src)
			} else {
				compressFile(t, wrapped, c.src, c.kind)
			}
			for _, args := range [][]string{{"stats", "--json"}, {"stats"}} {
				want, err := runOut(t, append(args, c.src)...)
				if err != nil {
					t.Fatalf("plain %v: %v", args, err)
				}
				got, err := runOut(t, append(args, wrapped)...)
				if err != nil {
					t.Fatalf("wrapped %v: %v", args, err)
				}
				if got != want {
					t.Errorf("%v differs:\n got %.600s\nwant %.600s", args, got, want)
				}
			}
		})
	}
}

// TestWrappedCommands runs the other commands on wrapped copies, and the
// choice a zip of two traces asks for.
func TestWrappedCommands(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the unwrapped traces go
	nt := filepath.Join(tracetest.RealData(t, "nettrace"), "perfview", "only_managed_samples.nettrace")
	cp := filepath.Join(tracetest.RealData(t, "cpel"), "vpp_rich.cpel")
	dir := t.TempDir()
	one := filepath.Join(dir, "one.zip")
	zipFile(t, one, "README.txt", filepath.Join(filepath.Dir(nt), "..", "PROVENANCE.md"), "x/only.nettrace", nt)
	gz := filepath.Join(dir, "vpp.gz")
	compressFile(t, gz, cp, "gzip")
	for _, c := range []struct {
		args    []string
		plain   string
		wrapped string
	}{
		{[]string{"stacks", "--collapsed"}, nt, one},
		{[]string{"dump"}, cp, gz},
		{[]string{"dump"}, nt, one + ":x/only.nettrace"},
	} {
		want, err := runOut(t, append(c.args, c.plain)...)
		if err != nil {
			t.Fatalf("%v %s: %v", c.args, c.plain, err)
		}
		got, err := runOut(t, append(c.args, c.wrapped)...)
		if err != nil {
			t.Fatalf("%v %s: %v", c.args, c.wrapped, err)
		}
		if got != want || got == "" {
			t.Errorf("%v %s differs from the plain file's output (%d bytes, want %d)", c.args, c.wrapped, len(got), len(want))
		}
	}

	// Two traces: an error naming both and the ARCHIVE:MEMBER form; each
	// opens by name.
	two := filepath.Join(dir, "two.zip")
	zipFile(t, two, "a/only.nettrace", nt, "vpp.cpel", cp, "notes.txt", cp+"dump.txt")
	_, err := runOut(t, "stats", two)
	if err == nil || !strings.Contains(err.Error(), `the zip holds 2 traces ("a/only.nettrace", "vpp.cpel")`) || !strings.Contains(err.Error(), two+":a/only.nettrace") {
		t.Errorf("stats of a zip of two traces: %v", err)
	}
	for member, src := range map[string]string{"a/only.nettrace": nt, "vpp.cpel": cp} {
		want, _ := runOut(t, "stats", src)
		got, err := runOut(t, "stats", two+":"+member)
		if err != nil || got != want {
			t.Errorf("stats %s:%s: %v\n%.300s", two, member, err, got)
		}
	}
	if _, err := runOut(t, "stats", two+":nope"); err == nil || !strings.Contains(err.Error(), `no entry "nope"; the archive holds`) {
		t.Errorf("a missing member: %v", err)
	}
	// No temporary file is left behind.
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestWrappedUpload uploads a zipped real trace through the web API: it is
// unwrapped, indexed with the plain file's event count, and the plain file
// then deduplicates to it. `viewer serve FILE.zip` stores the same trace.
func TestWrappedUpload(t *testing.T) {
	src := filepath.Join(tracetest.RealData(t, "nettrace"), "perfview", "eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace")
	plain, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	zipped := filepath.Join(dir, "bug-report.zip")
	zipFile(t, zipped, "arraytypes.nettrace", src)
	body, err := os.ReadFile(zipped)
	if err != nil {
		t.Fatal(err)
	}
	want, err := runOut(t, "stats", "--json", src)
	if err != nil {
		t.Fatal(err)
	}
	var wantStats struct{ Events int64 }
	json.Unmarshal([]byte(want), &wantStats)

	hs, stop := startServer(t, t.TempDir())
	defer stop()
	post := func(name string, data []byte) (int, map[string]any) {
		resp, err := http.Post(hs.URL+"/api/traces?name="+name, "application/octet-stream", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r map[string]any
		json.NewDecoder(resp.Body).Decode(&r)
		return resp.StatusCode, r
	}
	status, r := post("bug-report.zip", body)
	if status != http.StatusCreated {
		t.Fatalf("upload of a zip: %d %v", status, r)
	}
	id := r["id"].(string)
	info := waitIndexed(t, hs.URL, id)
	if info.State != web.StateReady || info.Stats == nil || info.Stats.Events != wantStats.Events || wantStats.Events == 0 {
		t.Fatalf("indexed zip upload: %+v, want %d events", info, wantStats.Events)
	}
	if info.Format != "nettrace" || info.Wrapper != "zip" || info.Member != "arraytypes.nettrace" || info.Size != int64(len(plain)) || info.WrappedSize != int64(len(body)) || info.Name != "bug-report.zip" {
		t.Errorf("entry %+v", info.Entry)
	}
	if status, r := post("arraytypes.nettrace", plain); status != http.StatusOK || r["id"] != id || r["existing"] != true {
		t.Errorf("the plain trace after its zip: %d %v, want the zip's id %s", status, r, id)
	}
}

// TestServeWrappedFile checks that `viewer serve FILE.zip:MEMBER` adds the
// member.
func TestServeWrappedFile(t *testing.T) {
	src := filepath.Join(tracetest.RealData(t, "cpel"), "vpp_rich.cpel")
	dir := t.TempDir()
	zipped := filepath.Join(dir, "two.zip")
	zipFile(t, zipped, "a.cpel", src, "b/c.cpel", src)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // add the files, then stop at once
	var stdout, stderr syncBuffer
	data := t.TempDir()
	if err := run(ctx, []string{"serve", "--port", "0", "--data", data, zipped + ":b/c.cpel"}, &stdout, &stderr); err != nil {
		t.Fatalf("serve: %v; %s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "viewer: two.zip: http://") {
		t.Errorf("stdout %q", stdout.String())
	}
	err := run(ctx, []string{"serve", "--port", "0", "--data", t.TempDir(), zipped}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), `the zip holds 2 traces ("a.cpel", "b/c.cpel")`) {
		t.Errorf("serve of a zip of two traces: %v", err)
	}
}
