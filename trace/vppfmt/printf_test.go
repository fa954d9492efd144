package vppfmt

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"viewer/symbols"
)

// TestCPrintfGolden checks the C dialect against glibc: every line of
// testdata/cprintf.golden (made by testdata/cprintf.c) is a format, a
// 32-bit datum and what snprintf printed.
func TestCPrintfGolden(t *testing.T) {
	f, err := os.Open("testdata/cprintf.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("bad golden line %q", sc.Text())
		}
		v, err := strconv.ParseUint(parts[1], 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		got := string(Printer{}.Append(nil, parts[0], Uint(v, 32)))
		if got != parts[2] {
			t.Errorf("C %q of %d = %q, want %q", parts[0], v, got, parts[2])
		}
		if got := string(Printer{}.Compile(parts[0]).Append(nil, Uint(v, 32))); got != parts[2] {
			t.Errorf("compiled C %q of %d = %q, want %q", parts[0], v, got, parts[2])
		}
		n++
	}
	if n < 800 {
		t.Fatalf("only %d golden lines", n)
	}
}

func TestPrintf(t *testing.T) {
	syms := symbols.NewTable([]symbols.Symbol{{Value: 0x402400, Name: "dispatch_node"}, {Value: 0x401000, Name: "main"}, {Value: 0x403800, Name: "ip4_lookup_inline"}})
	c := Printer{Symbols: syms}
	vpp := Printer{Dialect: VPP}
	tests := []struct {
		p      Printer
		format string
		args   []Arg
		want   string
	}{
		// Strings (CPEL %s resolved by the caller, elog string arguments).
		{c, "%s", []Arg{String("pid:1 tid:1")}, "pid:1 tid:1"},
		{c, "name=%s!", []Arg{String("x")}, "name=x!"},
		{c, "%8s|", []Arg{String("abc")}, "     abc|"},
		{c, "%-8s|", []Arg{String("abc")}, "abc     |"},
		{c, "%.2s|", []Arg{String("abc")}, "ab|"},
		{c, "%5.1s|", []Arg{String("abc")}, "    a|"},
		{c, "%.0s|", []Arg{String("abc")}, "|"},
		{c, "%s", []Arg{String("%d %s %n")}, "%d %s %n"}, // a string argument is data
		// %k: nearest symbol at or below.
		{c, "%k", []Arg{Uint(0x402468, 32)}, "dispatch_node+0x68"},
		{c, "%k", []Arg{Uint(0x402400, 32)}, "dispatch_node"},
		{c, "%k", []Arg{Uint(0x400fff, 32)}, "0x400fff"},
		{c, "%k", []Arg{Uint(0xffffffff, 32)}, "ip4_lookup_inline+0xffbfc7ff"},
		{c, "%-20k|", []Arg{Uint(0x401001, 32)}, "main+0x1            |"},
		{Printer{}, "%k", []Arg{Uint(0x401000, 32)}, "0x401000"},
		// Several directives: one datum.
		{c, "%d %d", []Arg{Uint(5, 32)}, "5 %!d(MISSING)"},
		{c, "%s=%x", []Arg{String("a")}, "a=%!x(MISSING)"},
		{c, "%d", nil, "%!d(MISSING)"},
		{c, "plain", []Arg{Uint(1, 32)}, "plain"},
		{c, "", []Arg{Uint(1, 32)}, ""},
		// Malformed and unsupported.
		{c, "%", []Arg{Uint(1, 32)}, "%!(NOVERB)"},
		{c, "abc%-08", []Arg{Uint(1, 32)}, "abc%!(NOVERB)"},
		{c, "%y", []Arg{Uint(7, 32)}, "%!y(uint32=7)"},
		{c, "%q", []Arg{Uint(7, 32)}, "%!(NOVERB)"}, // q is a length modifier
		{c, "%n", []Arg{Uint(7, 32)}, "%!n(uint32=7)"},
		{c, "%*d", []Arg{Uint(7, 32)}, "%!d(STAR)"},
		{c, "%.*d", []Arg{Uint(7, 32)}, "%!d(STAR)"},
		{c, "%f", []Arg{Uint(7, 32)}, "%!f(uint32=7)"},
		{c, "%d", []Arg{String("x")}, "%!d(string=x)"},
		{c, "%s", []Arg{Uint(3, 32)}, "%!s(uint32=3)"},
		{c, "%S", []Arg{String("a_b")}, "%!S(string=a_b)"},
		{c, "%\x00", []Arg{Uint(3, 32)}, "%!(uint32=3)"},
		// Caps.
		{c, "%1000d|", []Arg{Uint(1, 32)}, strings.Repeat(" ", MaxWidth-1) + "1|"},
		{c, "%.99999999999999999999d", []Arg{Uint(1, 32)}, strings.Repeat("0", MaxWidth-1) + "1"},
		{c, "%99999999999999999999999999s", []Arg{String("x")}, strings.Repeat(" ", MaxWidth-1) + "x"},
		// C floats get float arguments only from elog, but work.
		{c, "%.2f", []Arg{Float(0.5)}, "0.50"},
		{c, "%08.3f", []Arg{Float(-1.5)}, "-001.500"},
		{c, "%e", []Arg{Float(12345.678)}, "1.234568e+04"},
		{c, "%g", []Arg{Float(0.0001)}, "0.0001"},
		{c, "%G", []Arg{Float(1e20)}, "1E+20"},
		// Signed 64-bit.
		{c, "%lld", []Arg{Int(-5)}, "-5"},
		{c, "%d", []Arg{Int(-5)}, "-5"},
		{c, "%lu", []Arg{Int(-1)}, "18446744073709551615"},
		// VPP dialect (vppinfra format()).
		{vpp, "rx(%d): %d", []Arg{Uint(1, 32), Uint(3, 32)}, "rx(1): 3"},
		{vpp, "%d", []Arg{Uint(0xfffffffe, 32)}, "-2"},
		{vpp, "%x", []Arg{Uint(0xdeadbeef, 32)}, "deadbeef"},
		{vpp, "%X", []Arg{Uint(0xdeadbeef, 32)}, "DEADBEEF"},
		{vpp, "%u", []Arg{Uint(0xffffffff, 32)}, "4294967295"},
		{vpp, "%Lu", []Arg{Uint(13257, 64)}, "13257"},
		{vpp, "0x%Lx", []Arg{Uint(0x6a03b5047a5265b7, 64)}, "0x6a03b5047a5265b7"},
		{vpp, "%lld", []Arg{Uint(1<<63, 64)}, "-9223372036854775808"},
		{vpp, "%x", []Arg{Uint(0x123456789, 64)}, "23456789"},
		{vpp, "%5d|", []Arg{Uint(42, 32)}, "   42|"},
		{vpp, "%-5d|", []Arg{Uint(42, 32)}, "42   |"},
		{vpp, "%=6d|", []Arg{Uint(42, 32)}, "  42  |"},
		{vpp, "%=5d|", []Arg{Uint(42, 32)}, "  42 |"},
		{vpp, "%05d", []Arg{Uint(42, 32)}, "00042"},
		{vpp, "%05d", []Arg{Int(-5)}, "000-5"},      // vppinfra pads before the sign
		{vpp, "%3d", []Arg{Uint(12345, 32)}, "123"}, // widths truncate
		{vpp, "%-24s|", []Arg{String("main thread")}, "main thread             |"},
		{vpp, "%4s", []Arg{String("abcdef")}, "abcd"},
		{vpp, "%.2s", []Arg{String("abcdef")}, "ab"},
		{vpp, "%S", []Arg{String("a_b_c")}, "a b c"},
		{vpp, "%c", []Arg{Uint('A', 8)}, "A"},
		{vpp, "%p", []Arg{Uint(0, 64)}, "0x0"},
		{vpp, "%.2f", []Arg{Float(35.97)}, "35.97"},
		{vpp, "%.6f", []Arg{Float(0.309299)}, ".309299"},
		{vpp, "%.6f", []Arg{Float(-0.25)}, "-.250000"},
		{vpp, "%.2f", []Arg{Float(0)}, "0.00"},
		{vpp, "%.2f", []Arg{Float(0.001)}, "0.00"},
		{vpp, "%f", []Arg{Float(1)}, "1.000000"},
		{vpp, "%18.9f", []Arg{Float(13.498001891)}, "      13.498001891"},
		{vpp, "%18.9f", []Arg{Float(0.000001728)}, "        .000001728"},
		{vpp, "%i", []Arg{Uint(1, 32)}, "%!i(uint32=1)"},
		{vpp, "%#x", []Arg{Uint(1, 32)}, "%!#(uint32=1)x"}, // vppinfra has no # flag
		{vpp, "%%", nil, "%"},
		{vpp, "%d", []Arg{Float(1)}, "%!d(float64=1)"},
	}
	for _, tt := range tests {
		got := string(tt.p.Append(nil, tt.format, tt.args...))
		if got != tt.want {
			t.Errorf("dialect %d %q %v = %q, want %q", tt.p.Dialect, tt.format, tt.args, got, tt.want)
		}
		if got := string(tt.p.Compile(tt.format).Append(nil, tt.args...)); got != tt.want {
			t.Errorf("compiled: dialect %d %q %v = %q, want %q", tt.p.Dialect, tt.format, tt.args, got, tt.want)
		}
	}
}

