package perf

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"viewer/trace"
	"viewer/trace/perf/eventheader/eventheadertest"
	"viewer/trace/perf/perftest"
	"viewer/trace/perf/tracefs/tracefstest"
	"viewer/trace/tracetest"
)

// memFile is an in-memory io.WriteSeeker and io.ReaderAt.
type memFile struct {
	b   []byte
	off int64
}

func (m *memFile) Write(p []byte) (int, error) {
	if need := m.off + int64(len(p)); need > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, need-int64(len(m.b)))...)
	}
	copy(m.b[m.off:], p)
	m.off += int64(len(p))
	return len(p), nil
}

func (m *memFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		m.off = off
	case io.SeekCurrent:
		m.off += off
	case io.SeekEnd:
		m.off = int64(len(m.b)) + off
	}
	return m.off, nil
}

const testFormat = `name: test_tp
ID: 77
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int value;	offset:8;	size:4;	signed:1;
	field:__data_loc char[] name;	offset:12;	size:4;	signed:0;
	field:long word;	offset:16;	size:LONG;	signed:1;

print fmt: "value=%d name=%s", REC->value, __get_str(name)
`

// rawTest builds the raw data of test_tp.
func rawTest(big bool, long int, value int32, name string, word int64) []byte {
	bo := order([]byte(magicLE))
	if big {
		bo = order([]byte(magicBE))
	}
	b := make([]byte, 16+long)
	bo.PutUint16(b, 77)
	bo.PutUint32(b[8:], uint32(value))
	if long == 8 {
		bo.PutUint64(b[16:], uint64(word))
	} else {
		bo.PutUint32(b[16:], uint32(word))
	}
	bo.PutUint32(b[12:], uint32((len(name)+1)<<16|len(b)))
	return append(append(b, name...), 0)
}

// TestWriterRoundTrip writes files in every mode, byte order, attr size
// and sample layout the reader supports and reads them back.
func TestWriterRoundTrip(t *testing.T) {
	all := uint64(sampleIdentifier | sampleIP | sampleTID | sampleTime | sampleAddr | sampleID |
		sampleStreamID | sampleCPU | samplePeriod | sampleRead | sampleCallchain | sampleRaw)
	type layout struct {
		name      string
		st, rf    uint64
		read      []uint64
		callchain bool
	}
	layouts := []layout{
		{"all-bits", all, readTotalTimeEnabled | readID | readLost, []uint64{5, 6, 7, 8}, true},
		{"group-read", all, readGroup | readTotalTimeRunning | readID, []uint64{2, 9, 1, 100, 2, 200}, true},
		{"id-not-identifier", all &^ sampleIdentifier, 0, []uint64{3}, false},
		{"perf-default", sampleIdentifier | sampleIP | sampleTID | sampleTime | sampleCPU | samplePeriod | sampleRaw, 0, nil, false},
	}
	for _, pipe := range []bool{false, true} {
		for _, big := range []bool{false, true} {
			for _, asz := range []int{64, 72, 80, 96, 104, 112, 120, 128, 136, 200} {
				for _, lo := range layouts {
					for _, compress := range []bool{false, true} {
						for _, long := range []int{8, 4} {
							if long == 4 && (asz != 136 || compress) {
								continue
							}
							name := strings.Join([]string{map[bool]string{false: "file", true: "pipe"}[pipe], map[bool]string{false: "le", true: "be"}[big], itoa(uint64(asz)), lo.name, map[bool]string{false: "plain", true: "zstd"}[compress], "long" + itoa(uint64(long))}, "/")
							t.Run(name, func(t *testing.T) {
								roundTrip(t, pipe, big, asz, long, lo.st, lo.rf, lo.read, lo.callchain, compress)
							})
						}
					}
				}
			}
		}
	}
}

