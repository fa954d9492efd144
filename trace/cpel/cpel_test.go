package cpel

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"viewer/symbols"
	"viewer/trace"
	"viewer/trace/cpel/cpeltest"
	"viewer/trace/export"
	"viewer/trace/tracetest"
)

var update = flag.Bool("update", false, "rewrite testdata/cpel fixtures")

// fixtures are the writer-made files in testdata/cpel.
var fixtures = map[string]func() *cpeltest.Writer{
	"symtab.cpel":      symtabFixture,
	"unsorted_le.cpel": unsortedFixture,
}

// symtabFixture has a symbol table and %k datum formats.
func symtabFixture() *cpeltest.Writer {
	w := &cpeltest.Writer{Date: 1700000000}
	t := w.StringTable("FileStrtab")
	w.Symbols(t, []symbols.Symbol{{Value: 0x401000, Name: "main"}, {Value: 0x402400, Name: "dispatch_node"}, {Value: 0x403800, Name: "ip4_lookup_inline"}})
	w.EventDefs(t, []cpeltest.EventDef{{Code: 1, Name: "FUNC/ENTER", Format: "%k"}, {Code: 2, Name: "FUNC/EXIT", Format: "from %k (0x%x)"}, {Code: 3, Name: "NAME", Format: "name=%s"}})
	w.TrackDefs(t, []cpeltest.TrackDef{{ID: 0, Format: "cpu %d"}})
	node := t.Add("ip4-input")
	w.EventList(t, 1e9, []cpeltest.Record{
		{Ticks: 100, Track: 0, Code: 1, Datum: 0x402468},
		{Ticks: 200, Track: 0, Code: 2, Datum: 0x402400},
		{Ticks: 300, Track: 0, Code: 1, Datum: 0x400000},
		{Ticks: 400, Track: 0, Code: 3, Datum: node},
		{Ticks: 500, Track: 0, Code: 1, Datum: 0x403801},
	})
	return w
}

// unsortedFixture is little-endian, has its string table after the
// sections that use it, two event sections with different clocks, one of
// them out of time order, and an undefined track and event code.
func unsortedFixture() *cpeltest.Writer {
	w := &cpeltest.Writer{Little: true, Date: 1700000000}
	t := cpeltest.NewStrtab("Late")
	w.EventDefs(t, []cpeltest.EventDef{{Code: 0, Name: "A", Format: "%d"}})
	w.TrackDefs(t, []cpeltest.TrackDef{{ID: 5, Format: "t%d"}})
	w.EventList(t, 2e9, []cpeltest.Record{{Ticks: 40, Track: 5, Datum: 1}, {Ticks: 20, Track: 5, Datum: 2}, {Ticks: 30, Track: 6, Code: 9, Datum: 3}})
	w.EventList(t, 1e6, []cpeltest.Record{{Ticks: 0, Track: 5, Datum: 4}, {Ticks: 1, Track: 5, Datum: 5}})
	w.AddStrtab(t)
	return w
}

func bytesOf(t testing.TB, w *cpeltest.Writer) []byte {
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFixtures checks that testdata/cpel holds what the writer makes
// (go test -update rewrites it).
func TestFixtures(t *testing.T) {
	for name, fix := range fixtures {
		path := filepath.Join("..", "..", "testdata", "cpel", name)
		b := bytesOf(t, fix())
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b) {
			t.Errorf("%s differs from the writer's output; run go test -update", path)
		}
	}
}

func openBytes(t testing.TB, b []byte) *Reader {
	t.Helper()
	if !Match(b) {
		t.Fatalf("Match = false")
	}
	r, err := Format{}.Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return r.(*Reader)
}

// TestSymbolLabels resolves %k against the fixture's symbol table.
func TestSymbolLabels(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "cpel", "symtab.cpel"))
	if err != nil {
		t.Fatal(err)
	}
	got := tracetest.Labels(t, openBytes(t, b))
	want := []string{
		"cpu 0 | FUNC/ENTER: dispatch_node+0x68",
		"cpu 0 | FUNC/EXIT: from dispatch_node (0x%!x(MISSING))", // one datum
		"cpu 0 | FUNC/ENTER: 0x400000",                           // below the first symbol
		"cpu 0 | NAME: name=ip4-input",                           // g2 crashes on this one
		"cpu 0 | FUNC/ENTER: ip4_lookup_inline+0x1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("labels\n got %q\nwant %q", got, want)
	}
}

