// Package vppfmt formats the printf-style label formats of VPP event logs:
// CPEL's event and track formats (C printf as cpeldump and g2 apply it)
// and elog's event formats (vppinfra's format(), as elog_dump applies it).
//
// # Security
//
// Formats come from untrusted files. They are interpreted here, never passed
// to fmt: widths and precisions are capped at [MaxWidth], one call writes at
// most [MaxOutput] bytes, and a directive that cannot be honoured is shown
// in the output (%!q(…), %!d(MISSING)) instead of being guessed at.
package vppfmt

import (
	"math"
	"strconv"
	"strings"

	"viewer/symbols"
)

// MaxWidth caps the width and the precision of one directive; larger values
// in a format are clamped to it.
const MaxWidth = 64

// MaxOutput caps what one [Printer.Append] call writes.
const MaxOutput = 1024

// Dialect selects the printf semantics of the program that wrote a trace's
// formats.
type Dialect uint8

const (
	// C is C printf as cpeldump and g2 apply it to CPEL datums and track
	// formats: flags "-+ #0", precision as minimum digits, widths that pad.
	C Dialect = iota
	// VPP is vppinfra's format() as elog_dump and g2 apply it to elog
	// events: one of "-+=" (left, right, centre), '0' padding, widths that
	// also truncate, floats without a leading zero ("%.2f" of 0.5 is ".50").
	VPP
)

// argKind says what an [Arg] holds.
type argKind uint8

const (
	argMissing argKind = iota
	argInt             // signed integer
	argUint            // unsigned integer
	argFloat
	argString
)

// Arg is one argument of a format.
type Arg struct {
	kind argKind
	bits uint8 // width of an integer as stored (8, 16, 32, 64)
	n    uint64
	f    float64
	s    string
}

// Uint returns an unsigned integer argument that was stored in bits bits
// (32 for a CPEL datum).
func Uint(v uint64, bits int) Arg { return Arg{kind: argUint, bits: uint8(bits), n: v} }

// Int returns a signed integer argument.
func Int(v int64) Arg { return Arg{kind: argInt, bits: 64, n: uint64(v)} }

// Float returns a floating-point argument.
func Float(f float64) Arg { return Arg{kind: argFloat, f: f} }

// String returns a string argument.
func String(s string) Arg { return Arg{kind: argString, s: s} }

// appendDebug appends the argument as fmt does in its error markers:
// "uint32=7", "string=abc".
func (a Arg) appendDebug(dst []byte) []byte {
	switch a.kind {
	case argInt:
		dst = append(dst, "int"...)
		dst = strconv.AppendInt(dst, int64(a.bits), 10)
		dst = append(dst, '=')
		return strconv.AppendInt(dst, int64(a.n), 10)
	case argUint:
		dst = append(dst, "uint"...)
		dst = strconv.AppendInt(dst, int64(a.bits), 10)
		dst = append(dst, '=')
		return strconv.AppendUint(dst, a.n, 10)
	case argFloat:
		dst = append(dst, "float64="...)
		return strconv.AppendFloat(dst, a.f, 'g', -1, 64)
	case argString:
		dst = append(dst, "string="...)
		return appendCapped(dst, a.s, MaxWidth)
	}
	return append(dst, "MISSING"...)
}

// Printer formats trace-supplied printf-style formats.
type Printer struct {
	Dialect Dialect
	// Symbols resolves %k; without it %k prints the value in hex.
	Symbols *symbols.Table
}

// directive is one parsed conversion.
type directive struct {
	minus, plus, space, sharp, zero, center bool
	width, prec                             int // prec -1 when absent
	length                                  string
	verb                                    byte
	bad                                     string // non-empty: render this marker reason
	plain                                   bool   // no flags, width, precision or length
}

// Verbs returns the conversion letters of format's directives in order
// ("%%" excluded), as the dialect parses them.
func (p Printer) Verbs(format string) []byte {
	var vs []byte
	for i := 0; i < len(format); {
		if format[i] != '%' {
			i++
			continue
		}
		d, n := p.parse(format[i:])
		i += n
		if d.verb != '%' {
			vs = append(vs, d.verb)
		}
	}
	return vs
}

