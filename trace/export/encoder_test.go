package export

import (
	"slices"
	"viewer/trace"

	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeReader is a Reader over fixed tables for encoder tests.
type fakeReader struct{ m trace.Meta }

func (f *fakeReader) Meta() *trace.Meta               { return &f.m }
func (f *fakeReader) ReadEvent() (trace.Event, error) { return trace.Event{}, nil }
func (f *fakeReader) Stack(id trace.StackID) []uint64 {
	return map[trace.StackID][]uint64{1: {0x10, 0xff}}[id]
}
func (f *fakeReader) Labels(id trace.LabelsID) []trace.Label {
	return map[trace.LabelsID][]trace.Label{1: {{Key: "SpanId", Value: trace.HexValue(7)}}}[id]
}
func (f *fakeReader) Details(trace.Event) (trace.Details, error) { return trace.Details{}, nil }

func TestEncoder(t *testing.T) {
	wall := time.Date(2024, 3, 28, 0, 45, 12, 0, time.UTC)
	r := &fakeReader{m: trace.Meta{
		Clock:  trace.Clock{TicksPerSecond: 1e9, Wall: wall},
		Tracks: []trace.Track{{Kind: trace.TrackThread, Name: "main", PID: 1, TID: 2}},
		Types:  []trace.EventType{{Provider: "P", Name: "E", ID: 3, Version: 1, Keywords: 0x10}},
		Has:    trace.HasProvider | trace.HasVersion | trace.HasKeywords | trace.HasCPU,
	}}
	enc := NewEncoder(r)
	e := trace.Event{Time: 640913120, Track: 0, Type: 0, CPU: 5, Stack: 1, Labels: 1}
	d := trace.Details{Fields: []trace.Field{{Name: "x", Value: trace.IntValue(1)}}, Label: "E x=1"}
	got := string(enc.Append(nil, e, d, nil))
	want := `{"time_ns":640913120,"wall":"2024-03-28T00:45:12.64091312Z","track":"main","pid":1,"tid":2,"cpu":5,` +
		`"provider":"P","event":"E","id":3,"version":1,"keywords":"0x10","fields":[{"name":"x","value":1}],` +
		`"stack":["0x10","0xff"],"labels":{"SpanId":"0x7"},"label":"E x=1"}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A thread renamed while reading (perf COMM) shows its new name.
	r.m.Tracks[0].Name = "worker"
	if got := string(enc.Append(nil, e, d, nil)); !strings.Contains(got, `"track":"worker"`) {
		t.Errorf("after rename: %s", got)
	}
	if got := string(AppendEvent(nil, r, e, d, nil)); !strings.Contains(got, `"track":"worker"`) || !json.Valid([]byte(got)) {
		t.Errorf("AppendEvent: %s", got)
	}
}

// TestJSONWall compares the cached wall-clock formatting with
// time.RFC3339Nano over random times.
func TestJSONWall(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c := trace.Clock{TicksPerSecond: 1e9, Wall: time.Date(2026, 1, 15, 10, 0, 0, 123, time.UTC)}
	enc := &Encoder{}
	var at trace.Time
	for range 10000 {
		at += trace.Time(rng.Int64N(3e9))
		if rng.IntN(10) == 0 {
			at = at / 1e6 * 1e6 // trailing zeros
		}
		w, _ := c.WallTime(at)
		want := `,"wall":"` + w.UTC().Format(time.RFC3339Nano) + `"`
		if got := string(enc.appendWall(nil, c, at)); got != want {
			t.Fatalf("at %d: got %s want %s", at, got, want)
		}
	}
}

// TestJSONPlain compares the eight-bytes-at-a-time check with a byte loop
// over random strings biased towards the bytes that need escaping.
func TestJSONPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	special := []byte("\x00\x1f\x20\x7f\x80\xff\"\\<>&=;?^|~a0")
	for range 100000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = special[rng.IntN(len(special))]
			} else {
				b[i] = byte(rng.IntN(256))
			}
			if rng.IntN(3) == 0 {
				b[i] = 'a' + byte(rng.IntN(26))
			}
		}
		if len(b) > 0 && rng.IntN(2) == 0 { // plain but for at most one byte
			for i := range b {
				b[i] = ' ' + byte(rng.IntN(0x60))
			}
			b[rng.IntN(len(b))] = special[rng.IntN(len(special))]
		}
		want := true
		for _, c := range b {
			if c < 0x20 || c >= 0x80 || strings.IndexByte(`"\<>&`, c) >= 0 {
				want = false
			}
		}
		if got := jsonPlain(b); got != want {
			t.Fatalf("jsonPlain(%q) = %v", b, got)
		}
		if got := jsonPlain(string(b)); got != want {
			t.Fatalf("jsonPlain(string %q) = %v", b, got)
		}
		enc, _ := json.Marshal(strings.ToValidUTF8(string(b), "\uFFFD"))
		if got := string(appendString(nil, b)); got != string(enc) {
			t.Fatalf("appendString(%q) = %s, want %s", b, got, enc)
		}
	}
}

// TestAppendInt compares the decimal and hex formatting with strconv at
// every length and at the edges.
func TestAppendInt(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	vals := []uint64{0, 9, 10, 99, 100, 1e8 - 1, 1e8, 1e16 - 1, 1e16, math.MaxUint64, math.MaxInt64, 1 << 63}
	for range 100000 {
		vals = append(vals, rng.Uint64()>>rng.IntN(64))
	}
	for _, v := range vals {
		if got, want := string(appendUint([]byte("x"), v)), "x"+strconv.FormatUint(v, 10); got != want {
			t.Fatalf("appendUint(%d) = %s", v, got)
		}
		if got, want := string(appendInt(nil, int64(v))), strconv.FormatInt(int64(v), 10); got != want {
			t.Fatalf("appendInt(%d) = %s", int64(v), got)
		}
		if got, want := string(appendHexUint([]byte("x"), v)), "x"+strconv.FormatUint(v, 16); got != want {
			t.Fatalf("appendHexUint(%#x) = %s", v, got)
		}
	}
}

// TestCounterAddEvents checks that counting in batches gives the
// statistics of counting one by one, on random events (negative times,
// unknown types, types in any order) cut into random batches, through
// AddEvents and through AddTypes.
func TestCounterAddEvents(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	m := &trace.Meta{Format: "x"}
	for range 50 {
		m.Types = make([]trace.EventType, 1+rng.IntN(20))
		evs := make([]trace.Event, rng.IntN(500))
		for i := range evs {
			evs[i] = trace.Event{Time: trace.Time(rng.IntN(2000) - 1000), Type: trace.TypeID(rng.IntN(len(m.Types)+1) - 1)}
		}
		var one, batched, typed Counter
		for _, e := range evs {
			one.Add(e)
		}
		for rest := evs; len(rest) > 0; {
			k := min(len(rest), rng.IntN(40))
			batched.AddEvents(rest[:k])
			var types []trace.TypeID
			last := rest[0].Time
			for _, e := range rest[:k] {
				types = append(types, e.Type)
				last = max(last, e.Time)
			}
			typed.AddTypes(types, rest[0].Time, last)
			rest = rest[k:]
		}
		if a, b := one.Stats(m, nil), batched.Stats(m, nil); !reflect.DeepEqual(a, b) {
			t.Fatalf("batched %+v, one by one %+v", b, a)
		}
		if a, b := one.Stats(m, nil), typed.Stats(m, nil); !reflect.DeepEqual(a, b) || !slices.Equal(one.PerType(), typed.PerType()) {
			t.Fatalf("by types %+v, one by one %+v", b, a)
		}
	}
}
