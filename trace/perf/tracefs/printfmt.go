package tracefs

// The print fmt interpreter: what `perf script` prints for a tracepoint.
//
// A format file ends with `print fmt: "<format>", <args…>`, the arguments
// of the kernel's TP_printk with the TP_STRUCT fields written REC->name.
// perf renders every sample with it through libtraceevent (event-parse.c).
// compilePrintFmt parses it once per event into a list of parts (literal
// text, or one printf directive bound to one expression tree) and
// [PrintFmt.Append] evaluates the parts against a sample's raw data.
//
// Semantics follow libtraceevent (../NOTES.md §print-fmt): integers are
// unsigned 64-bit, fields are read zero-extended, casts only truncate,
// a directive's length modifier picks the C type the value is converted to
// before printing, `%s` of a pointer-sized scalar field prints its value in
// hex, helpers (__print_flags, __print_symbolic, __get_str, …) render as
// libtraceevent renders them, and a format libtraceevent cannot parse (an
// unknown helper, too few arguments, an unknown operator) is shown as
// "[FAILED TO PARSE]" followed by every field's raw value, as perf does.
// Operators get C's precedence and associativity.
//
// Security: format text and sample bytes are untrusted. The format is
// interpreted here, never passed to fmt; parsing is bounded in depth and
// size, evaluation walks the compiled tree once per directive with no
// loops but bounded ones, every byte read is checked against the sample,
// widths and precisions are clamped to [MaxWidth] and one call writes at
// most [MaxOutput] bytes.

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// MaxWidth caps a directive's width and precision.
const MaxWidth = 64

// MaxOutput caps what one [PrintFmt.Append] call writes.
const MaxOutput = 1024

// Parse limits, far above what kernels write (the largest print fmt of
// formats0.zip has a few hundred nodes).
const (
	maxDepth = 64
	maxNodes = 1 << 14
)

// failedText is what libtraceevent prints for an event whose print fmt
// it cannot parse, before the raw fields.
const failedText = "[FAILED TO PARSE]"

// PrintFmt is a compiled print fmt. The zero value is unusable; every
// [Event] from [ParseFormat] has one.
type PrintFmt struct {
	ev       *Event
	parts    []fmtPart
	longSize int
	err      string // why the format failed to parse; "" when it did not
}

// Err returns why the print fmt could not be parsed (the event then
// prints as "[FAILED TO PARSE]" and its raw fields, as perf does), or "".
func (p *PrintFmt) Err() string { return p.err }

type fmtPart struct {
	lit    string // literal text (escapes processed) when dir.verb == 0
	dir    directive
	arg    *node
	lenArg *node // the argument of a '*' width or precision
}

type directive struct {
	verb                           byte // d i u x X o c s p; 0 for literal text
	minus, plus, space, hash, zero bool
	width, prec                    int // -1 when absent
	starWidth, starPrec            bool
	ls                             int    // length: -2 hh, -1 h, 0, 1 l/z, 2 ll/L
	ext                            string // %p extension letters (S, M, I4 …)
}

type nodeKind uint8

const (
	nAtom        nodeKind = iota // number or identifier text, or a string literal
	nField                       // REC->field
	nUnary                       // op a
	nBinary                      // a op b
	nCond                        // a ? b : c
	nIndex                       // a[b]
	nCast                        // (text) a
	nFlags                       // __print_flags(a, delim, syms)
	nSymbolic                    // __print_symbolic(a, syms)
	nHex                         // __print_hex(a, b)
	nHexStr                      // __print_hex_str(a, b)
	nIntArray                    // __print_array(a, b, c)
	nStr                         // __get_str(field)
	nBitmask                     // __get_bitmask(field)
	nCpumask                     // __get_cpumask(field)
	nDynArray                    // __get_dynamic_array(field)
	nDynArrayLen                 // __get_dynamic_array_len(field)
)

type node struct {
	kind    nodeKind
	op      string // operator, or cast type text
	text    string // atom text (a string literal without its quotes)
	isStr   bool   // the atom is a string literal
	field   int    // index in Event.Fields, -1 when no such field
	a, b, c *node
	delim   string
	syms    []symbol
}

type symbol struct {
	val int64 // -1 when the value is not a number libtraceevent knows
	str string
}

// knownFlags are the non-numeric symbol values libtraceevent knows.
var knownFlags = map[string]int64{
	"HI_SOFTIRQ": 0, "TIMER_SOFTIRQ": 1, "NET_TX_SOFTIRQ": 2, "NET_RX_SOFTIRQ": 3,
	"BLOCK_SOFTIRQ": 4, "IRQ_POLL_SOFTIRQ": 5, "TASKLET_SOFTIRQ": 6, "SCHED_SOFTIRQ": 7,
	"HRTIMER_SOFTIRQ": 8, "RCU_SOFTIRQ": 9, "HRTIMER_NORESTART": 0, "HRTIMER_RESTART": 1,
}

// ---- tokens ----

type tokType uint8

const (
	tEOF tokType = iota
	tItem
	tString // double-quoted, adjacent ones concatenated, escapes kept
	tChar   // single-quoted
	tDelim  // ( ) ,
	tOp
)

type token struct {
	typ  tokType
	text string
}

type lexer struct {
	s   string
	pos int
}

func isItemByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

func isPrint(c byte) bool { return c >= 0x20 && c < 0x7f }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// next returns the next token, skipping white space. A byte libtraceevent
// does not accept ends the input.
func (l *lexer) next() token {
	for l.pos < len(l.s) && isSpace(l.s[l.pos]) {
		l.pos++
	}
	if l.pos >= len(l.s) {
		return token{}
	}
	c := l.s[l.pos]
	start := l.pos
	switch {
	case isItemByte(c):
		for l.pos < len(l.s) && isItemByte(l.s[l.pos]) {
			l.pos++
		}
		t := l.s[start:l.pos]
		switch t { // mac80211 macros older kernels left unexpanded
		case "LOCAL_PR_FMT":
			return token{tString, "%s"}
		case "STA_PR_FMT":
			return token{tString, " sta:%pM"}
		case "VIF_PR_FMT":
			return token{tString, " vif:%p(%d)"}
		}
		return token{tItem, t}
	case c == '"' || c == '\'':
		var b strings.Builder
		for {
			s, ok := l.quoted(c)
			if !ok {
				return token{}
			}
			b.WriteString(s)
			if c == '\'' {
				return token{tChar, b.String()}
			}
			save := l.pos
			for l.pos < len(l.s) && isSpace(l.s[l.pos]) {
				l.pos++
			}
			if l.pos < len(l.s) && l.s[l.pos] == '"' {
				continue
			}
			l.pos = save
			return token{tString, b.String()}
		}
	case c == '(' || c == ')' || c == ',':
		l.pos++
		return token{tDelim, l.s[start:l.pos]}
	case !isPrint(c):
		l.pos = len(l.s)
		return token{}
	}
	l.pos++
	peek := byte(0)
	if l.pos < len(l.s) {
		peek = l.s[l.pos]
	}
	switch c {
	case '-':
		if peek == '>' {
			l.pos++
			break
		}
		fallthrough
	case '+', '|', '&', '>', '<':
		if peek == c {
			l.pos++
			if c == '<' || c == '>' {
				if l.pos < len(l.s) && l.s[l.pos] == '=' {
					l.pos++
				}
			}
			break
		}
		if peek == '=' {
			l.pos++
		}
	case '!', '=':
		if peek == '=' {
			l.pos++
		}
	}
	return token{tOp, l.s[start:l.pos]}
}