// FirstVerb returns the conversion letter of format's first directive
// ("%%" excluded), or 0 when it has none.
func (p Printer) FirstVerb(format string) byte {
	for i := 0; i < len(format); {
		if format[i] != '%' {
			i++
			continue
		}
		d, n := p.parse(format[i:])
		i += n
		if d.verb != '%' {
			return d.verb
		}
	}
	return 0
}

// Append appends format rendered with args to dst. Directives without an
// argument render as %!v(MISSING); arguments without a directive are
// ignored.
func (p Printer) Append(dst []byte, format string, args ...Arg) []byte {
	start := len(dst)
	for i := 0; i < len(format); {
		if len(dst)-start >= MaxOutput {
			break
		}
		j := strings.IndexByte(format[i:], '%')
		if j < 0 {
			dst = append(dst, format[i:]...)
			break
		}
		dst = append(dst, format[i:i+j]...)
		i += j
		d, n := p.parse(format[i:])
		i += n
		dst, args = p.appendOne(dst, &d, args)
	}
	if len(dst)-start > MaxOutput {
		dst = dst[:start+MaxOutput]
	}
	return dst
}

// appendOne renders one directive, consuming its argument.
func (p *Printer) appendOne(dst []byte, d *directive, args []Arg) ([]byte, []Arg) {
	if d.verb == '%' && d.bad == "" {
		return append(dst, '%'), args
	}
	var a Arg
	if d.bad == "" && len(args) > 0 {
		a, args = args[0], args[1:]
	}
	return p.appendDirective(dst, d, a), args
}

// Format is a parsed format, for rendering many arguments with it.
type Format struct {
	p      Printer
	pieces []piece
	tail   string // literal text after the last directive
	simple bool   // one plain %d, %u, %x or %s and short literals
}

// piece is literal text and the directive that follows it.
type piece struct {
	lit string
	d   directive
}

// Compile parses format once for [Format.Append].
func (p Printer) Compile(format string) *Format {
	f := &Format{p: p}
	for i := 0; i < len(format); {
		j := strings.IndexByte(format[i:], '%')
		if j < 0 {
			f.tail = format[i:]
			break
		}
		lit := format[i : i+j]
		i += j
		d, n := p.parse(format[i:])
		i += n
		f.pieces = append(f.pieces, piece{lit: lit, d: d})
	}
	if len(f.pieces) == 1 {
		pc := &f.pieces[0]
		f.simple = pc.d.plain && pc.d.bad == "" && strings.IndexByte("dusx", pc.d.verb) >= 0 &&
			len(pc.lit)+len(f.tail) <= MaxOutput/2
	}
	return f
}

// FirstVerb returns the conversion letter of the first directive ("%%"
// excluded), or 0 when there is none.
func (f *Format) FirstVerb() byte {
	for _, pc := range f.pieces {
		if pc.d.verb != '%' {
			return pc.d.verb
		}
	}
	return 0
}

// Append appends the format rendered with args to dst, as
// [Printer.Append] does.
func (f *Format) Append(dst []byte, args ...Arg) []byte {
	if f.simple && len(args) > 0 {
		// The common one-directive formats ("len %u", "%s"), inline.
		pc, a := &f.pieces[0], &args[0]
		switch {
		case a.kind == argString && pc.d.verb == 's' && len(a.s) <= MaxOutput/2:
			dst = append(dst, pc.lit...)
			dst = append(dst, a.s...)
			return append(dst, f.tail...)
		case a.kind == argUint || a.kind == argInt:
			dst = append(dst, pc.lit...)
			switch pc.d.verb {
			case 'u':
				dst = strconv.AppendUint(dst, uint64(uint32(a.n)), 10)
			case 'x':
				dst = strconv.AppendUint(dst, uint64(uint32(a.n)), 16)
			case 'd':
				dst = strconv.AppendInt(dst, int64(int32(uint32(a.n))), 10)
			default:
				dst = f.p.appendDirective(dst, &pc.d, *a)
			}
			return append(dst, f.tail...)
		}
	}
	start := len(dst)
	for i := range f.pieces {
		if len(dst)-start >= MaxOutput {
			break
		}
		pc := &f.pieces[i]
		dst = append(dst, pc.lit...)
		dst, args = f.p.appendOne(dst, &pc.d, args)
	}
	dst = append(dst, f.tail...)
	if len(dst)-start > MaxOutput {
		dst = dst[:start+MaxOutput]
	}
	return dst
}