func TestVerbs(t *testing.T) {
	p := Printer{}
	if v := string(p.Verbs("%d %% %-08.3lx %s")); v != "dxs" {
		t.Errorf("Verbs = %q", v)
	}
	if v := p.FirstVerb("100%% %s"); v != 's' {
		t.Errorf("FirstVerb = %q", v)
	}
	if v := p.FirstVerb("no directive"); v != 0 {
		t.Errorf("FirstVerb = %q", v)
	}
}

func TestMaxOutput(t *testing.T) {
	f := strings.Repeat("%64s", 200)
	args := make([]Arg, 200)
	for i := range args {
		args[i] = String("x")
	}
	if n := len(Printer{}.Append(nil, f, args...)); n != MaxOutput {
		t.Errorf("output %d bytes, want the cap %d", n, MaxOutput)
	}
	long := strings.Repeat("y", 3*MaxOutput)
	if n := len(Printer{}.Append(nil, "%s", String(long))); n != MaxOutput {
		t.Errorf("output %d bytes, want the cap %d", n, MaxOutput)
	}
	for _, f := range []string{"%s", "x%sy", "%u"} {
		for _, arg := range []Arg{String(long), String(long[:MaxOutput/2]), String(long[:MaxOutput-1]), Uint(7, 32)} {
			direct := Printer{}.Append(nil, f, arg)
			if c := (Printer{}).Compile(f).Append(nil, arg); string(c) != string(direct) {
				t.Errorf("%q of %d bytes: compiled %d bytes, direct %d", f, len(arg.s), len(c), len(direct))
			}
		}
	}
}

