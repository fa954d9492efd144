package tracefs

import (
	"encoding/binary"
	"strconv"
	"strings"
	"testing"

	"viewer/trace"
)

const testFormat = `name: test_event
ID: 42
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char comm[8];	offset:8;	size:8;	signed:0;
	field:long l;	offset:16;	size:LONG;	signed:1;
	field:unsigned long ul;	offset:LO2;	size:LONG;	signed:0;
	field:void * ptr;	offset:LO3;	size:LONG;	signed:0;
	field:__data_loc char[] name;	offset:LO4;	size:4;	signed:0;
	field:__rel_loc u8[] blob;	offset:LO5;	size:4;	signed:0;
	field:pid_t pid;	offset:LO6;	size:4;	signed:1;
	field:u16 arr[3];	offset:LO7;	size:6;	signed:0;
	field:unsigned int forced;	offset:LO8;	size:4;	signed:1;
	field:struct foo s;	offset:LO9;	size:2;	signed:0;

print fmt: "comm=%s", REC->comm
`

// layout builds testFormat for a word size and the matching raw bytes.
func layout(t *testing.T, long int, bo binary.ByteOrder) (*Event, []byte) {
	t.Helper()
	offs := map[string]int{}
	off := 16
	for _, f := range []struct {
		key  string
		size int
	}{{"LONG", 0}, {"LO2", long}, {"LO3", long}, {"LO4", long}, {"LO5", 4}, {"LO6", 4}, {"LO7", 4}, {"LO8", 6}, {"LO9", 4}} {
		off += f.size
		offs[f.key] = off
	}
	text := testFormat
	for k, v := range offs {
		if k == "LONG" {
			continue
		}
		text = strings.ReplaceAll(text, "offset:"+k+";", "offset:"+strconv.Itoa(v)+";")
	}
	text = strings.ReplaceAll(text, "size:LONG;", "size:"+strconv.Itoa(long)+";")
	e, err := ParseFormat("sys", text, long)
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, offs["LO9"]+2)
	bo.PutUint16(raw, 42)
	copy(raw[8:], "abc")
	put := func(o int, v uint64, n int) {
		switch n {
		case 2:
			bo.PutUint16(raw[o:], uint16(v))
		case 4:
			bo.PutUint32(raw[o:], uint32(v))
		case 8:
			bo.PutUint64(raw[o:], v)
		}
	}
	minus2 := uint64(0xFFFFFFFFFFFFFFFE)
	put(16, minus2, long)
	put(offs["LO2"], 0xABCD, long)
	put(offs["LO3"], 0x1000, long)
	put(offs["LO6"], 0x950, 4)
	put(offs["LO7"], 1, 2)
	put(offs["LO7"]+2, 2, 2)
	put(offs["LO7"]+4, 3, 2)
	put(offs["LO8"], 0xFFFFFFFF, 4)
	raw[offs["LO9"]], raw[offs["LO9"]+1] = 0xde, 0xad
	// dynamic data after the fixed part
	name := len(raw)
	raw = append(raw, "hello\x00"...)
	put(offs["LO4"], uint64(6<<16|name), 4)
	blob := len(raw)
	raw = append(raw, 7, 8, 9)
	put(offs["LO5"], uint64(3<<16|(blob-(offs["LO5"]+4))), 4)
	return e, raw
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		long int
		bo   binary.ByteOrder
	}{{8, binary.LittleEndian}, {4, binary.LittleEndian}, {8, binary.BigEndian}, {4, binary.BigEndian}} {
		e, raw := layout(t, tc.long, tc.bo)
		if e.ID != 42 || e.Common != 4 || e.PrintFmt != `"comm=%s", REC->comm` {
			t.Fatalf("parsed %+v", e)
		}
		got := e.Decode(raw, tc.bo, nil)
		want := []trace.Field{
			{Name: "comm", Value: trace.StringValue("abc")},
			{Name: "l", Value: trace.IntValue(-2)},
			{Name: "ul", Value: trace.HexValue(0xABCD)},
			{Name: "ptr", Value: trace.HexValue(0x1000)},
			{Name: "name", Value: trace.StringValue("hello")},
			{Name: "blob", Value: trace.ArrayValue([]trace.Value{trace.UintValue(7), trace.UintValue(8), trace.UintValue(9)})},
			{Name: "pid", Value: trace.IntValue(0x950)},
			{Name: "arr", Value: trace.ArrayValue([]trace.Value{trace.UintValue(1), trace.UintValue(2), trace.UintValue(3)})},
			{Name: "forced", Value: trace.IntValue(-1)},
			{Name: "s", Value: trace.BytesValue([]byte{0xde, 0xad})},
		}
		if len(got) != len(want) {
			t.Fatalf("long %d: %d fields, want %d", tc.long, len(got), len(want))
		}
		for i := range want {
			if got[i].Name != want[i].Name || got[i].Value.String() != want[i].Value.String() || got[i].Value.Kind() != want[i].Value.Kind() {
				t.Errorf("long %d %v: field %d = %s %v (%v), want %s %v (%v)", tc.long, tc.bo, i, got[i].Name, got[i].Value, got[i].Value.Kind(), want[i].Name, want[i].Value, want[i].Value.Kind())
			}
		}
		// Cut short: every field whose bytes are missing decodes to null.
		short := e.Decode(raw[:12], tc.bo, nil)
		for _, f := range short[1:] {
			if k := f.Value.Kind(); k != trace.KindBad && !(k == trace.KindString && f.Value.Str() == "") && !(k == trace.KindArray && len(f.Value.Fields()) == 0) {
				t.Errorf("long %d: cut-short field %s = %v", tc.long, f.Name, f.Value)
			}
		}
	}
}

func TestDataLocSize2(t *testing.T) {
	e, err := ParseFormat("s", "name: x\nID: 1\nformat:\n\tfield:__data_loc char[] s;\toffset:0;\tsize:2;\tsigned:0;\n\nprint fmt: \"\"\n", 8)
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte{2, 0, 'h', 'i', 0}
	if got := e.Fields[0].Value(raw, binary.LittleEndian); got.Str() != "hi" {
		t.Errorf("got %v", got)
	}
	if got := e.Fields[0].Value(raw[:4], binary.LittleEndian); got.Str() != "" {
		t.Errorf("unterminated: got %v", got)
	}
}

func TestParseFormatErrors(t *testing.T) {
	for _, text := range []string{"", "name: x\n", "ID: 5\n", "name: x\nID: zz\n"} {
		if _, err := ParseFormat("s", text, 8); err == nil {
			t.Errorf("ParseFormat(%q) succeeded", text)
		}
	}
}

func FuzzParseFormat(f *testing.F) {
	f.Add(testFormat, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add("name: x\nID: 1\nformat:\n\tfield:__rel_loc char[] s;\toffset:0;\tsize:4;\tsigned:0;\n", []byte{0, 0, 255, 255})
	f.Fuzz(func(t *testing.T, text string, raw []byte) {
		for _, long := range []int{4, 8} {
			e, err := ParseFormat("s", text, long)
			if err != nil {
				continue
			}
			e.Decode(raw, binary.LittleEndian, nil)
			e.Decode(raw, binary.BigEndian, nil)
			e.Specs()
		}
		ParseTracingData(raw)
	})
}
