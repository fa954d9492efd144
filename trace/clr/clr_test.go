package clr

import (
	"encoding/binary"
	"testing"
	"unicode/utf16"

	"viewer/trace"
)

func TestLookupNames(t *testing.T) {
	s := NewSchema()
	tests := []struct {
		provider string
		id, ver  int
		name     string
		wantVer  int
	}{
		{"Microsoft-Windows-DotNETRuntime", 1, 2, "GC/Start", 2},
		{"microsoft-windows-dotnetruntime", 1, 9, "GC/Start", 2}, // newer than known: newest known
		{"Microsoft-Windows-DotNETRuntime", 143, 1, "Method/LoadVerbose", 1},
		{"Microsoft-Windows-DotNETRuntimeRundown", 144, 1, "Method/DCStopVerbose", 1},
		{"Microsoft-Windows-DotNETRuntimeRundown", 154, 1, "Loader/ModuleDCStop", 1},
		{"Microsoft-Windows-DotNETRuntime", 187, 0, "Runtime/Start", 0},
		{"Microsoft-Windows-DotNETRuntime", 7, 1, "GC/RestartEEStart", 1},
		{"Microsoft-Windows-DotNETRuntime", 80, 1, "Exception/Start", 1},
		{"e13c0d23-ccbc-4e12-931b-d9cc2eee27e4", 10, 2, "GC/AllocationTick", 2},
		{"Microsoft-DotNETCore-SampleProfiler", 0, 0, "Thread/Sample", 0},
	}
	for _, tt := range tests {
		e, ok := s.Lookup(tt.provider, tt.id, tt.ver)
		if !ok || e.Name != tt.name || e.Version != tt.wantVer {
			t.Errorf("Lookup(%s, %d, %d) = %+v, %v; want %s v%d", tt.provider, tt.id, tt.ver, e, ok, tt.name, tt.wantVer)
		}
	}
	if _, ok := s.Lookup("Microsoft-Windows-DotNETRuntime", 65000, 0); ok {
		t.Error("unknown id found")
	}
	if _, ok := s.Lookup("MySource", 1, 0); ok {
		t.Error("unknown provider found")
	}
}

func utf16z(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return append(b, 0, 0)
}

func TestDecodeGCStart(t *testing.T) {
	e, _ := NewSchema().Lookup("Microsoft-Windows-DotNETRuntime", 1, 2)
	var p []byte
	p = binary.LittleEndian.AppendUint32(p, 7)  // Count
	p = binary.LittleEndian.AppendUint32(p, 1)  // Depth
	p = binary.LittleEndian.AppendUint32(p, 1)  // Reason: Induced
	p = binary.LittleEndian.AppendUint32(p, 0)  // Type: NonConcurrentGC
	p = binary.LittleEndian.AppendUint16(p, 3)  // ClrInstanceID
	p = binary.LittleEndian.AppendUint64(p, 99) // ClientSequenceNumber
	long := append(append([]byte(nil), p...), 1, 2, 3)

	d := Decode(e.Fields, long, 8)
	got := string(trace.AppendFieldsJSON(nil, d.Fields))
	want := `[{"name":"Count","value":7},{"name":"Depth","value":1},{"name":"Reason","value":"Induced"},` +
		`{"name":"Type","value":"NonConcurrentGC"},{"name":"ClrInstanceID","value":3},{"name":"ClientSequenceNumber","value":99}]`
	if got != want || d.Used != len(p) || d.Short {
		t.Errorf("Decode = %s used %d short %v\nwant %s used %d", got, d.Used, d.Short, want, len(p))
	}
	// An older runtime's shorter payload decodes the fields that are there.
	d = Decode(e.Fields, p[:18], 8)
	if len(d.Fields) != 5 || !d.Short {
		t.Errorf("short payload: %d fields, short %v", len(d.Fields), d.Short)
	}
}

func TestDecodeStringsArraysPointers(t *testing.T) {
	fields := []Field{
		{Name: "Name", Type: UTF16},
		{Name: "Addr", Type: Pointer},
		{Name: "N", Type: UInt16},
		{Name: "Vals", Type: Struct, CountField: "N", Fields: []Field{{Name: "A", Type: UInt8}, {Name: "S", Type: ANSI}}},
		{Name: "Fixed", Type: UInt32, Count: 2, Hex: true},
	}
	var p []byte
	p = append(p, utf16z("héllo")...)
	p = binary.LittleEndian.AppendUint32(p, 0xdeadbeef) // 4-byte pointer
	p = binary.LittleEndian.AppendUint16(p, 2)
	p = append(p, 5, 'x', 0, 6, 'y', 'z', 0)
	p = binary.LittleEndian.AppendUint32(p, 1)
	p = binary.LittleEndian.AppendUint32(p, 255)
	d := Decode(fields, p, 4)
	got := string(trace.AppendFieldsJSON(nil, d.Fields))
	want := `[{"name":"Name","value":"héllo"},{"name":"Addr","value":"0xdeadbeef"},{"name":"N","value":2},` +
		`{"name":"Vals","value":[[{"name":"A","value":5},{"name":"S","value":"x"}],[{"name":"A","value":6},{"name":"S","value":"yz"}]]},` +
		`{"name":"Fixed","value":["0x1","0xff"]}]`
	if got != want || d.Short || d.Used != len(p) {
		t.Errorf("got %s short %v used %d/%d\nwant %s", got, d.Short, d.Used, len(p), want)
	}
}

// TestDecodeHostileCount checks that a count larger than the payload is
// refused before anything is allocated for it.
func TestDecodeHostileCount(t *testing.T) {
	fields := []Field{{Name: "N", Type: UInt32}, {Name: "V", Type: UInt64, CountField: "N"}}
	p := binary.LittleEndian.AppendUint32(nil, 0xffffffff)
	allocs := testing.AllocsPerRun(10, func() { Decode(fields, p, 8) })
	d := Decode(fields, p, 8)
	if !d.Short || len(d.Fields) != 1 || allocs > 5 {
		t.Errorf("hostile count: short %v fields %d allocs %v", d.Short, len(d.Fields), allocs)
	}
}

func TestBitMap(t *testing.T) {
	m := &Map{Bits: true, Entries: []MapEntry{{1, "A"}, {4, "C"}}}
	if s, _ := m.Text(5 | 8); s != "A|C|0x8" {
		t.Errorf("bits = %q", s)
	}
}

func FuzzDecode(f *testing.F) {
	s := NewSchema()
	f.Add(1, 2, []byte{1, 0, 0, 0, 2, 0, 0, 0})
	f.Add(143, 1, []byte{})
	f.Fuzz(func(t *testing.T, id, ver int, payload []byte) {
		for _, p := range []string{"Microsoft-Windows-DotNETRuntime", "Microsoft-Windows-DotNETRuntimeRundown"} {
			if e, ok := s.Lookup(p, id&0x3ff, ver&3); ok {
				d := Decode(e.Fields, payload, 4+4*(ver&1))
				if d.Used > len(payload) {
					t.Fatalf("used %d of %d", d.Used, len(payload))
				}
			}
		}
	})
}