func FuzzPrintf(f *testing.F) {
	for _, s := range []string{"%d", "%-08.3lx", "%s %k", "%", "%*d", "len %u", "%#o", "%=5d", "%.9f", "%hhd%%"} {
		f.Add(s, uint64(7), "str", 0.5, false)
	}
	syms := symbols.NewTable([]symbols.Symbol{{Value: 0x1000, Name: "a"}, {Value: 0x2000, Name: "b"}})
	f.Fuzz(func(t *testing.T, format string, n uint64, s string, x float64, vpp bool) {
		p := Printer{Symbols: syms}
		if vpp {
			p.Dialect = VPP
		}
		out := p.Append(nil, format, Uint(n, 64), String(s), Float(x), Int(int64(n)))
		if c := p.Compile(format).Append(nil, Uint(n, 64), String(s), Float(x), Int(int64(n))); string(c) != string(out) {
			t.Fatalf("compiled %q, direct %q", c, out)
		}
		if len(out) > MaxOutput {
			t.Fatalf("output %d bytes", len(out))
		}
		// Text outside directives comes through unchanged.
		if !strings.Contains(format, "%") && string(out) != format[:min(len(format), MaxOutput)] {
			t.Fatalf("literal format %q rendered %q", format, out)
		}
		_ = utf8.Valid(out)
	})
}
