package nettrace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"viewer/trace"
	"viewer/trace/tracetest"
)

var update = flag.Bool("update", false, "rewrite testdata/nettrace fixtures")

const fixtureDir = "../../testdata/nettrace"

// fixtures are the files in testdata/nettrace, each made with package
// nettracetest.
func fixtures(t testing.TB) map[string][]byte {
	_, all := allFeatures(t)
	v4, _ := v4Sample()
	return map[string][]byte{
		"v4-uncompressed.nettrace":   v4,
		"v6-all-features.nettrace":   all,
		"v6-generated-3000.nettrace": generate(t, 3000, 8),
	}
}

// TestFixtures checks that testdata/nettrace holds exactly what the writer
// makes today (run with -update to rewrite it) and that each fixture reads
// back without error.
func TestFixtures(t *testing.T) {
	for name, b := range fixtures(t) {
		path := filepath.Join(fixtureDir, name)
		if *update {
			if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestFixtures -update)", err)
		}
		if !bytes.Equal(old, b) {
			t.Errorf("%s differs from what the writer makes now (run go test -run TestFixtures -update)", name)
		}
		if _, res := readAll(t, b); res.Err != nil {
			t.Errorf("%s: %v", name, res.Err)
		}
	}
}

// FuzzReader feeds arbitrary bytes to the reader: no panic, no hang, every
// error a *trace.FormatError (or ErrUnsupported from the header), every
// event valid, Details safe on every event.
func FuzzReader(f *testing.F) {
	entries, _ := os.ReadDir(fixtureDir)
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(fixtureDir, e.Name())); err == nil {
			f.Add(b)
		}
	}
	if _, err := os.Stat(filepath.Join("..", "..", "..", "shared", "realdata", "nettrace")); err == nil {
		dir := tracetest.RealData(f, "nettrace")
		for _, name := range []string{
			"perfview/eventpipe-dotnetcore2.1-linux-x64-tracelogging.netperf",
			"perfview/eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace",
		} {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if _, ok := errors.AsType[*trace.FormatError](err); !ok {
				t.Fatalf("open: %v is not a *trace.FormatError", err)
			}
			return
		}
		var prev trace.Time
		for n := 0; ; n++ {
			e, err := r.ReadEvent()
			if err == io.EOF {
				break
			}
			if err != nil {
				if _, ok := errors.AsType[*trace.FormatError](err); !ok {
					t.Fatalf("event %d: %v is not a *trace.FormatError", n, err)
				}
				if _, err2 := r.ReadEvent(); err2 != err {
					t.Fatalf("error not sticky: %v then %v", err, err2)
				}
				break
			}
			if n > len(b) {
				t.Fatalf("more events (%d) than bytes (%d)", n, len(b))
			}
			if err := tracetest.Validate(r.Meta(), r, e, n, prev); err != nil {
				t.Fatal(err)
			}
			prev = e.Time
			d, err := r.Details(e)
			if err != nil {
				t.Fatalf("details: %v", err)
			}
			checkDecoders(t, r, e, d)
		}
	})
}

// checkDecoders checks that AppendDetails and AppendPayloadDetails give
// what Details gave, and that ReadFields reads the values Details decoded
// for some of the fields (and none for a name no field has).
func checkDecoders(t *testing.T, r *Reader, e trace.Event, d trace.Details) {
	t.Helper()
	text := func(fields []trace.Field, label string) string {
		var sb strings.Builder
		for _, f := range fields {
			sb.WriteString(f.Name + "=" + string(rune('a'+f.Value.Kind())) + ":" + f.Value.String() + ";")
		}
		return sb.String() + "|" + label
	}
	want := text(d.Fields, d.Label)
	if int(e.Type) < len(r.types) {
		// the label's precomputed keys are the fields' names, and a
		// flat plan decodes as the schema walk does
		ti := &r.types[e.Type]
		if l := string(appendLabel(nil, ti.name, d.Fields, nil)); l != d.Label {
			t.Fatalf("label %q, from the fields' own names %q", d.Label, l)
		}
		fs := ti.appendDecoded(nil, d.Raw, r.meta.PointerSize, &arena{})
		if got := text(fs, string(appendLabel(nil, ti.name, fs, nil))); got != want {
			t.Fatalf("schema walk %q, Details %q (flat plan: %v)", got, want, ti.flat != nil)
		}
	}
	fields, label, err := r.AppendDetails([]trace.Field{{Name: "before"}}, []byte("x"), e)
	if err != nil || len(fields) == 0 || fields[0].Name != "before" || len(label) == 0 || label[0] != 'x' {
		t.Fatalf("AppendDetails kept no prefix: %v", err)
	}
	if got := text(fields[1:], string(label[1:])); got != want {
		t.Fatalf("AppendDetails %q, Details %q", got, want)
	}
	fields, label, err = r.AppendPayloadDetails(nil, nil, e, d.Raw)
	if got := text(fields, string(label)); err != nil || got != want {
		t.Fatalf("AppendPayloadDetails %q (%v), Details %q", got, err, want)
	}
	var names []string
	for i, f := range d.Fields {
		if i%2 == 0 && f.Name != "" && !slices.Contains(names, f.Name) {
			names = append(names, f.Name)
		}
	}
	names = append(names, "\x00no such field")
	vals := make([]trace.Value, len(names))
	if !r.ReadFields(e, names, vals) {
		t.Fatal("ReadFields failed where Details did not")
	}
	for i, n := range names {
		var w trace.Value
		for _, f := range d.Fields {
			if f.Name == n {
				w = f.Value
				break
			}
		}
		if vals[i].Kind() != w.Kind() || vals[i].String() != w.String() {
			t.Fatalf("ReadFields %s = %v, Details %v", n, vals[i], w)
		}
	}
}

// FuzzUserEvents feeds arbitrary metadata and payloads to the .NET
// user_events decoder (what perf.data's DotNET tracepoints carry): no
// panic or unbounded allocation, and decoding a payload never reads past it.
func FuzzUserEvents(f *testing.F) {
	md1, md2 := v4Metadata()
	p1 := append([]byte{7}, utf16z("hi")...)
	p2 := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint16(nil, 2), 5), 0xffffffff)
	f.Add(md1[4:], p1, "", uint16(0))
	f.Add(md2[4:], p2, "", uint16(0))
	// Runtime events carry no metadata: the tracepoint names the provider.
	gcStart := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 3), 2), 1)
	f.Add([]byte(nil), gcStart, "DotNETRuntime_L4K1", uint16(1))
	f.Add([]byte(nil), p2, "DotNETRuntimeRundown_L5K0", uint16(144))
	f.Fuzz(func(t *testing.T, meta, payload []byte, tracepoint string, id uint16) {
		u := NewUserEvents()
		var schema PayloadSchema
		if tracepoint != "" {
			if _, s, ok := u.Native(tracepoint, id); ok {
				schema = s
			}
		} else if _, s, err := u.ParseMetadata(meta); err == nil {
			schema = s
		}
		if schema == nil {
			return
		}
		fields, _ := schema.DecodePayload(payload, nil)
		var text strings.Builder
		for _, fd := range fields {
			text.WriteString(fd.Value.String())
		}
		// UTF-16 text grows by at most half in UTF-8; numbers print in at
		// most 20 digits per byte-wide value, plus room for the names.
		if max := 24*len(payload) + 4096; text.Len() > max {
			t.Fatalf("%d fields print %d bytes from a %d-byte payload", len(fields), text.Len(), len(payload))
		}
	})
}