func roundTrip(t *testing.T, pipe, big bool, asz, long int, st, rf uint64, read []uint64, callchain, compress bool) {
	f := &memFile{}
	tp := "Prov_L4K1f"
	formats := []tracefstest.Format{
		{System: "test", Text: strings.ReplaceAll(testFormat, "LONG", itoa(uint64(long)))},
		{System: "user_events", Text: perftest.EventHeaderFormat(tp, 78)},
	}
	wr, err := perftest.NewWriter(f, perftest.WriterOptions{
		Pipe: pipe, BigEndian: big, AttrSize: asz, LongSize: long, Compress: compress,
		TracingHeaderSize: map[bool]int{false: 12, true: 16}[big],
		Formats:           formats,
		Attrs: []perftest.Attr{
			{Name: "test:test_tp", Type: attrTracepoint, Config: 77, SampleType: st, ReadFormat: rf, SampleIDAll: true, ClockID: 1, IDs: []uint64{7, 8}},
			{Name: "user_events:" + tp, Type: attrTracepoint, Config: 78, SampleType: st, ReadFormat: rf, SampleIDAll: true, ClockID: 1, IDs: []uint64{9}},
		},
		Hostname: "host", Cmdline: "perf record", WallNS: 2e18, ClockNS: 1e9,
	})
	if err != nil {
		t.Fatal(err)
	}
	wr.Comm(10, 10, "main", 1)
	wr.Fork(10, 1, 11, 10, 2)
	wr.Comm(10, 11, "worker", 3)
	wr.Mmap2(10, 10, 0x1000, 0x2000, "/bin/x")
	var cc []uint64
	if callchain {
		cc = []uint64{contextMax + 3968, 0x401000, 0x402000}
	}
	act := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	ehRaw := func(i int) []byte {
		raw := rawTest(big, long, 0, "", 0)[:8]
		return eventheadertest.AppendEvent(raw, eventheadertest.EventDef{
			Header: eventheadertest.Header{Level: 4, ID: 5, Version: 2, Opcode: 1, Tag: 0x33}, Name: "Ev", BigEndian: big,
			Activity: act, Related: act,
			Fields:  []eventheadertest.FieldDef{{Name: "n", Encoding: eventheadertest.EncValue32, Format: eventheadertest.FmtSignedInt}},
			Payload: bytesOf(big, uint32(i)),
		})
	}
	// Two rounds; the second round's first sample belongs before the
	// first round's tail.
	times := []uint64{1000, 3000, 2000, 5000, 2500, 6000}
	for i, tm := range times {
		s := perftest.Sample{Attr: i % 2, PID: 10, TID: 10 + int32(i%2), Time: tm, CPU: uint32(i % 3), Period: 1, IP: 0x400000 + uint64(i),
			Addr: 0xdead, StreamID: 99, Read: read, Callchain: cc}
		if i%2 == 0 {
			s.Raw = rawTest(big, long, int32(-i), "name"+itoa(uint64(i)), -int64(i)*1000)
		} else {
			s.Raw = ehRaw(i)
		}
		wr.Sample(s)
		if i == 2 {
			wr.Lost(7, 5, 2100)
			wr.FinishedRound()
		}
	}
	wr.LostSamples(8, 5500) // repeats the 5 of the LOST record, plus 3
	wr.Exit(10, 1, 11, 10, 7000)
	wr.FinishedRound()
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(f.b), int64(len(f.b)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := tracetest.Check(t, r, true)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	m := r.Meta()
	if len(res.Events) != len(times) {
		t.Fatalf("%d events, want %d", len(res.Events), len(times))
	}
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	for i, e := range res.Events {
		if uint64(e.Time) != sorted[i] {
			t.Errorf("event %d at %d, want %d", i, e.Time, sorted[i])
		}
		d, err := r.Details(e)
		if err != nil {
			t.Fatal(err)
		}
		et := m.Types[e.Type]
		tr := m.Tracks[e.Track]
		orig := slices.Index(times, uint64(e.Time))
		if int(e.CPU) != orig%3 || tr.PID != 10 || tr.TID != 10+int64(orig%2) {
			t.Errorf("event %d: cpu %d pid %d tid %d", i, e.CPU, tr.PID, tr.TID)
		}
		// Tracks are "comm tid"; the forked thread keeps the name it
		// inherited from its parent before its own COMM.
		wantName := map[int64]string{10: "main 10", 11: "worker 11"}[tr.TID]
		wantNames := map[int64][]string{11: {"main 11"}}[tr.TID]
		if tr.Name != wantName || !slices.Equal(tr.Names, wantNames) || m.Tracks[tr.Parent].Kind != trace.TrackProcess || m.Tracks[tr.Parent].PID != 10 || m.Tracks[tr.Parent].Name != "main (pid 10)" {
			t.Errorf("event %d: track %+v parent %+v", i, tr, m.Tracks[tr.Parent])
		}
		if callchain {
			if got := r.Stack(e.Stack); !slices.Equal(got, []uint64{0x401000, 0x402000}) {
				t.Errorf("event %d: stack %x", i, got)
			}
		}
		var got string
		for _, f := range d.Fields {
			got += f.Name + "=" + f.Value.String() + " "
		}
		var want string
		if orig%2 == 0 {
			want = "value=" + itoaSigned(-orig) + " name=name" + itoa(uint64(orig)) + " word=" + itoaSigned(-orig*1000) + " "
			if et.Provider != "test" || et.Name != "test_tp" || et.ID != 77 || !strings.HasPrefix(et.Message, `"value=%d`) {
				t.Errorf("event %d: type %+v", i, et)
			}
		} else {
			want = "n=" + itoa(uint64(orig)) + " "
			if et.Provider != "Prov" || et.Name != "Ev" || et.ID != 5 || et.Version != 2 || et.Level != 4 || et.Keywords != 0x1f || et.Opcode != 1 || r.Tag(e.Type) != 0x33 {
				t.Errorf("event %d: type %+v", i, et)
			}
			l := r.Labels(e.Labels)
			if len(l) != 2 || l[0].Key != "ActivityId" || l[0].Value.String() != "01020304-0506-0708-090a-0b0c0d0e0f10" || l[1].Key != "RelatedActivityId" {
				t.Errorf("event %d: labels %+v", i, l)
			}
		}
		if got != want {
			t.Errorf("event %d: fields %q, want %q", i, got, want)
		}
	}
	var lost int64
	for _, g := range m.Lost {
		lost += g.Count
	}
	if lost != 8 || len(m.Lost) != 2 || (st&sampleTime != 0 && m.Lost[0].Time != 2100) {
		t.Errorf("lost %+v", m.Lost)
	}
	if len(m.Markers) < 2 || m.Clock.Wall.UnixNano() != 2e18-1e9 {
		t.Errorf("markers %d, wall %v", len(m.Markers), m.Clock.Wall)
	}
	if m.Has&(trace.HasLevel|trace.HasCPU|trace.HasProvider) != trace.HasLevel|trace.HasCPU|trace.HasProvider {
		t.Errorf("has %b", m.Has)
	}
}

func bytesOf(big bool, v uint32) []byte {
	if big {
		return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	}
	return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}
}

