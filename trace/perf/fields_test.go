package perf

import (
	"bytes"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"viewer/trace"
	"viewer/trace/perf/perftest"
	"viewer/trace/tracetest"
)

// TestDecodeFields checks the FieldsDecoder contract on every event of a
// generated recording (tracepoints with print fmts, EventHeader events)
// and of every shared perf recording: DecodeFields gives, for each field
// of the event's type, the value of the first field of that name in
// Details, and the zero Value for an index the type does not have.
func TestDecodeFields(t *testing.T) {
	var buf bytes.Buffer
	if err := perftest.Generate(&buf, 20000, perftest.GenerateOptions{Pipe: true, SchedEvery: 3}); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := checkDecodeFields(t, "generated", r); n < 20000 {
		t.Fatalf("generated: %d fields checked", n)
	}

	dir := tracetest.RealData(t, "perf")
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".data") {
			r, _ := openFile(t, path, Options{})
			rel, _ := filepath.Rel(dir, path)
			t.Logf("%s: %d fields checked", rel, checkDecodeFields(t, rel, r))
		}
		return err
	})
}

func checkDecodeFields(t *testing.T, name string, r *Reader) (checked int) {
	t.Helper()
	var _ trace.FieldsDecoder = r
	var evs []trace.Event
	for {
		e, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			if _, ok := err.(*trace.FormatError); ok {
				break // a damaged recording: its readable events
			}
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	for _, e := range evs {
		specs := r.Meta().Types[e.Type].Fields
		idx := make([]int, len(specs)+1)
		for k := range idx {
			idx[k] = k // the last is past the type's fields
		}
		vals := make([]trace.Value, len(idx))
		d, derr := r.Details(e)
		ferr := r.DecodeFields(e, idx, vals)
		if (derr == nil) != (ferr == nil) {
			t.Fatalf("%s: event at %d: Details error %v, DecodeFields error %v", name, e.Time, derr, ferr)
		}
		for k, v := range vals {
			want := trace.Value{}
			if k < len(specs) {
				for _, f := range d.Fields {
					if f.Name == specs[k].Name {
						want = f.Value
						break
					}
				}
			}
			if v.Kind() != want.Kind() || v.String() != want.String() {
				t.Fatalf("%s: event at %d (%s), field %d: DecodeFields %v (%v), Details %v (%v)", name, e.Time, r.Meta().Types[e.Type].Name, k, v, v.Kind(), want, want.Kind())
			}
			checked++
		}
	}
	return checked
}
