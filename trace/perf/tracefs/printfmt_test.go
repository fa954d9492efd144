package tracefs

import (
	"encoding/binary"
	"strings"
	"testing"
)

// pfFormat is a format file for the print fmt tests; the raw data of
// pfRaw fills its fields.
const pfFormat = `name: pf
ID: 7
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char comm[8];	offset:8;	size:8;	signed:0;
	field:pid_t pid;	offset:16;	size:4;	signed:1;
	field:int neg;	offset:20;	size:4;	signed:1;
	field:long state;	offset:24;	size:8;	signed:1;
	field:unsigned long args[2];	offset:32;	size:16;	signed:0;
	field:__data_loc char[] name;	offset:48;	size:4;	signed:0;
	field:__data_loc u8[] buf;	offset:52;	size:4;	signed:0;
	field:u8 mac[6];	offset:56;	size:6;	signed:0;
	field:bool flag;	offset:62;	size:1;	signed:0;
	field:unsigned char ch;	offset:63;	size:1;	signed:0;
	field:void * ptr;	offset:64;	size:8;	signed:0;
	field:__data_loc unsigned long[] mask;	offset:72;	size:4;	signed:0;

print fmt: PRINT
`

func pfRaw() []byte {
	bo := binary.LittleEndian
	raw := make([]byte, 100)
	copy(raw[8:], "sh")
	bo.PutUint32(raw[16:], 1234)
	bo.PutUint32(raw[20:], 0xFFFFFFFE) // -2
	bo.PutUint64(raw[24:], 0x102)      // D and the preempt bit
	bo.PutUint64(raw[32:], 0x7f00)
	bo.PutUint64(raw[40:], 16)
	bo.PutUint32(raw[48:], 6<<16|80) // "hello\0" at 80
	copy(raw[80:], "hello\x00")
	bo.PutUint32(raw[52:], 3<<16|86) // 3 bytes at 86
	copy(raw[86:], []byte{0xde, 0xad, 0xbf})
	copy(raw[56:], []byte{0, 0x1b, 0x21, 0xaa, 0xbb, 0xcc})
	raw[62] = 1
	raw[63] = 'x'
	bo.PutUint64(raw[64:], 0xffff8880deadbeef)
	bo.PutUint32(raw[72:], 8<<16|90) // 8 bytes at 90: CPUs 0-2, 9
	raw[90], raw[91] = 0x07, 0x02
	return raw
}