// quoted reads a quoted string starting at l.pos (the quote), keeping
// escapes as written, as libtraceevent's tokenizer does.
func (l *lexer) quoted(q byte) (string, bool) {
	i := l.pos + 1
	for i < len(l.s) {
		c := l.s[i]
		if c == '\\' && i+1 < len(l.s) {
			i += 2
			continue
		}
		if c == q || c >= 0x20 && c != 0x7f && !isPrint(c) {
			break // a byte ≥ 0x80 is negative to libtraceevent: the end
		}
		if c < 0x20 && c != '\n' || c == 0x7f {
			// libtraceevent ends the string at another control character
			// (a tab, say), dropping it, and reads on after it.
			s := l.s[l.pos+1 : i]
			l.pos = i + 1
			return s, c != 0
		}
		i++
	}
	if i < len(l.s) && l.s[i] == q {
		s := l.s[l.pos+1 : i]
		l.pos = i + 1
		return s, true
	}
	l.pos = len(l.s)
	return "", false
}

// ---- parser ----

type parser struct {
	lx    lexer
	tok   token
	ev    *Event
	long  int
	nodes int
	depth int
	err   string
}

func (p *parser) advance() { p.tok = p.lx.next() }

func (p *parser) fail(msg string) {
	if p.err == "" {
		p.err = msg
	}
}

func (p *parser) is(typ tokType, text string) bool { return p.tok.typ == typ && p.tok.text == text }

func (p *parser) expect(typ tokType, text string) bool {
	if !p.is(typ, text) {
		p.fail("expected " + strconv.Quote(text) + ", found " + strconv.Quote(p.tok.text))
		return false
	}
	p.advance()
	return true
}

func (p *parser) newNode(k nodeKind) *node {
	p.nodes++
	if p.nodes > maxNodes {
		p.fail("expression too large")
	}
	return &node{kind: k, field: -1}
}

func (p *parser) findField(name string) int {
	for i := range p.ev.Fields {
		if p.ev.Fields[i].Name == name {
			return i
		}
	}
	return -1
}

// binary operators and their C precedence (higher binds tighter).
var binPrec = map[string]int{
	"*": 10, "/": 10, "%": 10,
	"+": 9, "-": 9,
	"<<": 8, ">>": 8,
	"<": 7, ">": 7, "<=": 7, ">=": 7,
	"==": 6, "!=": 6,
	"&": 5, "^": 4, "|": 3, "&&": 2, "||": 1,
}

// expr parses an expression whose binary operators bind at least as
// tightly as minPrec; the conditional operator is accepted at minPrec 0.
func (p *parser) expr(minPrec int) *node {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		p.fail("expression nested too deeply")
		return nil
	}
	left := p.unary()
	for p.err == "" && p.tok.typ == tOp {
		op := p.tok.text
		if op == "?" {
			if minPrec > 0 {
				break
			}
			p.advance()
			n := p.newNode(nCond)
			n.a = left
			n.b = p.expr(0)
			if !p.expect(tOp, ":") {
				return nil
			}
			n.c = p.expr(0)
			left = n
			continue
		}
		if op == ":" || op == "]" || op == "}" {
			break
		}
		prec, ok := binPrec[op]
		if !ok {
			p.fail("unknown operator " + strconv.Quote(op))
			return nil
		}
		if prec < minPrec {
			break
		}
		p.advance()
		n := p.newNode(nBinary)
		n.op, n.a, n.b = op, left, p.expr(prec+1)
		left = n
	}
	return left
}

// unary parses a prefix operator or a primary with its postfix [index].
func (p *parser) unary() *node {
	if p.tok.typ == tOp {
		switch op := p.tok.text; op {
		case "-", "+", "~", "!":
			p.advance()
			p.depth++
			defer func() { p.depth-- }()
			if p.depth > maxDepth {
				p.fail("expression nested too deeply")
				return nil
			}
			n := p.newNode(nUnary)
			n.op, n.a = op, p.unary()
			return n
		default:
			p.fail("unexpected operator " + strconv.Quote(op))
			return nil
		}
	}
	n := p.primary()
	for p.err == "" && p.is(tOp, "[") {
		p.advance()
		ix := p.newNode(nIndex)
		ix.a, ix.b = n, p.expr(0)
		if !p.expect(tOp, "]") {
			return nil
		}
		n = ix
	}
	return n
}

func (p *parser) primary() *node {
	if p.err != "" {
		return nil
	}
	t := p.tok
	switch t.typ {
	case tString:
		p.advance()
		n := p.newNode(nAtom)
		n.text, n.isStr = t.text, true
		return n
	case tChar:
		p.advance()
		n := p.newNode(nAtom)
		c := 0
		if t.text != "" {
			c = int(t.text[0]) // libtraceevent takes the first byte, even of an escape
		}
		n.text = strconv.Itoa(c)
		return n
	case tDelim:
		if t.text != "(" {
			p.fail("unexpected " + strconv.Quote(t.text))
			return nil
		}
		return p.paren()
	case tItem:
		p.advance()
		if t.text == "REC" {
			return p.rec()
		}
		if p.is(tDelim, "(") {
			p.advance()
			return p.call(t.text)
		}
		text := t.text
		for p.tok.typ == tItem { // atoms such as "unsigned long"
			text += " " + p.tok.text
			p.advance()
		}
		n := p.newNode(nAtom)
		n.text = text
		return n
	}
	p.fail("unexpected end of print fmt")
	return nil
}

// rec parses "->field" after REC.
func (p *parser) rec() *node {
	if !p.expect(tOp, "->") {
		return nil
	}
	if p.tok.typ != tItem {
		p.fail("expected a field name after REC->")
		return nil
	}
	n := p.newNode(nField)
	n.text = p.tok.text
	n.field = p.findField(p.tok.text)
	p.advance()
	return n
}