// parse parses the directive at the start of s (s[0] == '%') and returns
// it with the number of bytes it spans.
func (p Printer) parse(s string) (directive, int) {
	d := directive{prec: -1}
	i := 1
	if p.Dialect == VPP {
		if i < len(s) && s[i] == '%' {
			d.verb = '%'
			return d, 2
		}
		if i < len(s) {
			switch s[i] {
			case '-':
				d.minus = true
				i++
			case '+':
				i++
			case '=':
				d.center = true
				i++
			}
		}
		if i < len(s) && s[i] == '0' {
			d.zero = true
		}
	} else {
	flags:
		for ; i < len(s); i++ {
			switch s[i] {
			case '-':
				d.minus = true
			case '+':
				d.plus = true
			case ' ':
				d.space = true
			case '#':
				d.sharp = true
			case '0':
				d.zero = true
			default:
				break flags
			}
		}
	}
	i, d.width = number(s, i)
	if i < len(s) && s[i] == '*' {
		d.bad = "STAR"
		i++
	}
	if i < len(s) && s[i] == '.' {
		i, d.prec = number(s, i+1)
		if i < len(s) && s[i] == '*' {
			d.bad = "STAR"
			i++
		}
	}
	// Length modifiers.
	l := i
	if p.Dialect == VPP {
		switch {
		case strings.HasPrefix(s[i:], "ll"):
			i += 2
		case i < len(s) && (s[i] == 'l' || s[i] == 'L' || s[i] == 'w'):
			i++
		}
	} else {
		switch {
		case strings.HasPrefix(s[i:], "hh"), strings.HasPrefix(s[i:], "ll"):
			i += 2
		case i < len(s) && strings.IndexByte("hlLqjzt", s[i]) >= 0:
			i++
		}
	}
	d.length = s[l:i]
	if i >= len(s) {
		d.bad = "NOVERB"
		return d, i
	}
	d.verb = s[i]
	d.plain = i == 1
	return d, i + 1
}

// number parses decimal digits at s[i:], capped at MaxWidth.
func number(s string, i int) (int, int) {
	n := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
		if n > MaxWidth {
			n = MaxWidth
		}
	}
	return i, n
}

// appendBad appends a visible marker for a directive that cannot be
// rendered: %!v(reason) or %!v(kind=value).
func appendBad(dst []byte, verb byte, reason string, a Arg) []byte {
	dst = append(dst, "%!"...)
	if verb != 0 && verb >= ' ' && verb < 0x7f {
		dst = append(dst, verb)
	}
	dst = append(dst, '(')
	if reason != "" {
		dst = append(dst, reason...)
	} else {
		dst = a.appendDebug(dst)
	}
	return append(dst, ')')
}