// TestUnsorted reads the little-endian fixture whose string table comes
// last and whose first event section is out of order.
func TestUnsorted(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "cpel", "unsorted_le.cpel"))
	if err != nil {
		t.Fatal(err)
	}
	r := openBytes(t, b)
	got := tracetest.Labels(t, r)
	// Section 1 at 2 GHz: ticks 20, 30, 40 → 10, 15, 20 ns. Section 2 at
	// 1 MHz: ticks 0, 1 → 0, 1000 ns.
	want := []string{"t5 | A: 4", "t5 | A: 2", "track 6 | E9: 0x00000003", "t5 | A: 1", "t5 | A: 5"}
	if !slices.Equal(got, want) {
		t.Errorf("labels\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(strings.Join(r.Meta().Notices, "\n"), "not in time order") {
		t.Errorf("notices %q", r.Meta().Notices)
	}
}

// TestRoundTrip writes random files (random section order, both byte
// orders, several event sections with their own clocks, some unsorted)
// and compares what the reader returns with a brute-force merge.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	clocks := []uint32{1e9, 2.4e9, 1e6, 3124099, 1}
	for iter := range 100 {
		w := &cpeltest.Writer{Little: rng.IntN(2) == 0}
		tabs := []*cpeltest.Strtab{w.StringTable("A"), w.StringTable("B")}
		var defs []cpeltest.EventDef
		for c := range uint32(5) {
			defs = append(defs, cpeltest.EventDef{Code: c * 3, Name: "ev%d", Format: []string{"%u", "%s", "", "0x%08x", " "}[c]})
		}
		w.EventDefs(tabs[0], defs)
		w.TrackDefs(tabs[1], []cpeltest.TrackDef{{ID: 1, Format: "one"}, {ID: 70000, Format: "big %d"}})
		type want struct {
			time             *big.Int
			sec, idx         int
			track, code, dat uint32
		}
		var all []want
		nsec := 1 + rng.IntN(4)
		for s := range nsec {
			hz := clocks[rng.IntN(len(clocks))]
			n := rng.IntN(50)
			recs := make([]cpeltest.Record, n)
			tick := rng.Uint64N(1 << 40)
			for i := range recs {
				if rng.IntN(10) == 0 {
					tick -= min(tick, rng.Uint64N(100)) // occasionally out of order
				} else {
					tick += rng.Uint64N(1000)
				}
				recs[i] = cpeltest.Record{Ticks: tick, Track: []uint32{1, 70000, 2, 1 << 31}[rng.IntN(4)], Code: uint32(rng.IntN(8) * 3), Datum: rng.Uint32()}
				ns := new(big.Int).Mul(new(big.Int).SetUint64(tick), big.NewInt(1e9))
				ns.Quo(ns, big.NewInt(int64(hz)))
				if !ns.IsInt64() {
					ns.SetInt64(math.MaxInt64) // saturated
				}
				all = append(all, want{ns, s, i, recs[i].Track, recs[i].Code, recs[i].Datum})
			}
			w.EventList(tabs[rng.IntN(2)], hz, recs)
		}
		w.ShuffleSections(rng.Shuffle)
		slices.SortStableFunc(all, func(a, b want) int { return a.time.Cmp(b.time) })
		r := openBytes(t, bytesOf(t, w))
		res := tracetest.Check(t, r, true)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if len(res.Events) != len(all) {
			t.Fatalf("iter %d: %d events, want %d", iter, len(res.Events), len(all))
		}
		m := r.Meta()
		// Equal times may come in either section order; compare sorted
		// (time, datum) keys and the per-event facts.
		for i, e := range res.Events {
			wt := all[i].time.Int64()
			if int64(e.Time) != wt {
				t.Fatalf("iter %d event %d: time %d, want %d", iter, i, e.Time, wt)
			}
			d, err := r.Details(e)
			if err != nil {
				t.Fatal(err)
			}
			datum := uint32(d.Fields[0].Value.Uint())
			j := slices.IndexFunc(all, func(w want) bool { return w.time.Int64() == wt && w.dat == datum })
			if j < 0 {
				t.Fatalf("iter %d event %d: datum %d at %d not written", iter, i, datum, wt)
			}
			if uint32(m.Tracks[e.Track].Code) != all[j].track || uint32(m.Types[e.Type].ID) != all[j].code {
				t.Fatalf("iter %d event %d: track %d code %d, want %d %d", iter, i, m.Tracks[e.Track].Code, m.Types[e.Type].ID, all[j].track, all[j].code)
			}
		}
	}
}

// TestTruncated cuts a file at every length: reading never panics, and a
// cut file ends with a truncation error after the complete events.
func TestTruncated(t *testing.T) {
	tracetest.CheckCuts(t, Format{}, bytesOf(t, symtabFixture()))
}

