package perf

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"viewer/trace"
	"viewer/trace/perf/perftest"
)

var update = flag.Bool("update", false, "rewrite testdata/perf fixtures")

// fixtures are the small files of testdata/perf, all made by Generate.
var fixtures = []struct {
	name string
	n    int
	opts perftest.GenerateOptions
}{
	{"generated-file.data", 24, perftest.GenerateOptions{SchedEvery: 3, RoundSize: 8}},
	{"generated-pipe.data", 24, perftest.GenerateOptions{Pipe: true, SchedEvery: 3, RoundSize: 8}},
	{"generated-be.data", 16, perftest.GenerateOptions{BigEndian: true, SchedEvery: 2, RoundSize: 6}},
	{"generated-zstd.data", 40, perftest.GenerateOptions{Compress: true, SchedEvery: 3, RoundSize: 10}},
	{"generated-zstd2.data", 40, perftest.GenerateOptions{Compress2: true, SchedEvery: 3, RoundSize: 10}},
}

const fixtureDir = "../../testdata/perf"

// TestFixtures checks that testdata/perf holds exactly what Generate makes
// (go test -run Fixtures -update rewrites them).
func TestFixtures(t *testing.T) {
	for _, fx := range fixtures {
		f := &memFile{}
		if err := perftest.Generate(f, fx.n, fx.opts); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(fixtureDir, fx.name)
		if *update {
			if err := os.WriteFile(path, f.b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.b) {
			t.Errorf("%s differs from Generate's output; rerun with -update", fx.name)
		}
	}
}

// FuzzReader reads arbitrary bytes as perf.data: no panic, hang or
// unbounded allocation; errors are *trace.FormatError; Details works on
// every event returned.
func FuzzReader(f *testing.F) {
	for _, fx := range fixtures {
		if b, err := os.ReadFile(filepath.Join(fixtureDir, fx.name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, order := range []Order{OrderRounds, OrderFullSort} {
			r, err := NewReader(bytes.NewReader(b), int64(len(b)), Options{Order: order})
			if err != nil {
				if _, ok := errors.AsType[*trace.FormatError](err); !ok {
					t.Fatalf("open: %v", err)
				}
				return
			}
			var prev trace.Time
			var payload []byte
			for n := 0; ; n++ {
				var e trace.Event
				var err error
				if order == OrderRounds { // as the parallel dump reads
					payload, err = r.ReadEventPayload(&e, payload[:0])
				} else {
					e, err = r.ReadEvent()
				}
				if err != nil {
					if _, ok := errors.AsType[*trace.FormatError](err); !ok && err.Error() != "EOF" {
						t.Fatalf("read: %v", err)
					}
					break
				}
				if n > 0 && e.Time < prev {
					t.Fatalf("event %d before its predecessor", n)
				}
				prev = e.Time
				d, derr := r.Details(e)
				if order == OrderRounds {
					checkPayloadDetails(t, r, e, payload, d, derr)
				}
			}
		}
	})
}

// checkPayloadDetails checks that ReadEventPayload gave the bytes Details
// decoded and that AppendPayloadDetails gives Details' fields, label and
// error.
func checkPayloadDetails(t *testing.T, r *Reader, e trace.Event, payload []byte, d trace.Details, derr error) {
	t.Helper()
	if derr == nil && !bytes.Equal(payload, d.Raw) {
		t.Fatalf("ReadEventPayload % x, Details raw % x", payload, d.Raw)
	}
	fields, label, err := r.AppendPayloadDetails(nil, nil, e, payload)
	if (err == nil) != (derr == nil) {
		t.Fatalf("AppendPayloadDetails error %v, Details %v", err, derr)
	}
	afields, alabel, aerr := r.AppendDetails(nil, nil, e)
	if (aerr == nil) != (derr == nil) || string(alabel) != string(label) || len(afields) != len(fields) {
		t.Fatalf("AppendDetails %d fields %q (%v), AppendPayloadDetails %d %q (%v)", len(afields), alabel, aerr, len(fields), label, err)
	}
	if err != nil {
		return
	}
	if string(label) != d.Label || len(fields) != len(d.Fields) {
		t.Fatalf("AppendPayloadDetails %d fields %q, Details %d %q", len(fields), label, len(d.Fields), d.Label)
	}
	for i := range fields {
		if fields[i].Name != d.Fields[i].Name || fields[i].Value.String() != d.Fields[i].Value.String() {
			t.Fatalf("field %d: %v, Details %v", i, fields[i], d.Fields[i])
		}
	}
}