func (p *Printer) appendDirective(dst []byte, d *directive, a Arg) []byte {
	if d.bad != "" {
		return appendBad(dst, d.verb, d.bad, a)
	}
	if a.kind == argMissing {
		return appendBad(dst, d.verb, "MISSING", a)
	}
	if d.plain {
		// The common directives without flags, width or precision.
		switch {
		case d.verb == 's' && a.kind == argString:
			if len(a.s) > MaxOutput {
				return append(dst, a.s[:MaxOutput]...)
			}
			return append(dst, a.s...)
		case a.kind == argUint || a.kind == argInt:
			switch d.verb {
			case 'u':
				return strconv.AppendUint(dst, uint64(uint32(a.n)), 10)
			case 'x':
				return strconv.AppendUint(dst, uint64(uint32(a.n)), 16)
			case 'd':
				return strconv.AppendInt(dst, int64(int32(uint32(a.n))), 10)
			}
		}
	}
	var body []byte
	var buf [96]byte
	numeric := false
	switch d.verb {
	case 'd', 'i', 'u', 'x', 'X', 'o':
		if p.Dialect == VPP && d.verb == 'i' {
			return appendBad(dst, d.verb, "", a)
		}
		if a.kind != argInt && a.kind != argUint {
			return appendBad(dst, d.verb, "", a)
		}
		body = p.appendInt(buf[:0], d, a)
		numeric = true
	case 'c':
		if a.kind != argInt && a.kind != argUint {
			return appendBad(dst, d.verb, "", a)
		}
		if c := byte(a.n); c != 0 {
			body = append(buf[:0], c)
		}
	case 's', 'S':
		if a.kind != argString || (d.verb == 'S' && p.Dialect != VPP) {
			return appendBad(dst, d.verb, "", a)
		}
		s := a.s
		if d.prec >= 0 && d.prec < len(s) {
			s = s[:d.prec]
		}
		if len(s) > MaxOutput {
			s = s[:MaxOutput]
		}
		if d.verb == 'S' {
			s = strings.ReplaceAll(s, "_", " ")
		}
		return p.pad(dst, d, []byte(s), false)
	case 'p':
		if a.kind != argInt && a.kind != argUint {
			return appendBad(dst, d.verb, "", a)
		}
		if a.n == 0 && p.Dialect == C {
			body = append(buf[:0], "(nil)"...)
		} else {
			body = append(buf[:0], "0x"...)
			body = strconv.AppendUint(body, a.n, 16)
		}
	case 'k':
		if a.kind != argInt && a.kind != argUint {
			return appendBad(dst, d.verb, "", a)
		}
		v := a.n
		if a.bits < 64 {
			v &= 1<<a.bits - 1
		}
		var ok bool
		body, ok = p.Symbols.AppendName(buf[:0], v)
		if !ok {
			body = append(body, "0x"...)
			body = strconv.AppendUint(body, v, 16)
		}
	case 'f', 'F', 'e', 'E', 'g', 'G':
		if a.kind != argFloat {
			return appendBad(dst, d.verb, "", a)
		}
		body = p.appendFloat(buf[:0], d, a.f)
		numeric = true
	default:
		return appendBad(dst, d.verb, "", a)
	}
	return p.pad(dst, d, body, numeric)
}

// intValue returns the integer as the conversion reads it: its magnitude
// and whether it is negative.
func (p *Printer) intValue(d *directive, a Arg) (uint64, bool) {
	bits := 32 // plain int in both dialects
	switch d.length {
	case "hh":
		bits = 8
	case "h":
		bits = 16
	case "":
	default:
		bits = 64
	}
	v := a.n
	signed := d.verb == 'd' || d.verb == 'i'
	if bits < 64 {
		v &= 1<<bits - 1
		if signed && v&(1<<(bits-1)) != 0 {
			return (1 << bits) - v, true
		}
		return v, false
	}
	if signed && int64(v) < 0 {
		return -v, true
	}
	return v, false
}

func (p *Printer) appendInt(dst []byte, d *directive, a Arg) []byte {
	v, neg := p.intValue(d, a)
	base := 10
	switch d.verb {
	case 'x', 'X':
		base = 16
	case 'o':
		base = 8
	}
	var digits []byte
	var tmp [72]byte
	if !(d.prec == 0 && v == 0 && p.Dialect == C) {
		digits = strconv.AppendUint(tmp[:0], v, base)
	}
	if d.verb == 'X' {
		for i, c := range digits {
			if c >= 'a' && c <= 'f' {
				digits[i] = c - 'a' + 'A'
			}
		}
	}
	switch {
	case neg:
		dst = append(dst, '-')
	case d.plus && (d.verb == 'd' || d.verb == 'i'):
		dst = append(dst, '+')
	case d.space && (d.verb == 'd' || d.verb == 'i'):
		dst = append(dst, ' ')
	}
	if d.sharp && v != 0 && (d.verb == 'x' || d.verb == 'X') {
		dst = append(dst, '0', d.verb)
	}
	if d.sharp && d.verb == 'o' && (len(digits) == 0 || digits[0] != '0') && d.prec <= len(digits) {
		dst = append(dst, '0')
	}
	if p.Dialect == C {
		for n := len(digits); n < d.prec; n++ {
			dst = append(dst, '0')
		}
	}
	return append(dst, digits...)
}