func itoaSigned(v int) string {
	if v < 0 {
		return "-" + itoa(uint64(-v))
	}
	return itoa(uint64(v))
}

// TestGenerate reads generated files of every mode and checks counts, order
// and that every event decodes.
func TestGenerate(t *testing.T) {
	for _, o := range []perftest.GenerateOptions{{}, {Pipe: true}, {BigEndian: true, SchedEvery: 4}, {Compress: true, SchedEvery: 3}, {Pipe: true, Compress: true}, {Compress2: true, SchedEvery: 3}, {Pipe: true, BigEndian: true, Compress2: true}} {
		f := &memFile{}
		if err := perftest.Generate(f, 5000, o); err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(bytes.NewReader(f.b), int64(len(f.b)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		res := tracetest.Check(t, r, true)
		if res.Err != nil || len(res.Events) != 5000 || r.inversions != 0 {
			t.Fatalf("%+v: %d events, err %v, %d inversions", o, len(res.Events), res.Err, r.inversions)
		}
		for _, e := range res.Events {
			d, err := r.Details(e)
			if err != nil || len(d.Fields) == 0 {
				t.Fatalf("%+v: %v %+v", o, err, d)
			}
		}
	}
}

// TestTruncated cuts files at every 97th byte: the reader returns the
// events before the cut, then a *trace.FormatError (never a panic). A
// pipe-mode file cut at a record boundary is indistinguishable from a
// complete one; a file-mode file knows its data size.
func TestTruncated(t *testing.T) {
	for _, o := range []perftest.GenerateOptions{{}, {Pipe: true}, {BigEndian: true}, {Compress: true}, {Pipe: true, Compress: true}, {Compress2: true}} {
		o.SchedEvery, o.RoundSize = 2, 50
		truncated(t, o)
	}
}

func truncated(t *testing.T, o perftest.GenerateOptions) {
	pipe := o.Pipe
	f := &memFile{}
	if err := perftest.Generate(f, 300, o); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(f.b); n += 97 {
		r, err := NewReader(bytes.NewReader(f.b[:n]), int64(n), Options{})
		if err != nil {
			if _, ok := errors.AsType[*trace.FormatError](err); !ok {
				t.Fatalf("cut at %d: %v", n, err)
			}
			continue
		}
		res := tracetest.Check(t, r, false)
		if res.Err == nil && !pipe {
			t.Errorf("cut at %d of %d: no error", n, len(f.b))
		}
	}
}

// TestNoEventDesc: without EVENT_DESC (LinuxTracepoints' own collector
// omits it) event names come from the tracefs formats.
func TestNoEventDesc(t *testing.T) {
	f := &memFile{}
	st := uint64(sampleIdentifier | sampleTID | sampleTime | sampleRaw)
	wr, err := perftest.NewWriter(f, perftest.WriterOptions{NoEventDesc: true,
		Formats: []tracefstest.Format{{System: "sched", Text: perftest.SchedSwitchFormat}},
		Attrs:   []perftest.Attr{{Type: attrTracepoint, Config: 372, SampleType: st, IDs: []uint64{3}}}})
	if err != nil {
		t.Fatal(err)
	}
	wr.Sample(perftest.Sample{PID: 1, TID: 1, Time: 5, Raw: rawTest(false, 8, 0, "", 0)[:8]})
	wr.Sample(perftest.Sample{PID: 1, TID: 1, Time: 6, Raw: []byte{1, 2}})
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(f.b), int64(len(f.b)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := tracetest.Check(t, r, true)
	if len(res.Events) != 2 {
		t.Fatalf("%d events", len(res.Events))
	}
	et := r.Meta().Types[res.Events[0].Type]
	if et.Provider != "sched" || et.Name != "sched_switch" || et.ID != 372 {
		t.Errorf("type %+v", et)
	}
	// A raw sample shorter than its format: fields decode to null, no error.
	d, err := r.Details(res.Events[1])
	if err != nil || len(d.Fields) != 7 || d.Fields[0].Value.Kind() != trace.KindBad {
		t.Errorf("short sample: %v %+v", err, d.Fields)
	}
}

// TestSortKeys checks the run-merging sort against slices.Sort on random
// inputs with few and many runs.
func TestSortKeys(t *testing.T) {
	seed := uint64(1)
	rnd := func(n uint64) uint64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return (seed >> 33) % n
	}
	var scratch []sortKey
	for iter := 0; iter < 500; iter++ {
		n := int(rnd(300))
		runs := int(rnd(100)) + 1
		keys := make([]sortKey, n)
		for i := range keys {
			if rnd(uint64(max(n/runs, 1))) == 0 {
				keys[i].t = trace.Time(rnd(50))
			} else if i > 0 {
				keys[i].t = keys[i-1].t + trace.Time(rnd(3))
			}
			keys[i].i = int32(i)
		}
		want := slices.Clone(keys)
		slices.SortFunc(want, cmpKey)
		scratch = sortKeys(keys, scratch)
		if !slices.Equal(keys, want) {
			t.Fatalf("iteration %d (%d keys, ~%d runs): not sorted", iter, n, runs)
		}
	}
}

// TestConcurrentDetails decodes every event from several goroutines at
// once after reading (run with -race) and checks they agree.
func TestConcurrentDetails(t *testing.T) {
	for _, o := range []perftest.GenerateOptions{{SchedEvery: 3}, {Compress: true}} {
		f := &memFile{}
		if err := perftest.Generate(f, 3000, o); err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(bytes.NewReader(f.b), int64(len(f.b)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		res := tracetest.Check(t, r, true)
		tracetest.CheckDetailsConcurrent(t, r, res.Events)
	}
}

// TestHostileHeader: sizes in the file header that point outside the file
// or ask for absurd allocations are errors naming the byte offset.
func TestHostileHeader(t *testing.T) {
	f := &memFile{}
	if err := perftest.Generate(f, 10, perftest.GenerateOptions{}); err != nil {
		t.Fatal(err)
	}
	put := func(off int, v uint64) []byte {
		b := bytes.Clone(f.b)
		order(b[:8]).PutUint64(b[off:], v)
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		off  int64
	}{
		{"header size", put(8, 99), 8},
		{"attr_size", put(16, 1<<40), 16},
		{"attrs offset", put(24, 1<<62), 24},
		{"attrs size", put(32, 1<<62), 24},
		{"magic", append([]byte("PERFILE3"), f.b[8:]...), 0},
	} {
		_, err := NewReader(bytes.NewReader(tc.b), int64(len(tc.b)), Options{})
		fe, ok := errors.AsType[*trace.FormatError](err)
		if !ok || fe.Off != tc.off {
			t.Errorf("%s: %v, want a FormatError at %d", tc.name, err, tc.off)
		}
	}
	// A data size past the end of the file is read as a file cut short:
	// it opens, and reading ends in an error after the events present
	// (here the feature sections, read as records, are damage).
	b := put(48, 1<<62)
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), Options{})
	if err != nil {
		t.Fatalf("data size past the end: %v, want a reader", err)
	}
	if res := tracetest.Check(t, r, true); res.Err == nil || len(res.Events) != 10 {
		t.Errorf("data size past the end: %d events, %v; want 10 and an error", len(res.Events), res.Err)
	}
}

// TestLabel: the label renders values as Value.String does.
func TestLabel(t *testing.T) {
	v := trace.StructValue([]trace.Field{{Name: "a", Value: trace.ArrayValue([]trace.Value{trace.IntValue(-1), trace.HexValue(255)})},
		{Name: "b", Value: trace.BoolValue(true)}, {Name: "c", Value: trace.FloatValue(1.5)}, {Name: "d", Value: trace.StringValue("x")}})
	fields := []trace.Field{{Name: "s", Value: v}, {Name: "u", Value: trace.UintValue(7)}}
	if got, want := Label(fields), "s="+v.String()+" u=7"; got != want {
		t.Errorf("Label = %q, want %q", got, want)
	}
	long := []trace.Field{{Name: "s", Value: trace.StringValue(strings.Repeat("é", 200))}}
	if got := Label(long); len(got) > maxLabel+len("…") || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Errorf("long label %q", got)
	}
}

// TestDamagedCompressed: a corrupted zstd stream yields the events before
// the damage, one notice, and no error for the uncompressed rest.
func TestDamagedCompressed(t *testing.T) {
	f := &memFile{}
	if err := perftest.Generate(f, 400, perftest.GenerateOptions{Compress: true, RoundSize: 50}); err != nil {
		t.Fatal(err)
	}
	// Find the second COMPRESSED record and scramble its payload.
	b := bytes.Clone(f.b)
	bo := order(b[:8])
	off, end := int(bo.Uint64(b[40:])), int(bo.Uint64(b[40:])+bo.Uint64(b[48:]))
	seen := 0
	for off < end {
		typ, size := bo.Uint32(b[off:]), int(bo.Uint16(b[off+6:]))
		if typ == recCompressed {
			if seen++; seen == 2 {
				for i := off + 8; i < off+size; i++ {
					b[i] ^= 0x5a
				}
				break
			}
		}
		off += size
	}
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := tracetest.Check(t, r, false)
	n := 0
	for _, s := range r.Meta().Notices {
		if strings.Contains(s, "compressed data") {
			n++
		}
	}
	if res.Err != nil || n != 1 {
		t.Errorf("err %v, %d notices: %q", res.Err, n, r.Meta().Notices)
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// TestCallchainContexts: the PERF_CONTEXT_* markers of a call chain are
// not frames; each address is known by the context the marker before it
// announced (FrameModule), and an address no marker announced by none.
func TestCallchainContexts(t *testing.T) {
	const (
		kernel = ^uint64(0) - 127 // PERF_CONTEXT_KERNEL (-128)
		user   = ^uint64(0) - 511 // PERF_CONTEXT_USER (-512)
		hv     = ^uint64(0) - 31  // PERF_CONTEXT_HV (-32)
	)
	f := &memFile{}
	st := uint64(sampleIdentifier | sampleTID | sampleTime | sampleCallchain | sampleRaw)
	wr, err := perftest.NewWriter(f, perftest.WriterOptions{
		Formats: []tracefstest.Format{{System: "sched", Text: perftest.SchedSwitchFormat}},
		Attrs:   []perftest.Attr{{Name: "sched:sched_switch", Type: attrTracepoint, Config: 372, SampleType: st, IDs: []uint64{3}}}})
	if err != nil {
		t.Fatal(err)
	}
	raw := rawTest(false, 8, 0, "", 0)[:8]
	wr.Sample(perftest.Sample{PID: 1, TID: 1, Time: 5, Raw: raw,
		Callchain: []uint64{kernel, 0xffffffff81000010, 0xffffffff81000020, user, 0x401000, 0x401100}})
	wr.Sample(perftest.Sample{PID: 1, TID: 1, Time: 6, Raw: raw,
		Callchain: []uint64{hv, 0xffff800000000001, 0x7000}}) // an unknown marker would reset, HV names
	wr.Sample(perftest.Sample{PID: 1, TID: 1, Time: 7, Raw: raw, Callchain: []uint64{0x9000}})
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(f.b), int64(len(f.b)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := tracetest.Check(t, r, true)
	if len(res.Events) != 3 {
		t.Fatalf("%d events", len(res.Events))
	}
	want := [][]string{
		{"[kernel.kallsyms]", "[kernel.kallsyms]", "[user]", "[user]"},
		{"[hypervisor]", "[hypervisor]"},
		{""},
	}
	for i, e := range res.Events {
		addrs := r.Stack(e.Stack)
		if len(addrs) != len(want[i]) {
			t.Fatalf("sample %d: %d frames %x, want %d (markers are not frames)", i, len(addrs), addrs, len(want[i]))
		}
		for j, a := range addrs {
			if m, _ := r.FrameModule(a); m != want[i][j] {
				t.Errorf("sample %d frame %d (%#x): module %q, want %q", i, j, a, m, want[i][j])
			}
		}
	}
}
