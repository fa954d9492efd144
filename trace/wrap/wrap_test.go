package wrap

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"viewer/trace"
	"viewer/trace/synth"
)

var formats = []trace.Format{synth.Format{}}

// zipOf returns a zip of the entries, given as name, content pairs,
// deflated (or stored, for method).
func zipOf(t testing.TB, method uint16, entries ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	zw.RegisterCompressor(93, func(w io.Writer) (io.WriteCloser, error) { return zstd.NewWriter(w) })
	for i := 0; i+1 < len(entries); i += 2 {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: entries[i].(string), Method: method})
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

func unwrap(data []byte, member string, lim Limits) ([]byte, Info, error) {
	var out bytes.Buffer
	info, err := Unwrap(context.Background(), bytes.NewReader(data), int64(len(data)), member, formats, lim, &out)
	return out.Bytes(), info, err
}

func TestUnwrap(t *testing.T) {
	tr := synth.File(100, 1, 4)
	for _, c := range []struct {
		name   string
		data   []byte
		member string
		want   Info
	}{
		{"gzip", gzipOf(tr), "", Info{Wrapper: Gzip}},
		{"gzip of two members", append(gzipOf(tr[:10]), gzipOf(tr[10:])...), "", Info{Wrapper: Gzip}},
		{"zstd", zstdOf(tr), "", Info{Wrapper: Zstd}},
		{"zip", zipOf(t, zip.Deflate, "dir/", []byte{}, "notes.txt", []byte("hi"), "dir/t.synth", tr), "", Info{Wrapper: Zip, Member: "dir/t.synth"}},
		{"zip stored", zipOf(t, zip.Store, "t.synth", tr), "", Info{Wrapper: Zip, Member: "t.synth"}},
		{"zip of zstd", zipOf(t, 93, "t.synth", tr), "", Info{Wrapper: Zip, Member: "t.synth"}},
		{"zip member", zipOf(t, zip.Deflate, "a.synth", synth.File(5, 1, 1), "b.synth", tr), "b.synth", Info{Wrapper: Zip, Member: "b.synth"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if Detect(c.data) != c.want.Wrapper {
				t.Errorf("Detect = %q", Detect(c.data))
			}
			got, info, err := unwrap(c.data, c.member, Limits{})
			c.want.Size = int64(len(tr))
			if err != nil || !bytes.Equal(got, tr) || info != c.want {
				t.Errorf("Unwrap = %q, %+v, %v; want %+v", got, info, err, c.want)
			}
		})
	}
}

func TestUnwrapRefuses(t *testing.T) {
	tr := synth.File(100, 1, 4)
	bomb := append(bytes.Clone(tr), make([]byte, 64<<20)...)
	big := append(bytes.Clone(tr), bytes.Repeat([]byte("0123456789abcdef"), 1<<16)...) // 1 MiB, compresses well under 256
	many := []any{}
	for i := range MaxEntries + 1 {
		many = append(many, "f"+strconv.Itoa(i), []byte{})
	}
	for _, c := range []struct {
		name   string
		data   []byte
		member string
		lim    Limits
		is     error
		want   string
	}{
		{"zip bomb", zipOf(t, zip.Deflate, "b.synth", bomb), "", Limits{}, ErrLimit, `zip entry "b.synth": it expands more than 256 times`},
		{"gzip bomb", gzipOf(bomb), "", Limits{}, ErrLimit, "gzip: it expands more than 256 times"},
		{"zstd bomb", zstdOf(bomb), "", Limits{}, ErrLimit, "zstd: it expands more than 256 times"},
		{"zip ratio", zipOf(t, zip.Deflate, "b.synth", bomb[:4<<20]), "", Limits{MaxRatio: 10}, ErrLimit, "expands more than 10 times"},
		{"gzip size", gzipOf(big), "", Limits{MaxSize: 512 << 10}, ErrLimit, "gzip: the trace inside is larger than 512 KiB, the unwrapping limit"},
		{"zip size", zipOf(t, zip.Deflate, "b.synth", big), "", Limits{MaxSize: 512 << 10}, ErrLimit, `zip entry "b.synth" is 1.0 MiB decompressed, more than the unwrapping limit of 512 KiB`},
		{"two traces", zipOf(t, zip.Deflate, "a.synth", tr, "b.synth", tr), "", Limits{}, ErrChoice, `the zip holds 2 traces ("a.synth", "b.synth")`},
		{"no trace", zipOf(t, zip.Deflate, "a", []byte("text"), "b", gzipOf(tr)), "", Limits{}, trace.ErrUnknownFormat, `no entry is a trace format this viewer knows: "a" (first bytes 74 65 78 74), "b" (a gzip file: only one layer`},
		{"empty zip", zipOf(t, zip.Deflate), "", Limits{}, trace.ErrUnknownFormat, "the archive holds no files"},
		{"no such member", zipOf(t, zip.Deflate, "a.synth", tr), "b", Limits{}, nil, `no entry "b"; the archive holds "a.synth"`},
		{"member of gzip", gzipOf(tr), "x", Limits{}, nil, "a gzip file holds one trace"},
		{"not a trace inside", zstdOf([]byte("hello")), "", Limits{}, trace.ErrUnknownFormat, "zstd: the file inside is not a trace format this viewer knows (first bytes 68 65 6c 6c 6f)"},
		{"empty inside", gzipOf(nil), "", Limits{}, trace.ErrUnknownFormat, "(empty)"},
		{"cut gzip", gzipOf(tr)[:30], "", Limits{}, nil, "gzip: the compressed data is cut short"},
		{"bad gzip crc", func() []byte { b := gzipOf(tr); b[len(b)-6] ^= 1; return b }(), "", Limits{}, nil, "gzip: invalid checksum"},
		{"too many entries", zipOf(t, zip.Store, many...), "", Limits{}, nil, "the archive holds 10001 files; at most 10000"},
		{"not a wrapper", []byte("hello"), "", Limits{}, trace.ErrUnknownFormat, "not a zip, gzip or zstd file either"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out countWriter
			info, err := Unwrap(context.Background(), bytes.NewReader(c.data), int64(len(c.data)), c.member, formats, c.lim, &out)
			if err == nil || !strings.Contains(err.Error(), c.want) || (c.is != nil && !errors.Is(err, c.is)) {
				t.Errorf("Unwrap = %+v, %v; want an error with %q (is %v)", info, err, c.want, c.is)
			}
			lim := c.lim.withDefaults()
			if out.n > lim.MaxSize || out.n > lim.MaxRatio*int64(len(c.data))+RatioSlack {
				t.Errorf("wrote %d bytes from %d past the limits", out.n, len(c.data))
			}
		})
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// TestZipDirectoryBounded: a zip whose central directory is larger than
// MaxDirectory is refused before it is read into memory.
func TestZipDirectoryBounded(t *testing.T) {
	var entries []any
	name := strings.Repeat("n", 60000)
	for i := 0; (i+1)*len(name) < MaxDirectory+200<<10; i++ {
		entries = append(entries, name+strconv.Itoa(i), []byte{})
	}
	data := zipOf(t, zip.Store, entries...)
	_, _, err := unwrap(data, "", Limits{})
	if err == nil || !strings.Contains(err.Error(), "the archive's directory is larger than 16 MiB") {
		t.Errorf("Unwrap = %v", err)
	}
}

func TestUnwrapCancel(t *testing.T) {
	data := gzipOf(append(synth.File(1, 1, 1), make([]byte, 4<<20)...))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Unwrap(ctx, bytes.NewReader(data), int64(len(data)), "", formats, Limits{}, io.Discard)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Unwrap after cancel = %v", err)
	}
}

