package eventheader

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/perf/eventheader/eventheadertest"
)

func TestParseTracepointName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
		want TracepointName
	}{
		{"MyProvider_L3K2a", true, TracepointName{Provider: "MyProvider", Level: 3, Keyword: 0x2a}},
		{"TestProviderC_L5K0Gmsft", true, TracepointName{Provider: "TestProviderC", Level: 5, Keyword: 0, Options: "Gmsft"}},
		{"A_B_L1Kf123456789abcdef", true, TracepointName{Provider: "A_B", Level: 1, Keyword: 0xf123456789abcdef}},
		{"P_L1K1Gx1Ab", true, TracepointName{Provider: "P", Level: 1, Keyword: 1, Options: "Gx1Ab"}},
		{"NoUnderscore", false, TracepointName{}},
		{"P_L1", false, TracepointName{}},
		{"P_LK1", false, TracepointName{}},
		{"P_L1K", false, TracepointName{}},
		{"P_LAK1", false, TracepointName{}},  // uppercase hex
		{"P_L1K1g", false, TracepointName{}}, // option must start uppercase
		{"P_L1K1G_", false, TracepointName{}},
		{"P_L100K1", false, TracepointName{}}, // level > 255
		{"P_L1K1\x00", false, TracepointName{}},
	} {
		got, ok := ParseTracepointName(tc.name)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ParseTracepointName(%q) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if g := (TracepointName{Options: "Ab1Gmsft"}).Group(); g != "msft" {
		t.Errorf("group %q", g)
	}
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'X'
	}
	if _, ok := ParseTracepointName(string(long) + "_L1K1"); ok {
		t.Error("name of 305 bytes accepted")
	}
}

func TestParseErrors(t *testing.T) {
	ok := eventheadertest.AppendEvent(nil, eventheadertest.EventDef{Header: eventheadertest.Header{Level: 1}, Name: "E", Fields: []eventheadertest.FieldDef{{Name: "a", Encoding: eventheadertest.EncValue8}}, Payload: []byte{7}})
	if _, err := Parse(ok); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), ok...)
	bad[0] |= 0x08
	for _, tc := range []struct {
		b   []byte
		err error
	}{
		{ok[:7], ErrShort},
		{bad, ErrFlags},
		{ok[:10], ErrShort},
		{append([]byte{0x07, 0, 0, 0, 0, 0, 0, 1}, 0, 0, 0, 0), ErrExtKind},
		{append([]byte{0x07, 0, 0, 0, 0, 0, 0, 1}, 3, 0, 2, 0, 1, 2, 3), ErrActivity},
	} {
		if _, err := Parse(tc.b); !errors.Is(err, tc.err) {
			t.Errorf("Parse(% x) = %v, want %v", tc.b, err, tc.err)
		}
	}
}

func TestMetadataErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta []byte
	}{
		{"no NUL", []byte("E")},
		{"field without encoding", []byte("E\x00f\x00")},
		{"invalid encoding", []byte("E\x00f\x00\x00")},
		{"encoding 14", []byte("E\x00f\x00\x0e")},
		{"carray+varray", []byte("E\x00f\x00\x62")},
		{"carray length 0", []byte("E\x00f\x00\x22\x00\x00")},
		{"struct of 0", []byte("E\x00f\x00\x81\x00")},
		{"missing format", []byte("E\x00f\x00\x82")},
		{"missing tag", []byte("E\x00f\x00\x82\x81\x00")},
	} {
		if _, err := ParseMetadata(tc.meta, false); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	// Nesting deeper than MaxDepth.
	var fields []eventheadertest.FieldDef
	for range MaxDepth + 1 {
		fields = append(fields, eventheadertest.FieldDef{Name: "s", Encoding: eventheadertest.EncStruct, Format: 1})
	}
	fields = append(fields, eventheadertest.FieldDef{Name: "v", Encoding: eventheadertest.EncValue8})
	if _, err := ParseMetadata(eventheadertest.AppendMetadata(nil, "E", fields, false), false); !errors.Is(err, ErrLimit) {
		t.Errorf("depth %d: %v", MaxDepth+1, err)
	}
	if _, err := ParseMetadata(eventheadertest.AppendMetadata(nil, "E", fields[1:], false), false); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
}

