package perf

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/perf/perftest"
	"viewer/trace/tracetest"
)

var le = binary.LittleEndian

// readAll reads a whole file made in memory and returns its reader and
// events; a read error fails the test.
func readAll(t *testing.T, b []byte) (*Reader, []trace.Event) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := tracetest.Check(t, r, true)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return r, res.Events
}

// TestCompressed2Twin: a file whose samples are in COMPRESSED2 records
// reads the same events, with the same decoded fields, as its
// uncompressed and COMPRESSED twins (file and pipe mode, both byte
// orders).
func TestCompressed2Twin(t *testing.T) {
	const n = 3000
	for _, base := range []perftest.GenerateOptions{{}, {Pipe: true}, {BigEndian: true}, {Pipe: true, BigEndian: true}} {
		base.SchedEvery, base.RoundSize = 3, 250
		var files [3][]byte
		for i, mod := range []func(*perftest.GenerateOptions){
			func(*perftest.GenerateOptions) {},
			func(o *perftest.GenerateOptions) { o.Compress = true },
			func(o *perftest.GenerateOptions) { o.Compress2 = true },
		} {
			o := base
			mod(&o)
			f := &memFile{}
			if err := perftest.Generate(f, n, o); err != nil {
				t.Fatal(err)
			}
			files[i] = f.b
		}
		plain, pev := readAll(t, files[0])
		if len(pev) != n {
			t.Fatalf("%+v: uncompressed twin has %d events, want %d", base, len(pev), n)
		}
		for i, want := range []uint32{recCompressed, recCompressed2} {
			r, ev := readAll(t, files[i+1])
			if r.recs.count(want) == 0 || r.recs.count(recCompressed+recCompressed2-want) != 0 {
				t.Fatalf("%+v: record counts %v; want only %s", base, r.recs.census(), RecordName(want))
			}
			if len(ev) != len(pev) {
				t.Fatalf("%+v %s: %d events, uncompressed twin %d", base, RecordName(want), len(ev), len(pev))
			}
			for j := range ev {
				a, b := ev[j], pev[j]
				if a.Time != b.Time || a.CPU != b.CPU || r.Meta().Types[a.Type].Name != plain.Meta().Types[b.Type].Name ||
					r.Meta().Tracks[a.Track].TID != plain.Meta().Tracks[b.Track].TID {
					t.Fatalf("%+v %s: event %d = %+v, twin %+v", base, RecordName(want), j, a, b)
				}
				da, err := r.Details(a)
				if err != nil {
					t.Fatal(err)
				}
				db, err := plain.Details(b)
				if err != nil {
					t.Fatal(err)
				}
				if da.Label != db.Label || !bytes.Equal(da.Raw, db.Raw) {
					t.Fatalf("%+v %s: event %d details %q, twin %q", base, RecordName(want), j, da.Label, db.Label)
				}
			}
			for _, s := range r.Meta().Notices {
				if strings.Contains(s, "unknown") {
					t.Errorf("%+v: notice %q", base, s)
				}
			}
		}
	}
}

// TestCompressed2Damaged: a COMPRESSED2 record whose data_size runs past
// its record stops reading with a *trace.FormatError, not silently.
func TestCompressed2Damaged(t *testing.T) {
	f := &memFile{}
	if err := perftest.Generate(f, 200, perftest.GenerateOptions{Compress2: true, RoundSize: 50}); err != nil {
		t.Fatal(err)
	}
	b := f.b
	data := int64(le.Uint64(b[40:]))
	end := data + int64(le.Uint64(b[48:]))
	damaged := false
	for off := data; off < end; {
		size := int64(le.Uint16(b[off+6:]))
		if le.Uint32(b[off:]) == recCompressed2 {
			le.PutUint64(b[off+8:], uint64(size)) // 16 bytes too many
			damaged = true
			break
		}
		off += size
	}
	if !damaged {
		t.Fatal("no COMPRESSED2 record")
	}
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := tracetest.Check(t, r, false)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "data_size") {
		t.Errorf("err %v; want a data_size error", res.Err)
	}
}