// TestDamage covers sections the reader must skip or distrust.
func TestDamage(t *testing.T) {
	w := &cpeltest.Writer{}
	tab := w.StringTable("T")
	w.Raw(uint32(SectionBad), []byte{1, 2, 3})
	w.Raw(99, []byte{4})
	w.EventDefs(tab, []cpeltest.EventDef{{Code: 1, Name: "a", Format: "%s"}, {Code: 1, Name: "dup", Format: "%d"}})
	// An event definition section naming a missing table, a count too big.
	bad := make([]byte, defHeaderSize)
	copy(bad, "Missing")
	w.Raw(uint32(SectionEvtdef), bad)
	big := make([]byte, defHeaderSize)
	copy(big, "T")
	big[nameSize] = 0x7f
	w.Raw(uint32(SectionTrackdef), big)
	w.EventList(tab, 1e9, []cpeltest.Record{{Ticks: 1, Track: 0, Code: 1, Datum: 1 << 30}, {Ticks: 2, Code: 1, Datum: 2}})
	r := openBytes(t, bytesOf(t, w))
	got := tracetest.Labels(t, r)
	want := []string{"track 0 | a: %!s(uint32=1073741824)", "track 0 | a: a"}
	if !slices.Equal(got, want) {
		t.Errorf("labels\n got %q\nwant %q", got, want)
	}
	notes := strings.Join(r.Meta().Notices, "\n")
	for _, s := range []string{"type 0", "unknown type 99", "redefined", "\"Missing\"", "do not fit"} {
		if !strings.Contains(notes, s) {
			t.Errorf("no notice mentioning %q in\n%s", s, notes)
		}
	}
}

// addSeeds adds the fixtures and the files in testdata/cpel to a fuzz
// target's corpus.
func addSeeds(f *testing.F) {
	for _, fix := range fixtures {
		f.Add(bytesOf(f, fix()))
	}
	if files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "cpel", "*.cpel")); files != nil {
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
}

func FuzzReader(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Format{}.Open(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		// A second reader goes through the PayloadDecoder path (viewer
		// dump's), which must give the same events and details.
		pr, _ := Format{}.Open(bytes.NewReader(b), int64(len(b)))
		pd := pr.(*Reader)
		// ReadEventsByTrack (the index's path) groups ReadEvent's events.
		if want, wantErr, ok := readOneByOne(b); ok {
			if msg := checkByTrack(openBytesReader(b), 7, want, wantErr); msg != "" {
				t.Fatal("ReadEventsByTrack: " + msg)
			}
		}
		var prev trace.Time
		for n := 0; n < 1<<16; n++ {
			e, err := r.ReadEvent()
			var pe trace.Event
			payload, perr := pd.ReadEventPayload(&pe, nil)
			if (err == nil) != (perr == nil) || err == nil && pe != e {
				t.Fatalf("event %d: ReadEventPayload gives %+v, %v; ReadEvent %+v, %v", n, pe, perr, e, err)
			}
			if err != nil {
				if err != io.EOF {
					if _, ok := errors.AsType[*trace.FormatError](err); !ok {
						t.Fatalf("error %v is not a FormatError", err)
					}
				}
				return
			}
			if err := tracetest.Validate(r.Meta(), r, e, n, prev); err != nil {
				t.Fatal(err)
			}
			prev = e.Time
			d, err := r.Details(e)
			if err != nil {
				t.Fatal(err)
			}
			fields, label, err := pd.AppendPayloadDetails(nil, nil, e, payload)
			if err != nil || string(label) != d.Label || len(fields) != 1 || fields[0].Value.Uint() != d.Fields[0].Value.Uint() {
				t.Fatalf("event %d: payload details %q %v (%v), Details %q %v", n, label, fields, err, d.Label, d.Fields)
			}
		}
	})
}

// TestPercentS checks the formats cpeldump's %s heuristic gets wrong
// (NOTES.md §labels): it takes a datum for a string offset when any 's' follows
// any '%', so "%d packets" would print a string. We parse the conversion.
func TestPercentS(t *testing.T) {
	w := &cpeltest.Writer{}
	tab := w.StringTable("S")
	w.EventDefs(tab, []cpeltest.EventDef{{Code: 1, Name: "rx", Format: "%d packets"}, {Code: 2, Name: "tx", Format: "%u bytes, %s"}, {Code: 3, Name: "ms", Format: "  %s"}})
	w.EventList(tab, 1e9, []cpeltest.Record{{Ticks: 1, Code: 1, Datum: 2}, {Ticks: 2, Code: 2, Datum: 2}, {Ticks: 3, Code: 3, Datum: 2}})
	got := tracetest.Labels(t, openBytes(t, bytesOf(t, w)))
	want := []string{"track 0 | rx: 2 packets", "track 0 | tx: 2 bytes, %!s(MISSING)", "track 0 | ms:   rx"}
	if !slices.Equal(got, want) {
		t.Errorf("labels\n got %q\nwant %q", got, want)
	}
}

