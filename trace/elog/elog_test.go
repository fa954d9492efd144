package elog

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"viewer/trace"
	"viewer/trace/elog/elogtest"
	"viewer/trace/tracetest"
)

var update = flag.Bool("update", false, "rewrite testdata/elog fixtures")

// richWriter has every argument kind, like vpp_rich.elog.
func richWriter() *elogtest.Writer {
	return &elogtest.Writer{
		RingSize:      1024,
		SerializeTime: elogtest.TimeStamp{OSNsec: 3e17, CPU: 5000},
		InitTime:      elogtest.TimeStamp{OSNsec: 3e17 - 1e9, CPU: 0},
		Types: []elogtest.EventType{
			{Format: "rx(%d): %d", FormatArgs: "i4i4"},
			{Format: "link-state: sw_if_index %d %s", FormatArgs: "i4t1", Enums: []string{"down", "up"}},
			{Format: "dispatch: %s vectors %d", FormatArgs: "T4i2"},
			{Format: "ip4 %d.%d.%d.%d", FormatArgs: "i1i1i1i1"},
			{Format: "clocks %Lu bytes 0x%Lx", FormatArgs: "i8i8"},
			{Format: "temp %.2f ratio %.6f", FormatArgs: "f4f8"},
			{Format: "msg `%s'", FormatArgs: "s20"},
			{Format: "name %s and 100%% %d", FormatArgs: "s0i4"},
			{Format: "%s suspend %d", FormatArgs: "T4i4"},
			{Format: "no args", FormatArgs: ""},
			{Format: "%d %d extra", FormatArgs: "i4"},
		},
		Tracks:      []string{"default", "main thread", "a track name longer than twenty-four"},
		StringTable: []byte("ip4-input\x00proc-1\x00"),
	}
}

func richEvents() []elogtest.Event {
	return []elogtest.Event{
		{Type: 0, Track: 1, Time: 0.000001728, Args: []elogtest.Value{{N: 1}, {N: 0xfffffffe}}},
		{Type: 1, Track: 1, Time: 0.0000018, Args: []elogtest.Value{{N: 2}, {N: 1}}},
		{Type: 1, Track: 2, Time: 0.0000019, Args: []elogtest.Value{{N: 2}, {N: 7}}}, // enum out of range
		{Type: 2, Track: 1, Time: 0.5, Args: []elogtest.Value{{N: 0}, {N: 300}}},
		{Type: 3, Track: 1, Time: 0.5, Args: []elogtest.Value{{N: 192}, {N: 168}, {N: 1}, {N: 255}}},
		{Type: 4, Track: 1, Time: 1.25, Args: []elogtest.Value{{N: 13257}, {N: 0x6a03b5047a5265b7}}},
		{Type: 5, Track: 0, Time: 2, Args: []elogtest.Value{{F: 35.97}, {F: 0.309299}}},
		{Type: 6, Track: 0, Time: 3, Args: []elogtest.Value{{S: "pkt 829 from wk0"}}},
		{Type: 7, Track: 0, Time: 4, Args: []elogtest.Value{{S: strings.Repeat("x", 300)}, {N: 5}}},
		{Type: 8, Track: 0, Time: 5, Args: []elogtest.Value{{N: 10}, {N: 3}}},
		{Type: 9, Track: 0, Time: 6},
		{Type: 10, Track: 0, Time: 7, Args: []elogtest.Value{{N: 1}}},
		{Type: 0, Track: 9, Time: 8, Args: []elogtest.Value{{N: 1}, {N: 2}}}, // undefined track
	}
}

var richWant = []string{
	"main thread | rx(1): -2",
	"main thread | link-state: sw_if_index 2 up",
	"a track name longer than twenty-four | link-state: sw_if_index 2 %!s(uint32=7)",
	"main thread | dispatch: ip4-input vectors 300",
	"main thread | ip4 192.168.1.255",
	"main thread | clocks 13257 bytes 0x6a03b5047a5265b7",
	"default | temp 35.97 ratio .309299",
	"default | msg `pkt 829 from wk0'",
	"default | name " + strings.Repeat("x", 300) + " and 100%% 5",
	"default | proc-1 suspend 3",
	"default | no args",
	"default | 1 ",
	"track 9 | rx(1): 2",
}