// paren parses a parenthesized expression or a cast (then its operand).
func (p *parser) paren() *node {
	p.advance()             // (
	if p.is(tItem, "REC") { // (REC)->field
		save, saveTok := p.lx.pos, p.tok
		p.advance()
		if p.is(tDelim, ")") {
			p.advance()
			return p.rec()
		}
		p.lx.pos, p.tok = save, saveTok
	}
	// A type name: items, then optional '*'s, then ')'.
	if p.tok.typ == tItem {
		save, saveTok := p.lx.pos, p.tok
		text := ""
		for p.tok.typ == tItem {
			if text != "" {
				text += " "
			}
			text += p.tok.text
			p.advance()
		}
		stars := ""
		for p.is(tOp, "*") {
			stars += " *"
			p.advance()
		}
		if p.is(tDelim, ")") {
			p.advance()
			// It is a cast when an operand follows: an item or "(" (as
			// libtraceevent decides), or a unary operator after what can
			// only be a type.
			unaryNext := p.tok.typ == tOp && strings.Contains("-+~!", p.tok.text) && len(p.tok.text) == 1
			if p.tok.typ == tItem || p.is(tDelim, "(") ||
				unaryNext && (stars != "" || strings.Contains(text, " ") || typeNames[text]) {
				p.depth++
				defer func() { p.depth-- }()
				if p.depth > maxDepth {
					p.fail("expression nested too deeply")
					return nil
				}
				n := p.newNode(nCast)
				n.op = text + stars
				n.a = p.unary()
				return n
			}
			n := p.newNode(nAtom)
			n.text = text
			return n
		}
		p.lx.pos, p.tok = save, saveTok
	}
	n := p.expr(0)
	if !p.expect(tDelim, ")") {
		return nil
	}
	return n
}

// typeNames are the one-word types a cast may name before a unary
// operator.
var typeNames = map[string]bool{
	"char": true, "short": true, "int": true, "long": true, "unsigned": true, "signed": true, "bool": true,
	"u8": true, "u16": true, "u32": true, "u64": true, "s8": true, "s16": true, "s32": true, "s64": true,
	"__u8": true, "__u16": true, "__u32": true, "__u64": true, "__s8": true, "__s16": true, "__s32": true, "__s64": true,
}

// args parses n comma-separated expressions and the closing parenthesis.
func (p *parser) args(name string, n int) []*node {
	out := make([]*node, 0, n)
	for i := range n {
		out = append(out, p.expr(0))
		want := ","
		if i == n-1 {
			want = ")"
		}
		if p.err != "" || !p.expect(tDelim, want) {
			p.fail(name + "() expects " + strconv.Itoa(n) + " arguments")
			return nil
		}
	}
	return out
}

// fieldArg parses "name)" for the helpers that name a field.
func (p *parser) fieldArg(k nodeKind, name string) *node {
	if p.tok.typ != tItem {
		p.fail(name + "() expects a field name")
		return nil
	}
	n := p.newNode(k)
	n.text = p.tok.text
	n.field = p.findField(p.tok.text)
	p.advance()
	if k == nDynArray || k == nDynArrayLen {
		if n.field < 0 {
			p.fail(name + "(): no field " + strconv.Quote(n.text))
			return nil
		}
	}
	if !p.expect(tDelim, ")") {
		return nil
	}
	return n
}

// call parses a helper's arguments; the name and "(" have been read.
func (p *parser) call(name string) *node {
	switch name {
	case "__print_flags", "__print_symbolic":
		k := nFlags
		if name == "__print_symbolic" {
			k = nSymbolic
		}
		n := p.newNode(k)
		n.a = p.expr(0)
		if !p.expect(tDelim, ",") {
			return nil
		}
		if k == nFlags {
			if p.tok.typ == tString || p.tok.typ == tItem {
				n.delim = p.tok.text
				p.advance()
			}
			if !p.expect(tDelim, ",") {
				return nil
			}
		}
		for {
			if !p.expect(tOp, "{") {
				return nil
			}
			v := p.expr(0)
			if !p.expect(tDelim, ",") {
				return nil
			}
			s := p.primary()
			if !p.expect(tOp, "}") || v == nil || s == nil {
				return nil
			}
			n.syms = append(n.syms, symbol{val: p.symbolValue(v), str: s.text})
			if len(n.syms) > maxNodes {
				p.fail("too many symbols")
				return nil
			}
			if !p.is(tDelim, ",") {
				break
			}
			p.advance()
		}
		if !p.expect(tDelim, ")") {
			return nil
		}
		return n
	case "__print_hex", "__print_hex_str":
		a := p.args(name, 2)
		if a == nil {
			return nil
		}
		n := p.newNode(nHex)
		if name == "__print_hex_str" {
			n.kind = nHexStr
		}
		n.a, n.b = a[0], a[1]
		return n
	case "__print_array":
		a := p.args(name, 3)
		if a == nil {
			return nil
		}
		n := p.newNode(nIntArray)
		n.a, n.b, n.c = a[0], a[1], a[2]
		return n
	case "__get_str", "__get_rel_str":
		return p.fieldArg(nStr, name)
	case "__get_bitmask", "__get_rel_bitmask":
		return p.fieldArg(nBitmask, name)
	case "__get_cpumask", "__get_rel_cpumask":
		return p.fieldArg(nCpumask, name)
	case "__get_dynamic_array", "__get_rel_dynamic_array", "__get_sockaddr", "__get_sockaddr_rel":
		return p.fieldArg(nDynArray, name)
	case "__get_dynamic_array_len", "__get_rel_dynamic_array_len":
		return p.fieldArg(nDynArrayLen, name)
	case "__builtin_expect":
		n := p.expr(0)
		if !p.expect(tDelim, ",") {
			return nil
		}
		if p.tok.typ != tItem {
			p.fail("__builtin_expect() expects a constant")
			return nil
		}
		p.advance()
		if !p.expect(tDelim, ")") {
			return nil
		}
		return n
	case "sizeof":
		return p.sizeof()
	}
	p.fail("function " + name + " not defined")
	return nil
}