// TestConcurrentDetails calls Details from several goroutines once reading
// has finished (run with -race).
func TestConcurrentDetails(t *testing.T) {
	w := unsortedFixture()
	tab := w.StringTable("More")
	recs := make([]cpeltest.Record, 5000)
	for i := range recs {
		recs[i] = cpeltest.Record{Ticks: uint64(i), Track: uint32(i % 3), Code: uint32(i % 2), Datum: uint32(i)}
	}
	w.EventList(tab, 1e9, recs)
	r := openBytes(t, bytesOf(t, w))
	res := tracetest.Check(t, r, true)
	tracetest.CheckDetailsConcurrent(t, r, res.Events)
}

// TestTickClock checks tick conversion against big.Int arithmetic.
func TestTickClock(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, hz := range []uint64{1e9, 2.4e9, 3124099, 1, 7, 1e6, 4294967295, 999999999} {
		c := newTickClock(hz)
		for range 20000 {
			ticks := rng.Uint64() >> rng.IntN(64)
			want := new(big.Int).Mul(new(big.Int).SetUint64(ticks), big.NewInt(1e9))
			want.Quo(want, new(big.Int).SetUint64(hz))
			if !want.IsInt64() {
				want.SetInt64(math.MaxInt64)
			}
			if got := c.time(ticks); int64(got) != want.Int64() {
				t.Fatalf("hz %d ticks %d: %d, want %s", hz, ticks, got, want)
			}
		}
	}
}

// TestMaxLabel checks that a format padding one datum to thousands of
// bytes gives a label cut at MaxLabel, the same through Details,
// AppendLabel and AppendDetails; short labels are left whole.
func TestMaxLabel(t *testing.T) {
	w := &cpeltest.Writer{}
	tab := w.StringTable("T")
	w.EventDefs(tab, []cpeltest.EventDef{{Code: 1, Name: "wide", Format: "%u " + strings.Repeat("é", 1500)}, {Code: 2, Name: "short", Format: "%u"}})
	w.EventList(tab, 1e6, []cpeltest.Record{{Ticks: 1, Code: 1, Datum: 17}, {Ticks: 2, Code: 2, Datum: 8}})
	r := openBytes(t, bytesOf(t, w))
	long := "wide: 17 " + strings.Repeat("é", (MaxLabel-len("wide: 17 "))/2) // cut back to a rune boundary
	want := []string{long + "…", "short: 8"}
	for i := range want {
		e, err := r.ReadEvent()
		if err != nil {
			t.Fatal(err)
		}
		d, err := r.Details(e)
		if err != nil || d.Label != want[i] {
			t.Errorf("Details label %q (%v), want %q", d.Label, err, want[i])
		}
		if b, _ := r.AppendLabel(nil, e); string(b) != want[i] {
			t.Errorf("AppendLabel %q", b)
		}
		if f, b, _ := r.AppendDetails(nil, nil, e); string(b) != want[i] || len(f) != 1 || f[0].Value.Uint() != []uint64{17, 8}[i] {
			t.Errorf("AppendDetails %q %v", b, f)
		}
	}
}

// TestAppendEvent checks that the allocation-free JSON path (AppendDetails
// through export.Encoder.AppendEvent) gives the bytes of Details and Append,
// on the fixtures with symbols, %s, two sections, undefined ids and a
// label cut at MaxLabel.
func TestAppendEvent(t *testing.T) {
	wide := &cpeltest.Writer{}
	tab := wide.StringTable("T")
	wide.EventDefs(tab, []cpeltest.EventDef{{Code: 1, Name: "wide", Format: "%u <&>" + strings.Repeat("é", 1500)}})
	wide.EventList(tab, 1e6, []cpeltest.Record{{Ticks: 1, Code: 1, Datum: 17}, {Ticks: 2, Code: 9, Datum: 3}})
	for name, w := range map[string]*cpeltest.Writer{"symtab": symtabFixture(), "unsorted": unsortedFixture(), "wide": wide} {
		data := bytesOf(t, w)
		r, fast := openBytes(t, data), openBytes(t, data)
		enc, fastEnc := export.NewEncoder(r), export.NewEncoder(fast)
		n := 0
		for {
			e, err := r.ReadEvent()
			fe, ferr := fast.ReadEvent()
			if err != nil || ferr != nil {
				if err != io.EOF || ferr != io.EOF {
					t.Fatalf("%s: %v, %v", name, err, ferr)
				}
				break
			}
			d, err := r.Details(e)
			if err != nil {
				t.Fatal(err)
			}
			want := string(enc.Append(nil, e, d, nil))
			got, err := fastEnc.AppendEvent([]byte("x"), fe)
			if err != nil || string(got) != "x"+want {
				t.Errorf("%s event %d:\n got %s (%v)\nwant x%s", name, n, got, err, want)
			}
			n++
		}
		if n < 2 {
			t.Errorf("%s: %d events", name, n)
		}
	}
}