// TestUnknownRecords: records the reader does not apply, of known and of
// unknown types, in the file and inside compressed data, are counted and
// reported in the notices, which `viewer stats` prints.
func TestUnknownRecords(t *testing.T) {
	for _, compress := range []bool{false, true} {
		f := &memFile{}
		wr, err := perftest.NewWriter(f, perftest.WriterOptions{
			Compress2: compress,
			Attrs: []perftest.Attr{{Name: "test:test_tp", Type: attrTracepoint, Config: 77,
				SampleType: sampleTID | sampleTime | sampleRaw, IDs: []uint64{1}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		wr.Comm(5, 5, "app", 1)
		for i := range 3 {
			wr.Record(99, 0, make([]byte, 8*i))
		}
		wr.Record(5, 0, make([]byte, 24)) // THROTTLE: known, not shown
		wr.Record(40, 0, nil)             // unknown, below 64: compressed when compression is on
		wr.Sample(perftest.Sample{PID: 5, TID: 5, Time: 10, Raw: make([]byte, 8)})
		wr.FinishedRound()
		if err := wr.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(bytes.NewReader(f.b), int64(len(f.b)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := export.Collect(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"perf.data: 3 records of unknown type 99 skipped",
			"perf.data: 1 records of unknown type 40 skipped",
			"perf.data: records the viewer does not show were skipped: 1 THROTTLE",
		} {
			if !slices.Contains(st.Notices, want) {
				t.Errorf("compress %v: stats notices %q lack %q", compress, st.Notices, want)
			}
		}
		if st.Events != 1 || st.Truncated {
			t.Errorf("compress %v: %d events, truncated %v", compress, st.Events, st.Truncated)
		}
		var census string
		for _, kv := range r.Meta().Info {
			if kv.Key == "records" {
				census = kv.Value
			}
		}
		if !strings.Contains(census, "3 type 99") || !strings.Contains(census, "1 SAMPLE") {
			t.Errorf("compress %v: records census %q", compress, census)
		}
	}
}

// TestRecordNames: the spec table names every type of current perf, and
// no name twice.
func TestRecordNames(t *testing.T) {
	seen := map[string]uint32{}
	for typ := uint32(0); typ < 128; typ++ {
		name := RecordName(typ)
		known := typ >= 1 && typ <= 22 || typ >= 64 && typ <= 86
		if (name != "") != known {
			t.Errorf("type %d: name %q", typ, name)
		}
		if prev, ok := seen[name]; ok && name != "" {
			t.Errorf("types %d and %d are both %s", prev, typ, name)
		}
		seen[name] = typ
	}
}

// TestPerfRecordCompressed2 records with the installed perf's -z and
// compares the number of samples with what perf script prints. perf
// before 6.16 writes COMPRESSED, not COMPRESSED2: the test then checks
// the COMPRESSED file the same way and skips, saying so. It skips when
// perf is missing or cannot record here (perf_event_paranoid, tracefs).
func TestPerfRecordCompressed2(t *testing.T) {
	if testing.Short() {
		t.Skip("records with perf")
	}
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf is not installed")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "z.data")
	rec := exec.Command(perf, "record", "-z", "-q", "-o", data, "-e", "sched:sched_switch,sched:sched_process_exec", "-a", "--", "sh", "-c", "ls / >/dev/null; sleep 0.1")
	if out, err := rec.CombinedOutput(); err != nil {
		t.Skipf("perf record -z cannot record here: %v: %s", err, bytes.TrimSpace(out))
	}
	script, err := exec.Command(perf, "script", "-i", data, "-F", "comm,tid,time,event", "--ns").Output()
	if err != nil {
		t.Skipf("perf script cannot read its own recording: %v", err)
	}
	lines := 0
	for _, l := range strings.Split(string(script), "\n") {
		if strings.TrimSpace(l) != "" {
			lines++
		}
	}
	r, _ := openFile(t, data, Options{})
	res := tracetest.Check(t, r, true)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	samples := len(res.Events)
	version, _ := exec.Command(perf, "--version").Output()
	kind := "COMPRESSED2"
	if r.recs.count(recCompressed2) == 0 {
		kind = "COMPRESSED"
		if r.recs.count(recCompressed) == 0 {
			t.Skipf("%s: perf record -z wrote no compressed records", bytes.TrimSpace(version))
		}
	}
	t.Logf("%s: %d %s records, %d samples, perf script %d lines", bytes.TrimSpace(version), r.recs.count(recCompressed)+r.recs.count(recCompressed2), kind, samples, lines)
	if samples != lines || lines == 0 {
		t.Fatalf("%s file: %d samples, perf script prints %d", kind, samples, lines)
	}
	if kind != "COMPRESSED2" {
		t.Skipf("%s writes COMPRESSED (81), not COMPRESSED2 (83; perf 6.16 and later): COMPRESSED checked (%d samples = perf script), COMPRESSED2 not", bytes.TrimSpace(version), samples)
	}
}

// TestTrackNamesDistinct: in every shared perf recording each track has a
// name and no two tracks share one (threads are "comm tid", processes
// "comm (pid N)"), and a thread that was renamed keeps its earlier names.
func TestTrackNamesDistinct(t *testing.T) {
	dir := tracetest.RealData(t, "perf")
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".data") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no .data files under %s", dir)
	}
	renamed := 0
	for _, name := range files {
		rel, _ := filepath.Rel(dir, name)
		r, _ := openFile(t, name, Options{})
		if res := tracetest.Check(t, r, false); res.Err != nil {
			t.Fatalf("%s: %v", rel, res.Err)
		}
		seen := map[string]int{}
		commUse := map[string]int{}
		fallback, shared := 0, 0
		for i, tr := range r.Meta().Tracks {
			if tr.Kind == trace.TrackThread {
				if c := r.comms[i]; c == "" {
					fallback++
				} else if commUse[c]++; commUse[c] == 2 {
					shared++
				}
			}
			if tr.Name == "" {
				t.Errorf("%s: track %d (%s pid %d tid %d) has no name", rel, i, tr.Kind, tr.PID, tr.TID)
			}
			if j, ok := seen[tr.Name]; ok {
				t.Errorf("%s: tracks %d and %d are both %q", rel, j, i, tr.Name)
			}
			seen[tr.Name] = i
			if len(tr.Names) > 0 {
				renamed++
				if renamed == 1 {
					t.Logf("%s: renamed track %q, earlier %q", rel, tr.Name, tr.Names)
				}
			}
		}
		t.Logf("%s: %d tracks, %d threads without COMM (\"tid N\"), %d comms shared by several threads", rel, len(r.Meta().Tracks), fallback, shared)
	}
	if renamed == 0 {
		t.Errorf("no renamed track in the shared recordings; sched_process_exec ones should have some")
	}
}

// TestTrackNames: "comm tid", "tid N" without a COMM, the inherited name
// of a forked thread and every rename kept in Names; the process is named
// after its main thread.
func TestTrackNames(t *testing.T) {
	f := &memFile{}
	wr, err := perftest.NewWriter(f, perftest.WriterOptions{
		Attrs: []perftest.Attr{{Name: "test:tp", Type: attrTracepoint, Config: 7,
			SampleType: sampleTID | sampleTime | sampleRaw, SampleIDAll: true, IDs: []uint64{1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wr.Comm(40, 40, "sh", 1)
	wr.Fork(41, 40, 41, 40, 2)
	wr.Comm(41, 41, "compile", 3) // exec
	wr.Comm(41, 41, "compile-x", 4)
	for i, tid := range []int32{40, 41, 42, 43} {
		wr.Sample(perftest.Sample{PID: 41, TID: tid, Time: uint64(10 + i), Raw: make([]byte, 8)})
	}
	wr.Comm(41, 42, "compile", 20)
	wr.Comm(41, 43, "compile", 21)
	wr.FinishedRound()
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	r, _ := readAll(t, f.b)
	got := map[string][]string{}
	for _, tr := range r.Meta().Tracks {
		got[tr.Name] = tr.Names
	}
	want := map[string][]string{
		"sh 40": nil, "sh (pid 40)": nil,
		"compile-x 41": {"sh 41", "compile 41"}, "compile-x (pid 41)": {"sh (pid 41)", "compile (pid 41)"},
		"compile 42": nil, "compile 43": nil,
	}
	if len(got) != len(want) {
		t.Errorf("tracks %q, want %q", got, want)
	}
	for name, names := range want {
		if g, ok := got[name]; !ok || !slices.Equal(g, names) {
			t.Errorf("track %q: names %q (present %v), want %q", name, g, ok, names)
		}
	}
}