func writeBytes(t testing.TB, w *elogtest.Writer, events []elogtest.Event) []byte {
	var b bytes.Buffer
	if err := w.Write(&b, events); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func openBytes(t testing.TB, b []byte) *Reader {
	t.Helper()
	if !Match(b) {
		t.Fatal("Match = false")
	}
	r, err := Format{}.Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return r.(*Reader)
}

// TestFixture checks testdata/elog/rich.elog against the writer (go test
// -update rewrites it) and its labels against vppinfra's rules.
func TestFixture(t *testing.T) {
	b := writeBytes(t, richWriter(), richEvents())
	path := filepath.Join("..", "..", "testdata", "elog", "rich.elog")
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
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
	r := openBytes(t, b)
	if l := tracetest.Labels(t, r); !slices.Equal(l, richWant) {
		t.Errorf("labels\n got %q\nwant %q", l, richWant)
	}
	if w := r.Meta().Clock.Wall; w.Year() != 2026 {
		t.Errorf("wall clock %v, want 2026 (2017 epoch + 3e17 ns)", w)
	}
}

// TestRoundTrip writes random logs and checks every field read back.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := richWriter()
	for iter := range 50 {
		n := rng.IntN(200)
		var events []elogtest.Event
		tm := 0.0
		for range n {
			ty := uint16(rng.IntN(len(w.Types)))
			args, _ := parseArgs(w.Types[ty].FormatArgs)
			var vals []elogtest.Value
			for _, a := range args {
				var v elogtest.Value
				switch a.Kind {
				case ArgFloat:
					v.F = rng.NormFloat64()
					if a.Bytes == 4 {
						v.F = float64(float32(v.F))
					}
				case ArgString:
					v.S = strings.Repeat("s", rng.IntN(20000))
				default:
					v.N = rng.Uint64() >> (64 - 8*a.Bytes)
				}
				vals = append(vals, v)
			}
			tm += float64(rng.IntN(1000)) * 1e-9
			events = append(events, elogtest.Event{Type: ty, Track: uint16(rng.IntN(3)), Time: tm, Args: vals})
		}
		r := openBytes(t, writeBytes(t, w, events))
		res := tracetest.Check(t, r, true)
		if res.Err != nil || len(res.Events) != n {
			t.Fatalf("iter %d: %d events, %v", iter, len(res.Events), res.Err)
		}
		for i, e := range res.Events {
			want := events[i]
			if e.Time != nsTime(want.Time) || int(e.Type) != int(want.Type) || int(e.Track) != int(want.Track) {
				t.Fatalf("iter %d event %d: %+v, want %+v", iter, i, e, want)
			}
			d, err := r.Details(e)
			if err != nil {
				t.Fatal(err)
			}
			args, _ := parseArgs(w.Types[want.Type].FormatArgs)
			for j, a := range args {
				f := d.Fields[j].Value
				switch a.Kind {
				case ArgFloat:
					if f.Float() != want.Args[j].F {
						t.Fatalf("event %d arg %d = %v, want %v", i, j, f.Float(), want.Args[j].F)
					}
				case ArgString:
					if f.Str() != want.Args[j].S {
						t.Fatalf("event %d arg %d: string of %d bytes, want %d", i, j, len(f.Str()), len(want.Args[j].S))
					}
				case ArgInt:
					if f.Uint() != want.Args[j].N {
						t.Fatalf("event %d arg %d = %d, want %d", i, j, f.Uint(), want.Args[j].N)
					}
				}
			}
		}
	}
}