// TestPayloadDecoder checks that ReadEventPayload gives each event's datum
// as stored and that AppendPayloadDetails, run on another goroutine while
// reading goes on (run with -race), gives what AppendDetails gives, on
// fixtures with symbols, an unsorted section, two sections and undefined
// codes that reading adds.
func TestPayloadDecoder(t *testing.T) {
	multi := unsortedFixture()
	tab := multi.StringTable("More")
	var recs []cpeltest.Record
	for i := range 3000 {
		recs = append(recs, cpeltest.Record{Ticks: uint64(i), Track: uint32(i % 5), Code: uint32(i % 9), Datum: uint32(i * 7919)})
	}
	multi.EventList(tab, 1e9, recs)
	for name, w := range map[string]*cpeltest.Writer{"symtab": symtabFixture(), "multi": multi} {
		data := bytesOf(t, w)
		want := openBytes(t, data)
		r := openBytes(t, data)
		type item struct {
			e       trace.Event
			payload []byte
		}
		items := make(chan item, 64)
		got := make(chan string, 64)
		go func() {
			defer close(got)
			for it := range items {
				f, l, err := r.AppendPayloadDetails(nil, nil, it.e, it.payload)
				if err != nil || len(f) != 1 {
					got <- fmt.Sprintf("error %v, %d fields", err, len(f))
					continue
				}
				got <- string(l) + "|" + f[0].Value.String()
			}
		}()
		go func() {
			defer close(items)
			for {
				var e trace.Event
				p, err := r.ReadEventPayload(&e, nil)
				if err != nil {
					return
				}
				items <- item{e, p}
			}
		}()
		n := 0
		for g := range got {
			e, err := want.ReadEvent()
			if err != nil {
				t.Fatalf("%s: %d events from ReadEventPayload, %v from ReadEvent", name, n, err)
			}
			f, l, err := want.AppendDetails(nil, nil, e)
			if err != nil || g != string(l)+"|"+f[0].Value.String() {
				t.Errorf("%s event %d: payload details %q, want %q (%v)", name, n, g, string(l)+"|"+f[0].Value.String(), err)
			}
			n++
		}
		if _, err := want.ReadEvent(); err != io.EOF || n < 4 {
			t.Errorf("%s: %d events, then %v", name, n, err)
		}
	}
}

// TestDecodeFields checks that the datum DecodeFields gives equals the
// field of that name in Details, for every event of a file with several
// sections and types, and that a field index the type lacks gives the
// zero Value.
func TestDecodeFields(t *testing.T) {
	w := unsortedFixture()
	var recs []cpeltest.Record
	for i := range 2000 {
		recs = append(recs, cpeltest.Record{Ticks: uint64(i), Track: uint32(i % 5), Code: uint32(i % 9), Datum: uint32(i * 104729)})
	}
	w.EventList(w.StringTable("More"), 1e9, recs)
	r := openBytes(t, bytesOf(t, w))
	var _ trace.FieldsDecoder = r
	n := 0
	for e, err := r.ReadEvent(); err == nil; e, err = r.ReadEvent() {
		n++
		d, err := r.Details(e)
		if err != nil {
			t.Fatal(err)
		}
		fs := r.Meta().Types[e.Type].Fields
		if len(fs) != 1 || fs[0].Name != d.Fields[0].Name {
			t.Fatalf("type %d declares %v, details give %q", e.Type, fs, d.Fields[0].Name)
		}
		vals := make([]trace.Value, 2)
		if err := r.DecodeFields(e, []int{1, 0}, vals); err != nil {
			t.Fatal(err)
		}
		want := d.Fields[0].Value
		if vals[1].Kind() != want.Kind() || vals[1].Uint() != want.Uint() || vals[0].Kind() != trace.KindBad {
			t.Fatalf("event %d: DecodeFields %v, Details %v", n, vals, d.Fields[0].Value)
		}
	}
	if n < 2000 {
		t.Fatalf("read %d events", n)
	}
}