func TestOpenFile(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	tr := synth.File(50, 2, 3)
	files := map[string][]byte{
		"plain":    tr,
		"t.gz":     gzipOf(tr),
		"a:b.zip":  zipOf(t, zip.Deflate, "x.synth", synth.File(5, 1, 1), "y:z.synth", tr),
		"bomb.zst": zstdOf(append(bytes.Clone(tr), make([]byte, 8<<20)...)),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, c := range []struct {
		name, wrapper string
	}{{p("plain"), ""}, {p("t.gz"), Gzip}, {p("a:b.zip") + ":y:z.synth", Zip}} {
		f, err := OpenFile(context.Background(), c.name, formats, Limits{})
		if err != nil {
			t.Fatalf("OpenFile(%s): %v", c.name, err)
		}
		n := 0
		for {
			if _, err := f.ReadEvent(); err != nil {
				break
			}
			n++
		}
		if n != 50 || f.Info.Wrapper != c.wrapper {
			t.Errorf("%s: %d events, wrapper %q", c.name, n, f.Info.Wrapper)
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
	for name, want := range map[string]string{
		p("a:b.zip"):  `the zip holds 2 traces ("x.synth", "y:z.synth"): name one, e.g. ` + p("a:b.zip") + ":x.synth",
		p("bomb.zst"): "bomb.zst: zstd: it expands more than 256 times",
		p("none"):     "no such file",
	} {
		if _, err := OpenFile(context.Background(), name, formats, Limits{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("OpenFile(%s) = %v, want %q", name, err, want)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestSplitMember(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.zip")
	os.WriteFile(a, nil, 0o600)
	os.WriteFile(a+":b", nil, 0o600)
	for in, want := range map[string][2]string{
		a:                {a, ""},
		a + ":x/y.synth": {a, "x/y.synth"},
		a + ":b":         {a + ":b", ""},
		a + ":b:c":       {a + ":b", "c"},
		a + ":x:y":       {a, "x:y"},
		"nope:x":         {"nope:x", ""},
	} {
		if f, m := SplitMember(in); f != want[0] || m != want[1] {
			t.Errorf("SplitMember(%q) = %q, %q; want %q", in, f, m, want)
		}
	}
}

// FuzzUnwrap feeds Unwrap arbitrary bytes: it must not panic, and what it
// writes stays within the limits.
func FuzzUnwrap(f *testing.F) {
	tr := synth.File(10, 1, 2)
	f.Add(gzipOf(tr))
	f.Add(zstdOf(tr))
	f.Add(zipOf(f, zip.Deflate, "a.synth", tr))
	f.Add(zipOf(f, zip.Store, "a.synth", tr, "b", []byte("x")))
	f.Add(zipOf(f, 93, "a.synth", tr))
	f.Add(gzipOf(append(bytes.Clone(tr), make([]byte, 128<<10)...))) // past MaxSize
	f.Add([]byte("PK\x05\x06"))
	lim := Limits{MaxSize: 64 << 10, MaxRatio: 64}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out countWriter
		info, err := Unwrap(context.Background(), bytes.NewReader(data), int64(len(data)), "", formats, lim, &out)
		if out.n > lim.MaxSize || out.n > lim.MaxRatio*int64(len(data))+RatioSlack {
			t.Fatalf("wrote %d bytes from %d", out.n, len(data))
		}
		if err == nil && info.Size != out.n {
			t.Fatalf("Info.Size %d, wrote %d", info.Size, out.n)
		}
	})
}