func (p *Printer) appendFloat(dst []byte, d *directive, f float64) []byte {
	prec := d.prec
	if prec < 0 {
		prec = 6
	}
	verb := d.verb
	if p.Dialect == VPP {
		return appendVPPFloat(dst, f, prec, verb)
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		var s string
		switch {
		case math.IsNaN(f):
			s = "nan"
		case f > 0:
			s = "inf"
		default:
			s = "-inf"
		}
		if verb >= 'A' && verb <= 'Z' {
			s = strings.ToUpper(s)
		}
		if f > 0 && d.plus {
			dst = append(dst, '+')
		}
		return append(dst, s...)
	}
	if d.plus && f >= 0 {
		dst = append(dst, '+')
	} else if d.space && f >= 0 {
		dst = append(dst, ' ')
	}
	switch verb {
	case 'f', 'F':
		return strconv.AppendFloat(dst, f, 'f', prec, 64)
	case 'e', 'E':
		b := strconv.AppendFloat(dst, f, byte(verb), prec, 64)
		return cExponent(b, len(dst))
	default:
		if prec == 0 {
			prec = 1
		}
		b := strconv.AppendFloat(dst, f, byte(verb), prec, 64)
		if !d.sharp && strings.ContainsRune(string(b[len(dst):]), '.') && !strings.ContainsAny(string(b[len(dst):]), "eE") {
			b = []byte(strings.TrimRight(strings.TrimRight(string(b), "0"), "."))
		}
		return cExponent(b, len(dst))
	}
}

// cExponent rewrites Go's exponent "e+5" to C's two-digit "e+05".
func cExponent(b []byte, from int) []byte {
	s := string(b[from:])
	i := strings.IndexAny(s, "eE")
	if i < 0 || len(s)-i != 3 {
		return b
	}
	out := append(b[:from:from], s[:i+2]...)
	out = append(out, '0')
	return append(out, s[i+2:]...)
}

// appendVPPFloat renders f as vppinfra's format_float does for the digits
// that matter: correctly rounded, no leading zero before the point, an
// exact zero as "0.000000".
func appendVPPFloat(dst []byte, f float64, prec int, verb byte) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "+NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "+infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-infinity"...)
	}
	if verb != 'f' {
		return strconv.AppendFloat(dst, f, 'e', prec, 64)
	}
	s := strconv.FormatFloat(f, 'f', prec, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if strings.Trim(s, "0.") == "" { // rounds to zero
		return append(dst, "0."[:1+min(prec, 1)]+strings.Repeat("0", prec)...)
	}
	if strings.HasPrefix(s, "0.") {
		s = s[1:]
	}
	if neg {
		dst = append(dst, '-')
	}
	return append(dst, s...)
}

// pad applies width and justification to body.
func (p *Printer) pad(dst []byte, d *directive, body []byte, numeric bool) []byte {
	w := d.width
	if p.Dialect == VPP {
		if w == 0 {
			return append(dst, body...)
		}
		if len(body) > w {
			return append(dst, body[:w]...)
		}
		n := w - len(body)
		padc := byte(' ')
		if d.zero {
			padc = '0'
		}
		left, right := n, 0
		switch {
		case d.minus:
			left, right = 0, n
		case d.center:
			right = n / 2
			left = n - right
		}
		dst = appendRepeat(dst, padc, left)
		dst = append(dst, body...)
		return appendRepeat(dst, padc, right)
	}
	if len(body) >= w {
		return append(dst, body...)
	}
	n := w - len(body)
	switch {
	case d.minus:
		dst = append(dst, body...)
		return appendRepeat(dst, ' ', n)
	case d.zero && numeric && (d.prec < 0 || isFloat(d.verb)):
		// Zeros go after the sign and the 0x prefix.
		k := 0
		if k < len(body) && (body[k] == '-' || body[k] == '+' || body[k] == ' ') {
			k++
		}
		if k+1 < len(body) && body[k] == '0' && (body[k+1] == 'x' || body[k+1] == 'X') {
			k += 2
		}
		dst = append(dst, body[:k]...)
		dst = appendRepeat(dst, '0', n)
		return append(dst, body[k:]...)
	}
	dst = appendRepeat(dst, ' ', n)
	return append(dst, body...)
}

func isFloat(v byte) bool { return strings.IndexByte("fFeEgG", v) >= 0 }

func appendRepeat(dst []byte, c byte, n int) []byte {
	for range n {
		dst = append(dst, c)
	}
	return dst
}

func appendCapped(dst []byte, s string, n int) []byte {
	if len(s) > n {
		return append(append(dst, s[:n]...), "..."...)
	}
	return append(dst, s...)
}
