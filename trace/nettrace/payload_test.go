package nettrace

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"viewer/trace"
	"viewer/trace/nettrace/nettracetest"
)

// TestDecodePayloadTolerant decodes every prefix of payloads covering all
// type codes, and the payloads with trailing bytes: a prefix gives the
// fields it holds whole (the last one possibly partial), extra bytes are
// ignored, and nothing panics.
func TestDecodePayloadTolerant(t *testing.T) {
	for _, tc := range []struct {
		fields []nettracetest.Field
		values []trace.Value
	}{
		{scalarFields, scalarValues(5)},
		{containerFields, containerValues(4)},
	} {
		p, err := nettracetest.EncodePayload(tc.fields, tc.values)
		if err != nil {
			t.Fatal(err)
		}
		fields := readerFields(tc.fields)
		full, used := DecodePayload(p, fields, 8)
		if used > len(p) || len(full) != len(fields) { // used excludes RelLoc/DataLoc data
			t.Fatalf("whole payload: used %d of %d bytes, %d of %d fields", used, len(p), len(full), len(fields))
		}
		long, _ := DecodePayload(append(p[:len(p):len(p)], 1, 2, 3, 4, 5), fields, 8)
		if !reflect.DeepEqual(long, full) {
			t.Errorf("trailing bytes changed the fields")
		}
		for n := range len(p) {
			got, used := DecodePayload(p[:n], fields, 8)
			if used > n || len(got) > len(full) {
				t.Fatalf("prefix %d: used %d, %d fields", n, used, len(got))
			}
			for i := 0; i+1 < len(got); i++ {
				if !reflect.DeepEqual(got[i], full[i]) {
					t.Fatalf("prefix %d: field %d = %v, want %v", n, i, got[i], full[i])
				}
			}
		}
	}
}

// TestLabel checks the one-line label: name then name=value pairs, capped
// at MaxLabel bytes plus an ellipsis, valid UTF-8.
func TestLabel(t *testing.T) {
	et := trace.EventType{Provider: "P", ID: 7}
	fields := []trace.Field{
		{Name: "n", Value: trace.IntValue(-3)},
		{Name: "h", Value: trace.HexValue(255)},
		{Name: "s", Value: trace.StringValue(strings.Repeat("é", 300))},
	}
	got := Label(et, fields)
	if !strings.HasPrefix(got, "P/7 n=-3 h=0xff s=éé") || !strings.HasSuffix(got, "…") {
		t.Errorf("label %q", got)
	}
	if len(got) > MaxLabel+len("…") || !utf8.ValidString(got) {
		t.Errorf("label of %d bytes (valid UTF-8: %v)", len(got), utf8.ValidString(got))
	}
	if got := Label(trace.EventType{Name: "Tick"}, fields[:2]); got != "Tick n=-3 h=0xff" {
		t.Errorf("label %q", got)
	}
}

func TestTypeCodeString(t *testing.T) {
	for tc, want := range map[TypeCode]string{TypeObject: "object", TypeBoolean8: "bool8", TypePointer: "pointer",
		TypeAnsiString: "ansistring", 2: "TypeCode(2)", 27: "TypeCode(27)", 0x90: "TypeCode(144)"} {
		if got := tc.String(); got != want {
			t.Errorf("%d: %q, want %q", tc, got, want)
		}
	}
}

// TestAppendHex compares the label's hex formatting with strconv at every
// length and at the edges.
func TestAppendHex(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	vals := []uint64{0, 1, 0xf, 0x10, 0xff, 1<<63 - 1, 1 << 63, 1<<64 - 1}
	for range 10000 {
		vals = append(vals, rng.Uint64()>>rng.IntN(64))
	}
	for _, v := range vals {
		if got, want := string(appendHex([]byte("x="), v)), "x=0x"+strconv.FormatUint(v, 16); got != want {
			t.Fatalf("appendHex(%d) = %s, want %s", v, got, want)
		}
	}
}

// TestPutDec compares putDec with strconv at every length, at the powers
// of ten and next to them, and at the edges.
func TestPutDec(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	vals := []uint64{0, 9, 10, 99, 100, 1<<63 - 1, 1 << 63, 1<<64 - 1}
	for p := uint64(1); p <= 1e19; p *= 10 {
		vals = append(vals, p-1, p, p+1)
		if p == 1e19 {
			break
		}
	}
	for range 10000 {
		vals = append(vals, rng.Uint64()>>rng.IntN(64))
	}
	for _, v := range vals {
		var d [20]byte
		if got, want := string(d[:putDec(&d, v)]), strconv.FormatUint(v, 10); got != want {
			t.Fatalf("putDec(%d) = %s, want %s", v, got, want)
		}
	}
}