func decode(t *testing.T, big bool, fields []eventheadertest.FieldDef, payload []byte) []trace.Field {
	t.Helper()
	ev := eventheadertest.AppendEvent(nil, eventheadertest.EventDef{Header: eventheadertest.Header{Level: 1}, Name: "E;attr=1", Fields: fields, Payload: payload, BigEndian: big})
	e, err := Parse(ev)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseMetadata(e.Metadata, e.BigEndian())
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "E" || s.Attribs != ";attr=1" {
		t.Errorf("name %q attribs %q", s.Name, s.Attribs)
	}
	got, err := s.Decode(e.Payload, e.BigEndian(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestDecodeBigEndianAndStructs(t *testing.T) {
	for _, big := range []bool{false, true} {
		var bo binary.AppendByteOrder = binary.LittleEndian
		if big {
			bo = binary.BigEndian
		}
		p := bo.AppendUint16(nil, 2) // varray of 2 structs
		for i := range 2 {
			p = bo.AppendUint32(p, uint32(i+1))
			p = append(p, 'x', 0)
		}
		p = bo.AppendUint16(p, 0) // empty varray of structs: members skipped
		p = bo.AppendUint16(p, 3) // string16 "abc"
		p = bo.AppendUint16(p, 'a')
		p = bo.AppendUint16(p, 'b')
		p = bo.AppendUint16(p, 'c')
		p = bo.AppendUint64(p, math.Float64bits(-1.5))
		fields := []eventheadertest.FieldDef{
			{Name: "arr", Encoding: eventheadertest.EncStruct, Format: 2, Array: 0x40},
			{Name: "n", Encoding: eventheadertest.EncValue32},
			{Name: "s", Encoding: eventheadertest.EncZStringChar8},
			{Name: "empty", Encoding: eventheadertest.EncStruct, Format: 1, Array: 0x40},
			{Name: "skipped", Encoding: eventheadertest.EncValue64},
			{Name: "w", Encoding: eventheadertest.EncStringLen16Ch16},
			{Name: "f", Encoding: eventheadertest.EncValue64, Format: eventheadertest.FmtFloat},
		}
		got := decode(t, big, fields, p)
		want := `[{"name":"arr","value":[[{"name":"n","value":1},{"name":"s","value":"x"}],[{"name":"n","value":2},{"name":"s","value":"x"}]]},{"name":"empty","value":[]},{"name":"w","value":"abc"},{"name":"f","value":-1.5}]`
		if s := string(export.AppendFields(nil, got)); s != want {
			t.Errorf("big %v:\n got %s\nwant %s", big, s, want)
		}
	}
}

func TestNullable(t *testing.T) {
	for _, tc := range []struct {
		format uint8
		b      []byte
		want   string
	}{
		{FmtHexInt, nil, "null"},
		{FmtHexInt, []byte{1, 0}, `"0x1"`},
		{FmtPort, []byte{1, 0}, "256"},
		{FmtBoolean, []byte{1}, "true"},
		{FmtBoolean, []byte{1, 2, 3}, `"01 02 03"`},
		{FmtIPAddress, []byte{1, 0, 0, 0}, `"1.0.0.0"`},
		{FmtUUID, []byte{1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8}, `"01020304-0506-0708-0102-030405060708"`},
		{FmtErrno, []byte{1, 0, 0, 0}, `"EPERM(1)"`},
		{FmtTime, []byte{0x00, 0x94, 0x35, 0x77}, `"2033-05-18T03:33:20"`},
		{FmtString8, nil, `""`},
	} {
		v := Render(EncBinaryLen16Ch8, tc.format, tc.b, false)
		if s := string(export.AppendValue(nil, v)); s != tc.want {
			t.Errorf("format %d % x: %s, want %s", tc.format, tc.b, s, tc.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(eventheadertest.AppendEvent(nil, eventheadertest.EventDef{Header: eventheadertest.Header{Level: 1}, Name: "E", Fields: []eventheadertest.FieldDef{
		{Name: "a", Encoding: eventheadertest.EncStruct, Format: 2, Array: 0x40}, {Name: "b", Encoding: eventheadertest.EncValue32, Array: 0x20, Count: 2},
		{Name: "c", Encoding: eventheadertest.EncZStringChar16, Format: eventheadertest.FmtStringUTFBOM}}, Payload: []byte{1, 0, 1, 0, 0, 0, 2, 0, 0, 0, 'a', 0, 0, 0}}))
	f.Add(eventheadertest.AppendEvent(nil, eventheadertest.EventDef{Header: eventheadertest.Header{Level: 1}, Name: "E", Fields: []eventheadertest.FieldDef{
		{Name: "n", Encoding: eventheadertest.EncBinaryLen16Ch8, Format: eventheadertest.FmtIPAddress}}, Payload: []byte{4, 0, 1, 2, 3, 4}, BigEndian: true}))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Parse(b)
		if err != nil || e.Metadata == nil {
			return
		}
		s, err := ParseMetadata(e.Metadata, e.BigEndian())
		if err != nil {
			return
		}
		s.Specs()
		fields, _ := s.Decode(e.Payload, e.BigEndian(), nil)
		export.AppendFields(nil, fields)
	})
}

// TestSetIntAsRender checks the decoder's in-place integers against
// Render for every integer encoding and the formats it sets in place,
// in both byte orders.
func TestSetIntAsRender(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	sizes := map[uint8]int{EncValue8: 1, EncValue16: 2, EncValue32: 4, EncValue64: 8}
	for enc, n := range sizes {
		for _, format := range []uint8{FmtDefault, FmtUnsignedInt, FmtSignedInt, FmtHexInt} {
			for _, big := range []bool{false, true} {
				for range 200 {
					b := make([]byte, n)
					for i := range b {
						b[i] = byte(rng.IntN(256))
					}
					want := Render(enc, format, b, big)
					got := trace.StringValue("stale")
					setInt(&got, enc, format, b, byteOrder(big))
					if got.Kind() != want.Kind() || got.String() != want.String() {
						t.Fatalf("setInt(%d, %d, % x, big %v) = %v, Render %v", enc, format, b, big, got, want)
					}
				}
			}
		}
	}
}