func TestPrintFmt(t *testing.T) {
	raw := pfRaw()
	for _, tc := range []struct{ fmt, want string }{
		{`"comm=%s pid=%d", REC->comm, REC->pid`, "comm=sh pid=1234"},
		{`"%d %u %ld %x %lx", REC->neg, REC->neg, REC->neg, REC->neg, REC->neg`, "-2 4294967294 4294967294 fffffffe fffffffe"},
		{`"%03d|%-5d|%5s|%-4s|%.1s|%+d|%#x|%#o|%c", REC->pid, REC->pid, REC->comm, REC->comm, REC->comm, REC->pid, 255, 8, REC->ch`, "1234|1234 |   sh|sh  |s|+1234|0xff|010|x"},
		{`"%*d|%.*s", 6, REC->pid, 3, __get_str(name)`, "  1234|hel"},
		{`"%hhd %hd %lld", 255, 65535, -1`, "-1 -1 -1"},
		{`"state=%s%s", (REC->state & 0xff) ? __print_flags(REC->state & 0xff, "|", { 0x01, "S" }, { 0x02, "D" }) : "R", REC->state & 0x100 ? "+" : ""`, "state=D+"},
		{`"%s", __print_flags(REC->state, "|", { 0x02, "D" })`, "D|0x100"},
		{`"%s", __print_flags(0, "|", { -1, "none" }, { 1, "a" })`, "none"},
		{`"%s %s", __print_symbolic(REC->pid, { 1, "one" }, { 1234, "many" }), __print_symbolic(5, { 1, "one" })`, "many 0x5"},
		{`"NR %ld (%lx, %lx)", REC->state, REC->args[0], REC->args[1]`, "NR 258 (7f00, 10)"},
		{`"%s", __get_str(name)`, "hello"},
		{`"[%s] [%s]", __print_hex(__get_dynamic_array(buf), __get_dynamic_array_len(buf)), __print_hex_str(__get_dynamic_array(buf), 2)`, "[de ad bf] [dead]"},
		{`"%s", __print_array(__get_dynamic_array(buf), 3, 1)`, "{0xde,0xad,0xbf}"},
		{`"%pM %pMR %pm", REC->mac, REC->mac, REC->mac`, "00:1b:21:aa:bb:cc cc:bb:aa:21:1b:00 001b21aabbcc"},
		{`"%p %pS %p", REC->ptr, REC->ptr, 0`, "0xffff8880deadbeef 0xffff8880deadbeef (nil)"},
		{`"%s", REC->ptr`, "ffff8880deadbeef"},
		{`"%s|%s", __get_bitmask(mask), __get_cpumask(mask)`, "00000000,00000207|0-2,9"},
		{`"%d %d %d %d %d", 7 - 2 - 1, 2 + 3 * 4, (2 + 3) * 4, 1 << 4 >> 2, 10 / 0`, "4 14 20 4 0"},
		{`"%d %d %d %d", !REC->pid, ~0, -REC->pid, REC->flag ? 10 : 20`, "0 -1 -1234 10"},
		{`"%d %d", (u8)REC->pid, (int)REC->state`, "210 258"},
		{`"%d", sizeof(long) + sizeof(REC->pid) + sizeof(u16)`, "14"},
		{`"%d %c", 'A', 'B'`, "65 B"},
		{`"%s", REC->flag ? "true" : "false"`, "true"},
		{`"a\tb\\c\"d %% %f", 1`, "a\tb\\c\"d % >f<"},
		{`"x" "y%d" "z", 1`, "xy1z"},
		{`"%d", __builtin_expect(REC->pid, 0)`, "1234"},
		{`"%d", (REC)->pid`, "1234"},
		{`"%s", REC->nosuch`, ""},
		// Unsupported: libtraceevent's "[FAILED TO PARSE]" and the raw
		// fields (a u8 array is text to it, empty when it starts with 0).
		{`"%d", jiffies_to_msecs(REC->pid)`, "[FAILED TO PARSE] comm=sh pid=1234 neg=-2 state=258 args=ARRAY[00, 7f, 00, 00, 00, 00, 00, 00, 10, 00, 00, 00, 00, 00, 00, 00] name=hello buf=ARRAY[de, ad, bf] mac= flag=1 ch=120 ptr=0xffff8880deadbeef mask=ARRAY[07, 02, 00, 00, 00, 00, 00, 00]"},
		{`"%d %d", 1`, "[FAILED TO PARSE]"},
		{`"%d", ({ 1; })`, "[FAILED TO PARSE]"},
		{`"	x=%d", 1`, "[FAILED TO PARSE]"},
	} {
		e, err := ParseFormat("s", strings.Replace(pfFormat, "PRINT", tc.fmt, 1), 8)
		if err != nil {
			t.Fatal(err)
		}
		got := e.Label(raw, binary.LittleEndian)
		if tc.want == failedText && strings.HasPrefix(got, failedText+" ") {
			got = failedText
		}
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q (err %q)", tc.fmt, got, tc.want, e.Print.Err())
		}
	}
}

// TestPrintFmtBounds checks the caps on hostile formats: huge widths,
// deep nesting, long output.
func TestPrintFmtBounds(t *testing.T) {
	raw := pfRaw()
	deep := strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000)
	for _, f := range []string{
		`"%1000000d", 1`,
		`"%s", ` + deep,
		`"%d", ` + strings.Repeat("-", 100000) + "1",
		`"` + strings.Repeat("%s", 5000) + `"` + strings.Repeat(`, __get_str(name)`, 5000),
		`"%s", __print_hex(REC->comm, 100000)`,
		`"%s", __print_array(REC->comm, 4000000000, 8)`,
	} {
		e, err := ParseFormat("s", strings.Replace(pfFormat, "PRINT", f, 1), 8)
		if err != nil {
			t.Fatal(err)
		}
		if out := e.Print.Append(nil, raw, binary.LittleEndian); len(out) > MaxOutput {
			t.Errorf("%.40s…: %d bytes", f, len(out))
		}
	}
}

func FuzzPrintFmt(f *testing.F) {
	f.Add(`"comm=%s pid=%d state=%s", REC->comm, REC->pid, REC->state ? __print_flags(REC->state, "|", { 1, "S" }, { 2, "D" }) : "R"`, pfRaw())
	f.Add(`"%*ph %pM %s %s", 3, __get_dynamic_array(buf), REC->mac, __get_cpumask(mask), __print_symbolic(REC->pid, { 1, "a" })`, pfRaw())
	f.Add(`"%d", (u8 *)REC->args[1] + sizeof(int) * -(1 ? 2 : 3)`, []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, pf string, raw []byte) {
		e, err := ParseFormat("s", strings.Replace(pfFormat, "PRINT", pf, 1), 8)
		if err != nil {
			return
		}
		for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			if out := e.Print.Append(nil, raw, bo); len(out) > MaxOutput {
				t.Fatalf("%d bytes of output", len(out))
			}
		}
	})
}