func (p *parser) sizeof() *node {
	size := 0
	t := p.tok.text
	p.advance()
	switch t {
	case "unsigned":
		size = 4
		if p.is(tItem, "int") {
			p.advance()
		} else if p.is(tItem, "long") {
			p.advance()
			size = p.long
			if p.is(tItem, "long") {
				p.advance()
				size = 8
			}
		}
	case "int":
		size = 4
	case "long":
		size = p.long
		if p.is(tItem, "long") {
			p.advance()
			size = 8
		}
	case "__u64", "u64", "__s64", "s64":
		size = 8
	case "__u32", "u32", "__s32", "s32":
		size = 4
	case "__u16", "u16", "__s16", "s16":
		size = 2
	case "__u8", "u8", "__s8", "s8":
		size = 1
	case "REC":
		if !p.expect(tOp, "->") || p.tok.typ != tItem {
			p.fail("sizeof(REC->…) expects a field")
			return nil
		}
		i := p.findField(p.tok.text)
		if i < 0 || p.ev.Fields[i].Array != ArrayNone {
			p.fail("sizeof of an unknown or array field")
			return nil
		}
		size = p.ev.Fields[i].Size
		p.advance()
	default:
		p.fail("sizeof(" + t + ") not supported")
		return nil
	}
	if !p.expect(tDelim, ")") {
		return nil
	}
	n := p.newNode(nAtom)
	n.text = strconv.Itoa(size)
	return n
}

// symbolValue evaluates a __print_flags/__print_symbolic value as
// libtraceevent's eval_flag does: numbers, a few known names, else -1.
func (p *parser) symbolValue(v *node) int64 {
	if v.kind == nAtom && !v.isStr {
		if v.text != "" && '0' <= v.text[0] && v.text[0] <= '9' {
			return int64(strtoull(v.text))
		}
		if f, ok := knownFlags[v.text]; ok {
			return f
		}
		return -1
	}
	if !constant(v) {
		return -1
	}
	x := int64((&evaluator{}).num(v))
	if x < 0 {
		return -1
	}
	return x
}

// constant reports whether v has no field references.
func constant(v *node) bool {
	if v == nil {
		return true
	}
	switch v.kind {
	case nAtom:
		return !v.isStr
	case nUnary, nBinary, nCond, nCast:
		return constant(v.a) && constant(v.b) && constant(v.c)
	}
	return false
}

// strtoull parses a C integer prefix (0x…, 0…, decimal), ignoring what
// follows (suffixes such as UL).
func strtoull(s string) uint64 {
	base := uint64(10)
	i := 0
	if len(s) > 1 && s[0] == '0' {
		base, i = 8, 1
		if s[1] == 'x' || s[1] == 'X' {
			base, i = 16, 2
		}
	}
	var v uint64
	for ; i < len(s); i++ {
		c := s[i]
		var d uint64
		switch {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'f':
			d = uint64(c-'a') + 10
		case 'A' <= c && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return v
		}
		if d >= base {
			return v
		}
		v = v*base + d
	}
	return v
}

// compilePrintFmt parses an event's print fmt. It never fails: a format
// libtraceevent would not parse is kept with its reason in err.
func compilePrintFmt(e *Event, longSize int) *PrintFmt {
	pf := &PrintFmt{ev: e, longSize: longSize}
	p := &parser{lx: lexer{s: e.PrintFmt}, ev: e, long: longSize}
	p.advance()
	if p.tok.typ != tString {
		pf.err = "print fmt does not start with a string"
		return pf
	}
	format := p.tok.text
	p.advance()
	var args []*node
	if p.tok.typ != tEOF {
		if !p.expect(tDelim, ",") {
			pf.err = p.err
			return pf
		}
		for p.err == "" && p.tok.typ != tEOF {
			args = append(args, p.expr(0))
			if p.err != "" {
				break
			}
			if p.tok.typ == tEOF {
				break
			}
			if !p.expect(tDelim, ",") {
				break
			}
		}
	}
	if p.err != "" {
		pf.err = p.err
		return pf
	}
	pf.parts, pf.err = bindFormat(format, args)
	return pf
}

// bindFormat splits a format string into literal text and directives and
// binds each directive to its arguments, as libtraceevent's parse_args.
func bindFormat(f string, args []*node) ([]fmtPart, string) {
	var parts []fmtPart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, fmtPart{lit: lit.String()})
			lit.Reset()
		}
	}
	next := func() *node {
		if len(args) == 0 {
			return nil
		}
		a := args[0]
		args = args[1:]
		return a
	}
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c == '\\' && i+1 < len(f) {
			i++
			switch f[i] {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			default:
				lit.WriteByte(f[i])
			}
			continue
		}
		if c != '%' {
			lit.WriteByte(c)
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			lit.WriteByte('%')
			i++
			continue
		}
		flush()
		d := directive{width: -1, prec: -1}
		var lenArg *node
		j := i + 1
		dot := false
	spec:
		for ; j < len(f); j++ {
			switch c := f[j]; {
			case c == '#':
				d.hash = true
			case c == '-':
				d.minus = true
			case c == '+':
				d.plus = true
			case c == ' ':
				// libtraceevent treats a space as an unknown conversion
				break spec
			case c == '.':
				dot, d.prec = true, 0
			case c == '0' && !dot && d.width < 0:
				d.zero = true
			case '0' <= c && c <= '9':
				if dot {
					d.prec = min(d.prec*10+int(c-'0'), 1000)
				} else {
					d.width = min(max(d.width, 0)*10+int(c-'0'), 1000)
				}
			case c == '*':
				if lenArg != nil {
					return nil, "two '*' in one directive"
				}
				if lenArg = next(); lenArg == nil {
					return nil, "no argument for '*'"
				}
				if dot {
					d.starPrec = true
				} else {
					d.starWidth = true
				}
			case c == 'h':
				d.ls--
			case c == 'l':
				d.ls++
			case c == 'L':
				d.ls = 2
			case c == 'z' || c == 'Z':
				d.ls = 1
			default:
				break spec
			}
		}
		if j >= len(f) {
			i = j
			break
		}
		switch c := f[j]; c {
		case 'd', 'i', 'u', 'x', 'X', 'o', 'c', 's', 'p':
			d.verb = c
			if c == 'p' {
				n := pointerExt(f[j+1:])
				d.ext = f[j+1 : j+1+n]
				j += n
			}
			if (c != 's' && c != 'p') && (d.ls < -2 || d.ls > 2) {
				return nil, "bad length modifier"
			}
			a := next()
			if a == nil {
				return nil, "no argument for %" + string(c)
			}
			parts = append(parts, fmtPart{dir: d, arg: a, lenArg: lenArg})
		default:
			// libtraceevent prints an unknown conversion as ">c<" and
			// consumes no argument.
			parts = append(parts, fmtPart{lit: ">" + string(c) + "<"})
		}
		i = j
	}
	flush()
	return parts, ""
}