// TestSmall round-trips likely-small integers at every encoding boundary.
func TestSmall(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 129, 128 + 1<<14 - 1, 128 + 1<<14, 128 + 1<<14 + 1<<29 - 1, 128 + 1<<14 + 1<<29, math.MaxUint64} {
		b := elogtest.AppendSmall(nil, v)
		d := newDecoder(bytes.NewReader(b), 0, int64(len(b)))
		if got := d.small("x"); got != v || d.err != nil || d.off != int64(len(b)) {
			t.Errorf("small %d: got %d, %v, read %d of %d bytes", v, got, d.err, d.off, len(b))
		}
	}
}

// TestUnsorted reads a log whose events are out of time order.
func TestUnsorted(t *testing.T) {
	w := &elogtest.Writer{Types: []elogtest.EventType{{Format: "e %d", FormatArgs: "i4"}}, Tracks: []string{"t"}}
	var events []elogtest.Event
	for i, tm := range []float64{3e-9, 1e-9, 2e-9, 2e-9, 0} {
		events = append(events, elogtest.Event{Time: tm, Args: []elogtest.Value{{N: uint64(i)}}})
	}
	r := openBytes(t, writeBytes(t, w, events))
	want := []string{"t | e 4", "t | e 1", "t | e 2", "t | e 3", "t | e 0"}
	if got := tracetest.Labels(t, r); !slices.Equal(got, want) {
		t.Errorf("labels %q, want %q", got, want)
	}
	if !strings.Contains(strings.Join(r.Meta().Notices, "\n"), "not in time order") {
		t.Errorf("notices %q", r.Meta().Notices)
	}
}

// TestTruncated cuts the fixture at every length.
func TestTruncated(t *testing.T) {
	tracetest.CheckCuts(t, Format{}, writeBytes(t, richWriter(), richEvents()))
}

// TestHostile covers counts and types that must not be trusted.
func TestHostile(t *testing.T) {
	base := writeBytes(t, &elogtest.Writer{Types: []elogtest.EventType{{Format: "x", FormatArgs: "q4"}}, Tracks: []string{"t"}}, nil)
	if _, err := (Format{}).Open(bytes.NewReader(base), int64(len(base))); err != nil {
		t.Errorf("a type whose args do not parse is fine until an event uses it: %v", err)
	}
	withEvent := func(w *elogtest.Writer, ev []byte) []byte {
		b := writeBytes(t, w, nil)
		b = b[:len(b)-4]
		return append(append(b, 0, 0, 0, 1), ev...)
	}
	for name, b := range map[string][]byte{
		"bad args":     withEvent(&elogtest.Writer{Types: []elogtest.EventType{{Format: "x", FormatArgs: "q4"}}}, make([]byte, 12)),
		"bad type":     withEvent(&elogtest.Writer{}, make([]byte, 12)),
		"huge types":   append([]byte(Magic+"\x00\x00\x00\x00"), append(make([]byte, 32), 0xff, 0xff, 0xff, 0xff)...),
		"huge string":  withEvent(&elogtest.Writer{Types: []elogtest.EventType{{Format: "%s", FormatArgs: "s0"}}}, elogtest.AppendSmall(make([]byte, 12), math.MaxInt64)),
		"nan time":     withEvent(&elogtest.Writer{Types: []elogtest.EventType{{Format: "x"}}}, []byte{0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 0xf8, 0, 0}),
		"no magic":     []byte("\x00\x00\x00\x07elog v1"),
		"short header": []byte(Magic),
	} {
		r, err := Format{}.Open(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if _, ok := errors.AsType[*trace.FormatError](err); !ok {
				t.Errorf("%s: Open error %v", name, err)
			}
			continue
		}
		res := tracetest.Check(t, r, false)
		if res.Err == nil {
			t.Errorf("%s: read to the end without an error", name)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add(writeBytes(f, richWriter(), richEvents()))
	if files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "elog", "*.elog")); files != nil {
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Format{}.Open(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		var prev trace.Time
		for n := 0; n < 1<<16; n++ {
			e, err := r.ReadEvent()
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
			if _, err := r.Details(e); err != nil {
				t.Fatal(err)
			}
		}
	})
}
