package export

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"viewer/trace"
)

func TestValueJSON(t *testing.T) {
	guid := [16]byte{0x78, 0x56, 0x34, 0x12, 0x34, 0x12, 0x78, 0x56, 1, 2, 3, 4, 5, 6, 7, 8}
	v := trace.StructValue([]trace.Field{
		{Name: "a", Value: trace.IntValue(-3)},
		{Name: "b", Value: trace.HexValue(255)},
		{Name: "s", Value: trace.StringValue("<x>\"\xff")},
		{Name: "g", Value: trace.GUIDValue(guid)},
		{Name: "arr", Value: trace.ArrayValue([]trace.Value{trace.UintValue(1), trace.FloatValue(0.5), trace.BoolValue(true)})},
		{Name: "t", Value: trace.TimeValue(time.Date(2024, 3, 28, 0, 45, 12, 640913120, time.UTC))},
	})
	got := string(AppendValue(nil, v))
	want := `[{"name":"a","value":-3},{"name":"b","value":"0xff"},{"name":"s","value":"\u003cx\u003e\"` + "\uFFFD" + `"},` +
		`{"name":"g","value":"12345678-1234-5678-0102-030405060708"},{"name":"arr","value":[1,0.5,true]},` +
		`{"name":"t","value":"2024-03-28T00:45:12.64091312Z"}]`
	if got != want {
		t.Errorf("JSON\n got %s\nwant %s", got, want)
	}
}

// TestAppendStringAsJSON checks the escaping of strings against what
// encoding/json writes for them (invalid UTF-8 replaced first, as
// AppendString documents), on every short string over a set of bytes
// that matter and on random strings.
func TestAppendStringAsJSON(t *testing.T) {
	check := func(s string) {
		want, _ := json.Marshal(strings.ToValidUTF8(s, "\uFFFD"))
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if got := appendString(nil, []byte(s)); string(got) != string(want) {
			t.Fatalf("appendString([]byte(%q)) = %s, want %s", s, got, want)
		}
	}
	alphabet := []string{"a", "\"", "\\", "<", ">", "&", "\n", "\b", "\f", "\r", "\t", "\x00", "\x1f", "\x7f", "é", "\u2028", "\u2029", "\uFFFD", "\xff", "\xe2\x80", "\xc3", "😀"}
	var rec func(s string, depth int)
	rec = func(s string, depth int) {
		check(s)
		if depth == 3 {
			return
		}
		for _, a := range alphabet {
			rec(s+a, depth+1)
		}
	}
	rec("", 0)
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range 40000 {
		b := make([]byte, rng.IntN(40))
		plain := 2    // one byte in plain of any value, the others printable ASCII
		if k%2 == 1 { // long printable runs, skipped eight bytes at a time
			b, plain = make([]byte, rng.IntN(100)), 20
		}
		for i := range b {
			b[i] = byte(rng.IntN(256))
			if rng.IntN(plain) != 0 {
				b[i] = byte(0x20 + rng.IntN(0x60))
			}
		}
		check(string(b))
	}
}

// TestAppendValueAsString checks the values AppendValue writes without
// v.String() (hex, times, bytes, GUIDs) against the JSON string of
// v.String().
func TestAppendValueAsString(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		var g [16]byte
		for i := range g {
			g[i] = byte(rng.IntN(256))
		}
		raw := make([]byte, rng.IntN(9))
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		for _, v := range []trace.Value{
			trace.HexValue(rng.Uint64() >> rng.IntN(64)),
			trace.TimeValue(time.Unix(rng.Int64N(1<<40)-1<<39, rng.Int64N(1e9))),
			trace.BytesValue(raw),
			trace.GUIDValue(g),
		} {
			want := AppendString(nil, v.String())
			if got := AppendValue(nil, v); string(got) != string(want) {
				t.Fatalf("AppendValue(%v) = %s, want %s", v, got, want)
			}
		}
	}
}