// pointerExt returns how many letters after %p libtraceevent takes as
// the pointer's extension.
func pointerExt(s string) int {
	at := func(i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	switch at(0) {
	case 'F', 'S', 'f', 's':
		return 1
	case 'M', 'm':
		if at(1) == 'R' || at(1) == 'F' {
			return 2
		}
		return 1
	case 'I', 'i':
		n, idx := 1, 2
		switch at(1) {
		case 'S':
			for at(idx) == 'p' || at(idx) == 'f' || at(idx) == 's' {
				n++
				idx++
			}
			fallthrough
		case '4':
			switch at(idx) {
			case 'h', 'n', 'l', 'b':
				n++
				idx++
			}
			if at(1) == '4' {
				return n + 1
			}
			fallthrough
		case '6':
			if at(idx) == 'c' {
				n++
			}
			n++
		}
		return n
	case 'U':
		switch at(1) {
		case 'L', 'l', 'B', 'b':
			return 2
		}
		return 1
	case 'h':
		switch at(1) {
		case 'C', 'D', 'N':
			return 2
		}
		return 1
	}
	return 0
}

// ---- evaluation ----

type evaluator struct {
	pf  *PrintFmt
	raw []byte
	bo  binary.ByteOrder
}

// read returns the n-byte number at off, or 0 when it is not all there
// or n is not 1, 2, 4 or 8.
func (ev *evaluator) read(off, n int) uint64 {
	if off < 0 || n <= 0 || off > len(ev.raw)-n {
		return 0
	}
	b := ev.raw[off:]
	switch n {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(ev.bo.Uint16(b))
	case 4:
		return uint64(ev.bo.Uint32(b))
	case 8:
		return ev.bo.Uint64(b)
	}
	return 0
}

func (ev *evaluator) field(i int) *Field {
	if ev.pf == nil || i < 0 || i >= len(ev.pf.ev.Fields) {
		return nil
	}
	return &ev.pf.ev.Fields[i]
}

// dynamic returns the offset and length of a __data_loc/__rel_loc field's
// data as libtraceevent computes them (0, 0 when out of range).
func (ev *evaluator) dynamic(f *Field) (off, n int) {
	if f == nil || f.Offset+f.Size > len(ev.raw) {
		return 0, 0
	}
	v := ev.read(f.Offset, f.Size)
	o := int(v & 0xffff)
	l := int(v >> 16 & 0xffff)
	if f.Size == 2 {
		l = len(ev.raw) - o
	}
	if o+l > len(ev.raw) {
		l = 0
	}
	if o > len(ev.raw) {
		o = 0
	}
	if f.Array == ArrayRelLoc {
		o += f.Offset + f.Size
	}
	return o, l
}

func elemSize(f *Field) int {
	if f.Array == ArrayFixed && f.Count > 0 {
		return f.Size / f.Count
	}
	if f.Array == ArrayNone {
		return f.Size
	}
	return f.ElemSize
}

func (ev *evaluator) num(n *node) uint64 {
	if n == nil {
		return 0
	}
	switch n.kind {
	case nAtom:
		return strtoull(n.text)
	case nField:
		f := ev.field(n.field)
		if f == nil {
			return 0
		}
		return ev.read(f.Offset, f.Size)
	case nCast:
		return castValue(ev.num(n.a), n.op)
	case nUnary:
		v := ev.num(n.a)
		switch n.op {
		case "-":
			return -v
		case "~":
			return ^v
		case "!":
			return b2u(v == 0)
		}
		return v
	case nCond:
		if ev.num(n.a) != 0 {
			return ev.num(n.b)
		}
		return ev.num(n.c)
	case nIndex:
		return ev.index(n)
	case nBinary:
		l, r := ev.num(n.a), ev.num(n.b)
		switch n.op {
		case "*":
			return l * r
		case "/":
			if r == 0 {
				return 0
			}
			return l / r
		case "%":
			if r == 0 {
				return 0
			}
			return l % r
		case "+":
			return l + r
		case "-":
			return l - r
		case "<<":
			return l << (r & 63)
		case ">>":
			return l >> (r & 63)
		case "<":
			return b2u(l < r)
		case ">":
			return b2u(l > r)
		case "<=":
			return b2u(l <= r)
		case ">=":
			return b2u(l >= r)
		case "==":
			return b2u(l == r)
		case "!=":
			return b2u(l != r)
		case "&":
			return l & r
		case "^":
			return l ^ r
		case "|":
			return l | r
		case "&&":
			return b2u(l != 0 && r != 0)
		case "||":
			return b2u(l != 0 || r != 0)
		}
	case nDynArrayLen:
		_, l := ev.dynamic(ev.field(n.field))
		return uint64(l)
	case nDynArray:
		o, _ := ev.dynamic(ev.field(n.field))
		return uint64(o) // libtraceevent yields a host address here
	}
	return 0
}

// index reads element r of a field or dynamic array, through casts.
func (ev *evaluator) index(n *node) uint64 {
	r := ev.num(n.b)
	base := n.a
	var cast *node
	for base != nil && base.kind == nCast {
		if cast == nil {
			cast = base
		}
		base = base.a
	}
	if base == nil {
		return 0
	}
	var off, size int
	switch base.kind {
	case nField:
		f := ev.field(base.field)
		if f == nil {
			return 0
		}
		size = elemSize(f)
		if r > uint64(len(ev.raw)) {
			return 0
		}
		off = f.Offset + int(r)*size
	case nDynArray:
		f := ev.field(base.field)
		o, _ := ev.dynamic(f)
		if r > uint64(len(ev.raw)) || f == nil {
			return 0
		}
		size = ev.pf.longSize
		if f.ElemSize > 0 {
			size = f.ElemSize
		}
		off = o + int(r)*size
	default: // libtraceevent gives up on other bases ("unknown op")
		return 0
	}
	v := ev.read(off, size)
	if cast != nil {
		v = castValue(v, strings.TrimSuffix(cast.op, " *"))
	}
	return v
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// castValue truncates v to a cast's type as libtraceevent's eval_type_str:
// only the fixed-size kernel types and char, short and int truncate.
func castValue(v uint64, typ string) uint64 {
	if strings.HasSuffix(typ, "*") || strings.HasPrefix(typ, "struct") {
		return v
	}
	switch strings.TrimPrefix(typ, "unsigned ") {
	case "u8", "s8", "char":
		return v & 0xff
	case "u16", "s16", "short":
		return v & 0xffff
	case "u32", "s32", "int":
		return v & 0xffffffff
	}
	return v
}

// ---- output ----

type out struct {
	b     []byte
	start int
}

func (o *out) full() bool { return len(o.b)-o.start >= MaxOutput }

func (o *out) str(s string) {
	if room := MaxOutput - (len(o.b) - o.start); room > 0 {
		if len(s) > room {
			s = s[:room]
		}
		o.b = append(o.b, s...)
	}
}

func (o *out) bytes(b []byte) {
	if room := MaxOutput - (len(o.b) - o.start); room > 0 {
		if len(b) > room {
			b = b[:room]
		}
		o.b = append(o.b, b...)
	}
}

// pad writes s padded to the directive's width (precision handled by the
// caller).
func (o *out) pad(s []byte, d *directive, width int) {
	width = min(width, MaxWidth)
	n := width - len(s)
	if n > 0 && !d.minus {
		for range n {
			o.str(" ")
		}
	}
	o.bytes(s)
	if n > 0 && d.minus {
		for range n {
			o.str(" ")
		}
	}
}

// Append appends the print fmt rendered for a sample's raw data, as
// `perf script` prints it after the event name.
func (p *PrintFmt) Append(dst, raw []byte, bo binary.ByteOrder) []byte {
	o := out{b: dst, start: len(dst)}
	ev := &evaluator{pf: p, raw: raw, bo: bo}
	if p.err != "" {
		o.str(failedText)
		ev.rawFields(&o)
		return o.b[:min(len(o.b), o.start+MaxOutput)]
	}
	for i := range p.parts {
		if o.full() {
			break
		}
		pt := &p.parts[i]
		if pt.dir.verb == 0 {
			o.str(pt.lit)
			continue
		}
		d := pt.dir
		width, prec := d.width, d.prec
		if pt.lenArg != nil {
			v := int64(int32(ev.num(pt.lenArg)))
			if d.starPrec {
				prec = int(max(min(v, MaxWidth), -1))
			} else {
				if v < 0 {
					d.minus, v = true, -v
				}
				width = int(min(v, MaxWidth))
			}
		}
		width, prec = min(width, MaxWidth), min(prec, MaxWidth)
		switch d.verb {
		case 's':
			o.b = ev.appendStr(o.b, pt.arg, &d, width, prec)
		case 'p':
			plen := 1 // libtraceevent's %ph length comes only from a '*'
			if pt.lenArg != nil {
				plen = int(int32(ev.num(pt.lenArg)))
			}
			ev.pointer(&o, pt.arg, d.ext, plen)
		default:
			o.b = appendInt(o.b, ev.num(pt.arg), &d, width, prec)
		}
		if len(o.b)-o.start > MaxOutput {
			o.b = o.b[:o.start+MaxOutput]
		}
	}
	if len(o.b)-o.start > MaxOutput {
		o.b = o.b[:o.start+MaxOutput]
	}
	return o.b
}

// Label renders the event's print fmt for a sample's raw data.
func (e *Event) Label(raw []byte, bo binary.ByteOrder) string {
	if e.Print == nil {
		return ""
	}
	return string(e.Print.Append(nil, raw, bo))
}

// fmtStr formats s with a %s directive's width and precision.
func fmtStr(dst []byte, s []byte, d *directive, width, prec int) []byte {
	if prec >= 0 && len(s) > prec {
		s = s[:prec]
	}
	o := out{b: dst, start: len(dst)}
	o.pad(s, d, width)
	return o.b
}

// cstr returns b up to its first NUL.
func cstr(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// appendStr renders a %s argument as libtraceevent's print_str_arg.
func (ev *evaluator) appendStr(dst []byte, n *node, d *directive, width, prec int) []byte {
	if n == nil {
		return dst
	}
	switch n.kind {
	case nAtom:
		return fmtStr(dst, []byte(n.text), d, width, prec)
	case nField:
		f := ev.field(n.field)
		if f == nil || f.Offset > len(ev.raw) {
			return dst
		}
		if f.Array == ArrayNone && f.Size == ev.pf.longSize {
			// A pointer to a string libtraceevent would look up in the
			// printk formats, which the viewer does not read.
			return strconv.AppendUint(dst, ev.read(f.Offset, f.Size), 16)
		}
		l := f.Size
		if l == 0 || f.Offset+l > len(ev.raw) {
			l = len(ev.raw) - f.Offset
		}
		return fmtStr(dst, cstr(ev.raw[f.Offset:f.Offset+l]), d, width, prec)
	case nFlags:
		val := int64(ev.num(n.a))
		printed := false
		o := out{b: dst, start: len(dst)}
		for _, s := range n.syms {
			if val == 0 && s.val < 0 {
				o.b = fmtStr(o.b, []byte(s.str), d, width, prec)
				break
			}
			if s.val > 0 && val&s.val == s.val {
				if printed {
					o.str(n.delim)
				}
				o.b = fmtStr(o.b, []byte(s.str), d, width, prec)
				printed = true
				val &^= s.val
			}
			if o.full() {
				return o.b
			}
		}
		if val != 0 {
			if printed {
				o.str(n.delim)
			}
			o.str("0x" + strconv.FormatUint(uint64(val), 16))
		}
		return o.b
	case nSymbolic:
		val := int64(ev.num(n.a))
		for _, s := range n.syms {
			if val == s.val {
				return fmtStr(dst, []byte(s.str), d, width, prec)
			}
		}
		return append(dst, "0x"+strconv.FormatUint(uint64(val), 16)...)
	case nHex, nHexStr:
		b := ev.bufferOf(n.a)
		l := ev.num(n.b)
		if l < uint64(len(b)) {
			b = b[:l]
		}
		o := out{b: dst, start: len(dst)}
		for i, c := range b {
			if i > 0 && n.kind == nHex {
				o.str(" ")
			}
			o.str(hex2(c))
			if o.full() {
				break
			}
		}
		return o.b
	case nIntArray:
		b := ev.bufferOf(n.a)
		count, es := ev.num(n.b), ev.num(n.c)
		o := out{b: dst, start: len(dst)}
		o.str("{")
		for i := uint64(0); i < count && !o.full(); i++ {
			if i > 0 {
				o.str(",")
			}
			switch es {
			case 1, 2, 4, 8:
				if len(b) < int(es) {
					return o.b
				}
				o.str("0x" + strconv.FormatUint(readN(b, int(es), ev.bo), 16))
				b = b[es:]
			default:
				if len(b) < 1 {
					return o.b
				}
				o.str("BAD SIZE:" + strconv.FormatInt(int64(int32(es)), 10) + " 0x" + strconv.FormatUint(uint64(b[0]), 16))
				b, es = b[1:], 1
			}
		}
		o.str("}")
		return o.b
	case nStr:
		f := ev.field(n.field)
		if f == nil {
			return dst
		}
		off, l := ev.dynamic(f)
		if l == 0 || off >= len(ev.raw) {
			return dst
		}
		return fmtStr(dst, cstr(ev.raw[off:]), d, width, prec)
	case nBitmask, nCpumask:
		f := ev.field(n.field)
		if f == nil {
			return dst
		}
		off, l := ev.dynamic(f)
		if off+l > len(ev.raw) {
			return dst
		}
		var s []byte
		if n.kind == nBitmask {
			s = bitmaskText(ev.raw[off:off+l], ev.bo)
		} else {
			s = cpumaskText(ev.raw[off:off+l], ev.bo)
		}
		return fmtStr(dst, s, d, width, prec)
	case nCond:
		if ev.num(n.a) != 0 {
			return ev.appendStr(dst, n.b, d, width, prec)
		}
		return ev.appendStr(dst, n.c, d, width, prec)
	}
	// Operators, casts, dynamic arrays: libtraceevent prints nothing.
	return dst
}

func readN(b []byte, n int, bo binary.ByteOrder) uint64 {
	switch n {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(bo.Uint16(b))
	case 4:
		return uint64(bo.Uint32(b))
	}
	return bo.Uint64(b)
}

const hexDigits = "0123456789abcdef"

func hex2(c byte) string { return string([]byte{hexDigits[c>>4], hexDigits[c&15]}) }

// bufferOf returns the bytes a __print_hex/__print_array argument points
// at: a dynamic array's data or the bytes from a field to the end.
func (ev *evaluator) bufferOf(n *node) []byte {
	for n != nil && n.kind == nCast {
		n = n.a
	}
	if n == nil {
		return nil
	}
	switch n.kind {
	case nDynArray:
		off, _ := ev.dynamic(ev.field(n.field))
		if off > len(ev.raw) {
			return nil
		}
		return ev.raw[off:]
	case nField:
		f := ev.field(n.field)
		if f == nil || f.Offset > len(ev.raw) {
			return nil
		}
		return ev.raw[f.Offset:]
	}
	return nil
}

// bitmaskText renders a bitmask as the kernel's %*pb: hex, most
// significant byte first, a comma every 32 bits.
func bitmaskText(b []byte, bo binary.ByteOrder) []byte {
	big := bo == binary.BigEndian
	var s []byte
	for i := len(b) - 1; i >= 0; i-- {
		c := b[i]
		if big {
			c = b[len(b)-1-i]
		}
		s = append(s, hexDigits[c>>4], hexDigits[c&15])
		if i > 0 && i%4 == 0 {
			s = append(s, ',')
		}
	}
	return s
}

// cpumaskText renders a bitmask as a CPU list: "0-3,5".
func cpumaskText(b []byte, bo binary.ByteOrder) []byte {
	big := bo == binary.BigEndian
	bit := func(i int) bool {
		idx := i / 8
		if big {
			idx = len(b) - 1 - idx
		}
		return b[idx]>>(i%8)&1 != 0
	}
	var s []byte
	n := len(b) * 8
	for i := 0; i < n; i++ {
		if !bit(i) {
			continue
		}
		j := i
		for j+1 < n && bit(j+1) {
			j++
		}
		if len(s) > 0 {
			s = append(s, ',')
		}
		s = strconv.AppendInt(s, int64(i), 10)
		if j > i {
			s = append(s, '-')
			s = strconv.AppendInt(s, int64(j), 10)
		}
		i = j
		if len(s) > MaxOutput {
			break
		}
	}
	return s
}

// appendInt formats v as C printf does after libtraceevent converts it to
// the directive's length (char, short, int, long, long long).
func appendInt(dst []byte, v uint64, d *directive, width, prec int) []byte {
	bits := 32
	switch d.ls {
	case -2:
		bits = 8
	case -1:
		bits = 16
	case 1, 2:
		bits = 64
	}
	var u uint64
	var neg bool
	if bits < 64 {
		v &= 1<<bits - 1
	}
	if d.verb == 'c' {
		o := out{b: dst, start: len(dst)}
		o.pad([]byte{byte(v)}, d, width)
		return o.b
	}
	signed := d.verb == 'd' || d.verb == 'i'
	if signed {
		s := int64(v<<(64-bits)) >> (64 - bits)
		neg = s < 0
		u = uint64(s)
		if neg {
			u = -u
		}
	} else {
		u = v
	}
	var digits []byte
	base := 10
	switch d.verb {
	case 'x', 'X':
		base = 16
	case 'o':
		base = 8
	}
	if !(prec == 0 && u == 0) {
		digits = strconv.AppendUint(nil, u, base)
	}
	if d.verb == 'X' {
		digits = []byte(strings.ToUpper(string(digits)))
	}
	for prec > len(digits) {
		digits = append([]byte{'0'}, digits...)
	}
	var prefix string
	switch {
	case neg:
		prefix = "-"
	case signed && d.plus:
		prefix = "+"
	case signed && d.space:
		prefix = " "
	}
	if d.hash && u != 0 {
		switch d.verb {
		case 'x':
			prefix = "0x"
		case 'X':
			prefix = "0X"
		case 'o':
			if len(digits) == 0 || digits[0] != '0' {
				digits = append([]byte{'0'}, digits...)
			}
		}
	}
	width = min(width, MaxWidth)
	if d.zero && !d.minus && prec < 0 {
		for len(prefix)+len(digits) < width {
			digits = append([]byte{'0'}, digits...)
		}
	}
	o := out{b: dst, start: len(dst)}
	o.pad(append([]byte(prefix), digits...), d, width)
	return o.b
}

// pointer renders a %p directive: the pointer extensions libtraceevent
// knows, else the value as glibc's %p.
func (ev *evaluator) pointer(o *out, n *node, ext string, plen int) {
	switch {
	case ext == "":
		v := ev.num(n)
		if v == 0 {
			o.str("(nil)")
		} else {
			o.str("0x" + strconv.FormatUint(v, 16))
		}
	case ext[0] == 'S' || ext[0] == 's' || ext[0] == 'F' || ext[0] == 'f':
		// perf resolves kernel symbols against the running kernel; without
		// them libtraceevent prints the address.
		v := ev.num(n)
		if ev.pf.longSize == 4 {
			v &= 0xffffffff
		}
		o.str("0x" + strconv.FormatUint(v, 16))
	case ext[0] == 'M' || ext[0] == 'm':
		b, ok := ev.fieldBytes(o, n, 6, "INVALIDMAC")
		if !ok {
			return
		}
		sep := ":"
		if ext[0] == 'm' {
			sep = ""
		} else if len(ext) > 1 && ext[1] == 'F' {
			sep = "-"
		}
		rev := len(ext) > 1 && ext[1] == 'R'
		for i := range 6 {
			if i > 0 {
				o.str(sep)
			}
			c := b[i]
			if rev {
				c = b[5-i]
			}
			o.str(hex2(c))
		}
	case ext[0] == 'U':
		b, ok := ev.fieldBytes(o, n, 16, "INVALIDUUID")
		if !ok {
			return
		}
		idx := [16]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
		upper := len(ext) > 1 && (ext[1] == 'L' || ext[1] == 'B')
		if len(ext) > 1 && (ext[1] == 'L' || ext[1] == 'l') {
			idx = [16]int{3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15}
		}
		for i := range 16 {
			h := hex2(b[idx[i]])
			if upper {
				h = strings.ToUpper(h)
			}
			o.str(h)
			if i == 3 || i == 5 || i == 7 || i == 9 {
				o.str("-")
			}
		}
	case ext[0] == 'h':
		if n == nil || n.kind != nDynArray {
			o.str("ARG TYPE NOT FIELD BUT " + strconv.Itoa(argTypeCode(n)))
			return
		}
		off, l := ev.dynamic(ev.field(n.field))
		plen = min(plen, l)
		sep := " "
		if len(ext) > 1 {
			sep = map[byte]string{'C': ":", 'D': "-", 'N': ""}[ext[1]]
		}
		for i := 0; i < plen && off+i < len(ev.raw); i++ {
			if i > 0 {
				o.str(sep)
			}
			o.str(hex2(ev.raw[off+i]))
		}
	case (ext[0] == 'I' || ext[0] == 'i') && len(ext) > 1 && ext[1] == '4':
		b, ok := ev.fieldBytes(o, n, 4, "INVALIDIPv4")
		if !ok {
			return
		}
		rev := len(ext) > 2 && (ext[2] == 'l' || ext[2] == 'h' && ev.bo != binary.BigEndian)
		for i := range 4 {
			c := b[i]
			if rev {
				c = b[3-i]
			}
			if i > 0 {
				o.str(".")
			}
			if ext[0] == 'i' {
				o.str(strconv.FormatUint(uint64(c)+1000, 10)[1:])
			} else {
				o.str(strconv.Itoa(int(c)))
			}
		}
	case (ext[0] == 'I' || ext[0] == 'i') && len(ext) > 1 && ext[1] == '6' && !strings.HasSuffix(ext, "c"):
		b, ok := ev.fieldBytes(o, n, 16, "INVALIDIPv6")
		if !ok {
			return
		}
		for i := 0; i < 16; i += 2 {
			if i > 0 && ext[0] == 'I' {
				o.str(":")
			}
			o.str(hex2(b[i]) + hex2(b[i+1]))
		}
	default:
		// Compressed IPv6 and socket addresses: not rendered here.
		o.str("%!p" + ext + "(unsupported)")
	}
}

// argTypeCode is libtraceevent's enum value of an argument kind, for its
// "ARG TYPE NOT FIELD BUT n" message.
func argTypeCode(n *node) int {
	if n == nil {
		return 0
	}
	switch n.kind {
	case nAtom:
		if n.isStr {
			return 1
		}
		return 1
	case nField:
		return 2
	case nFlags:
		return 3
	case nSymbolic:
		return 4
	case nHex:
		return 5
	case nIntArray:
		return 6
	case nCast:
		return 7
	case nStr:
		return 8
	case nBitmask:
		return 10
	case nDynArray:
		return 11
	case nUnary, nBinary, nCond, nIndex:
		return 12
	case nDynArrayLen:
		return 14
	case nHexStr:
		return 15
	case nCpumask:
		return 16
	}
	return 0
}

// fieldBytes returns the n bytes of the field a %pM/%pU/%pI argument
// names, writing libtraceevent's message when it is not such a field.
func (ev *evaluator) fieldBytes(o *out, a *node, n int, invalid string) ([]byte, bool) {
	for a != nil && a.kind == nCast {
		a = a.a
	}
	if a == nil || a.kind != nField {
		o.str("ARG TYPE NOT FIELD BUT " + strconv.Itoa(argTypeCode(a)))
		return nil, false
	}
	f := ev.field(a.field)
	if f == nil {
		return nil, false
	}
	if f.Size != n {
		o.str(invalid)
		return nil, false
	}
	if f.Offset+n > len(ev.raw) {
		return nil, false
	}
	return ev.raw[f.Offset : f.Offset+n], true
}

// ---- "[FAILED TO PARSE]": the raw fields ----

// rawFields appends " name=value" for every non-common field, as
// libtraceevent's print_field_raw.
func (ev *evaluator) rawFields(o *out) {
	e := ev.pf.ev
	for i := e.Common; i < len(e.Fields) && !o.full(); i++ {
		f := &e.Fields[i]
		o.str(" " + f.Name + "=")
		o.b = ev.rawField(o.b, f)
	}
}

func (ev *evaluator) rawField(dst []byte, f *Field) []byte {
	decl := f.Decl // the type: the declaration without the field's name
	if i := strings.LastIndex(decl, f.Name); i >= 0 {
		decl = decl[:i] + decl[i+len(f.Name):]
	}
	if f.Array != ArrayNone || strings.Contains(decl, "[") {
		off, l := f.Offset, f.Size
		if f.Array == ArrayDataLoc || f.Array == ArrayRelLoc {
			off, l = ev.dynamic(f)
		}
		if off > len(ev.raw) {
			return dst
		}
		l = min(l, len(ev.raw)-off)
		b := ev.raw[off : off+l]
		if (strings.Contains(decl, "char") || strings.Contains(decl, "u8") || strings.Contains(decl, "s8")) && printable(b) {
			return append(dst, cstr(b)...)
		}
		dst = append(dst, "ARRAY["...)
		for i, c := range b {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = append(dst, hex2(c)...)
			if len(dst) > MaxOutput {
				break
			}
		}
		return append(dst, ']')
	}
	v := ev.read(f.Offset, f.Size)
	isLong := strings.Contains(decl, "long")
	switch {
	case strings.Contains(decl, "*"):
		return strconv.AppendUint(append(dst, "0x"...), v, 16)
	case f.Signed == 1:
		switch f.Size {
		case 4:
			if isLong {
				return strconv.AppendUint(append(dst, "0x"...), uint64(uint32(v)), 16)
			}
			return strconv.AppendInt(dst, int64(int32(v)), 10)
		case 2:
			s := strconv.FormatInt(int64(int16(v)), 10)
			if len(s) < 2 {
				s = " " + s
			}
			return append(dst, s...)
		case 1:
			return strconv.AppendInt(dst, int64(int8(v)), 10)
		}
		return strconv.AppendInt(dst, int64(v), 10)
	case isLong:
		return strconv.AppendUint(append(dst, "0x"...), v, 16)
	}
	return strconv.AppendUint(dst, v, 10)
}

// printable reports whether the bytes before the first NUL are printable
// or white space.
func printable(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			break
		}
		if !isPrint(c) && !isSpace(c) {
			return false
		}
	}
	return true
}
