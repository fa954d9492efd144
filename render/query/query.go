// Package query is the search query grammar (web/PROTOCOL.md §5): it turns
// the text a user types into a [render.Filter] whose [render.Expr] the
// render package compiles and runs. It is the one place that reads a
// query: the server's search endpoint, `viewer dump --where` and `viewer
// export --where` call [Parse], and the page passes the text through
// untouched.
//
// A query is terms combined with "and" (or "&&"), "or" (or "||"), "not"
// (or "!") and parentheses; "and" binds tighter than "or". A term is
//
//   - "#CODE" or "id:CODE": events whose type's numeric id is CODE;
//   - "FIELD OP VALUE" with OP one of = != < <= > >= ~: a predicate on a
//     payload field or a header key (see [render.Expr]); "~ /RE/" matches a
//     regular expression;
//   - "FIELD in (V1, V2, …)": FIELD equals one of the values;
//   - a quoted string ("text"): free text, found in field values, labels
//     and activity ids;
//   - anything else: words that are a case-insensitive substring of the
//     event type's "provider/name".
//
// An unquoted value runs to the end of the term: up to "and", "or", "&&",
// "||" or a closing parenthesis; quote it (Go syntax) to hold those.
package query

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"viewer/render"
	"viewer/trace"
)

// Limits on one query, so that a hostile link or request stays cheap.
const (
	MaxLen       = 1 << 10 // bytes of a query
	MaxTerms     = 64      // terms of a query (each value of an "in" list counts)
	MaxDepth     = 16      // nesting of parentheses (an "in" list's too) and "not"
	MaxPredicate = MaxLen  // bytes of one predicate given to ParsePredicate
)

// Parse turns a search query into a render filter. m, the trace's
// tables, is not needed to read a query; it is kept for callers that
// pass it.
func Parse(q string, m *trace.Meta) (render.Filter, error) {
	e, err := ParseExpr(q)
	if err != nil {
		return render.Filter{}, err
	}
	return render.Filter{Expr: e}, nil
}

// ParseExpr reads a query into an expression.
func ParseExpr(q string) (render.Expr, error) {
	q = strings.Trim(q, spaces)
	if q == "" {
		return render.Expr{}, errors.New("the search query is empty")
	}
	if len(q) > MaxLen {
		return render.Expr{}, fmt.Errorf("the search query is longer than %d bytes", MaxLen)
	}
	p := &parser{s: q}
	e, err := p.or()
	if err != nil {
		return render.Expr{}, err
	}
	p.space()
	if p.i < len(p.s) {
		if p.s[p.i] == ')' {
			return render.Expr{}, errors.New("a ')' without its '('")
		}
		return render.Expr{}, fmt.Errorf("unexpected %q", p.s[p.i:])
	}
	return e, nil
}

// parser reads a query by recursive descent.
type parser struct {
	s     string
	i     int
	depth int
	terms int
}

func (p *parser) space() {
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// spaces are the characters isSpace accepts: queries and values are
// trimmed of these only, so that what the parser keeps as a term (a
// vertical tab, a no-break space) is never trimmed away when the query is
// printed and read again.
const spaces = " \t\n\r"

// keyword reports whether the text at the cursor (after spaces) is the
// word kw (case-insensitive) standing alone, and consumes it if so.
func (p *parser) keyword(kw string) bool {
	p.space()
	if !p.atKeyword(p.i, kw) {
		return false
	}
	p.i += len(kw)
	return true
}

func (p *parser) atKeyword(i int, kw string) bool {
	if len(p.s)-i < len(kw) || !strings.EqualFold(p.s[i:i+len(kw)], kw) {
		return false
	}
	j := i + len(kw)
	return j == len(p.s) || isSpace(p.s[j]) || p.s[j] == '(' || p.s[j] == ')' || p.s[j] == '"' || p.s[j] == '!'
}

func (p *parser) symbol(sym string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.i:], sym) {
		p.i += len(sym)
		return true
	}
	return false
}

func (p *parser) or() (render.Expr, error) {
	return p.list(render.ExprOr, "or", "||", p.and)
}

func (p *parser) and() (render.Expr, error) {
	return p.list(render.ExprAnd, "and", "&&", p.unary)
}

// list reads operands joined by the keyword kw or the symbol sym.
func (p *parser) list(kind render.ExprKind, kw, sym string, operand func() (render.Expr, error)) (render.Expr, error) {
	e, err := operand()
	if err != nil {
		return e, err
	}
	args := []render.Expr{e}
	for p.keyword(kw) || p.symbol(sym) {
		e, err := operand()
		if err != nil {
			return e, err
		}
		args = append(args, e)
	}
	if len(args) == 1 {
		return args[0], nil
	}
	return render.Expr{Kind: kind, Args: args}, nil
}

func (p *parser) unary() (render.Expr, error) {
	p.space()
	if p.i >= len(p.s) {
		return render.Expr{}, errors.New("a search term is missing at the end")
	}
	neg := p.keyword("not")
	if !neg && p.s[p.i] == '!' && !strings.HasPrefix(p.s[p.i:], "!=") && !strings.HasPrefix(p.s[p.i:], "!~") {
		p.i++
		neg = true
	}
	if neg {
		if p.depth++; p.depth > MaxDepth {
			return render.Expr{}, fmt.Errorf("a query nested deeper than %d levels", MaxDepth)
		}
		e, err := p.unary()
		p.depth--
		if err != nil {
			return e, err
		}
		return render.Expr{Kind: render.ExprNot, Args: []render.Expr{e}}, nil
	}
	if p.symbol("(") {
		if p.depth++; p.depth > MaxDepth {
			return render.Expr{}, fmt.Errorf("a query nested deeper than %d levels", MaxDepth)
		}
		e, err := p.or()
		p.depth--
		if err != nil {
			return e, err
		}
		if !p.symbol(")") {
			return render.Expr{}, errors.New("a '(' without its ')'")
		}
		return e, nil
	}
	return p.term()
}

func (p *parser) count() error {
	if p.terms++; p.terms > MaxTerms {
		return fmt.Errorf("more than %d search terms", MaxTerms)
	}
	return nil
}

// term reads one term at the cursor.
func (p *parser) term() (render.Expr, error) {
	if err := p.count(); err != nil {
		return render.Expr{}, err
	}
	p.space()
	if c := p.s[p.i]; c == '"' || c == '`' {
		text, err := p.quoted()
		if err != nil {
			return render.Expr{}, err
		}
		return render.Expr{Kind: render.ExprText, Text: text}, nil
	}
	if p.s[p.i] == ')' || p.at("&&") || p.at("||") {
		return render.Expr{}, errors.New("an empty search term")
	}
	if code, ok := p.code(); ok {
		n, err := strconv.ParseInt(code, 0, 64)
		if err != nil {
			return render.Expr{}, fmt.Errorf("%q is not an event code", code)
		}
		return pred("@id", render.OpEq, strconv.FormatInt(n, 10)), nil
	}
	var words []string
	for {
		w := p.word()
		if w == "" {
			break
		}
		words = append(words, w)
		p.space()
		if p.i == len(p.s) || p.atOp() || p.atKeyword(p.i, "and") || p.atKeyword(p.i, "or") || p.atIn() {
			break
		}
	}
	if len(words) == 0 {
		if p.atOp() {
			return render.Expr{}, errors.New("a predicate names no field")
		}
		return render.Expr{}, fmt.Errorf("unexpected %q", p.s[p.i:])
	}
	field := strings.Join(words, " ")
	if op, ok := p.op(); ok {
		return p.predicate(field, op)
	}
	if len(words) == 1 && p.atIn() {
		p.keyword("in")
		return p.in(field)
	}
	return render.Expr{Kind: render.ExprName, Text: field}, nil
}

// atIn reports whether "in (" follows.
func (p *parser) atIn() bool {
	if !p.atKeyword(p.i, "in") {
		return false
	}
	rest := strings.TrimLeft(p.s[p.i+2:], " \t\r\n")
	return strings.HasPrefix(rest, "(")
}

func (p *parser) at(s string) bool { return strings.HasPrefix(p.s[p.i:], s) }

// code reads "#CODE" or "id:CODE".
func (p *parser) code() (string, bool) {
	rest := p.s[p.i:]
	var n int
	switch {
	case strings.HasPrefix(rest, "#"):
		n = 1
	case len(rest) >= 3 && strings.EqualFold(rest[:3], "id:"):
		n = 3
	default:
		return "", false
	}
	p.i += n
	p.space()
	w := p.word()
	if w == "" {
		w = p.s[p.i-n : p.i]
	}
	return w, true
}

// word reads a run of characters up to a space, a parenthesis, a quote,
// an operator, "&&" or "||".
func (p *parser) word() string {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if isSpace(c) || c == '(' || c == ')' || c == '"' || c == '`' || p.atOp() || p.at("&&") || p.at("||") {
			break
		}
		p.i++
	}
	return p.s[start:p.i]
}

// opSyntax lists the operators as written, longest first for parsing.
var opSyntax = []struct {
	text string
	op   render.Op
}{{"!=", render.OpNe}, {"<=", render.OpLe}, {">=", render.OpGe}, {"==", render.OpEq}, {"=", render.OpEq}, {"<", render.OpLt}, {">", render.OpGt}, {"~", render.OpContains}}

func (p *parser) atOp() bool {
	for _, o := range opSyntax {
		if p.at(o.text) {
			return true
		}
	}
	return false
}

func (p *parser) op() (render.Op, bool) {
	for _, o := range opSyntax {
		if p.at(o.text) {
			p.i += len(o.text)
			return o.op, true
		}
	}
	return render.OpBad, false
}

func pred(field string, op render.Op, value string) render.Expr {
	return render.Expr{Kind: render.ExprPred, Pred: render.Predicate{Field: field, Op: op, Value: value}}
}

// predicate reads the value of `field op value`.
func (p *parser) predicate(field string, op render.Op) (render.Expr, error) {
	p.space()
	if op == render.OpContains && p.at("/") {
		re, err := p.regexp()
		if err != nil {
			return render.Expr{}, err
		}
		if _, err := render.CompileRegexp(re); err != nil {
			return render.Expr{}, err
		}
		return pred(field, render.OpMatch, re), nil
	}
	v, err := p.value(false)
	if err != nil {
		return render.Expr{}, err
	}
	return pred(field, op, v), nil
}

// value reads a quoted value, or an unquoted one up to the end of the
// term (inList: up to a comma or a closing parenthesis).
func (p *parser) value(inList bool) (string, error) {
	p.space()
	if p.i < len(p.s) && (p.s[p.i] == '"' || p.s[p.i] == '`') {
		return p.quoted()
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if p.at("&&") || p.at("||") || c == ')' && (p.depth > 0 || inList) || c == ',' && inList {
			break
		}
		if isSpace(c) && (p.atKeyword(p.i+1, "and") || p.atKeyword(p.i+1, "or")) {
			break
		}
		p.i++
	}
	return strings.Trim(p.s[start:p.i], spaces), nil
}

func (p *parser) quoted() (string, error) {
	q, err := strconv.QuotedPrefix(p.s[p.i:])
	if err != nil {
		return "", fmt.Errorf("a bad quoted string at %q", p.s[p.i:])
	}
	p.i += len(q)
	s, err := strconv.Unquote(q)
	if err != nil {
		return "", fmt.Errorf("a bad quoted string %s", q)
	}
	return s, nil
}

// regexp reads /RE/; "\/" stands for a slash within it.
func (p *parser) regexp() (string, error) {
	p.i++ // the opening slash
	var sb strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '\\' && p.i+1 < len(p.s) && p.s[p.i+1] == '/':
			sb.WriteByte('/')
			p.i += 2
			continue
		case c == '/':
			p.i++
			return sb.String(), nil
		}
		sb.WriteByte(c)
		p.i++
	}
	return "", errors.New("a regular expression without its closing '/'")
}

// in reads "(v1, v2, …)" after "field in".
func (p *parser) in(field string) (render.Expr, error) {
	if !p.symbol("(") {
		return render.Expr{}, fmt.Errorf("%s in: a '(' must follow", field)
	}
	// The list nests as a parenthesized "or" of its values does, which is
	// how Format writes it.
	if p.depth++; p.depth > MaxDepth {
		return render.Expr{}, fmt.Errorf("a query nested deeper than %d levels", MaxDepth)
	}
	defer func() { p.depth-- }()
	var args []render.Expr
	for {
		if len(args) > 0 {
			if err := p.count(); err != nil {
				return render.Expr{}, err
			}
		}
		v, err := p.value(true)
		if err != nil {
			return render.Expr{}, err
		}
		args = append(args, pred(field, render.OpEq, v))
		if p.symbol(")") {
			break
		}
		if !p.symbol(",") {
			return render.Expr{}, fmt.Errorf("%s in: a ',' or ')' must follow a value", field)
		}
	}
	if len(args) == 1 {
		return args[0], nil
	}
	return render.Expr{Kind: render.ExprOr, Args: args}, nil
}

// Format writes e as a query that [ParseExpr] reads back to e; ok is
// false when e holds what the grammar cannot write (a type-name term
// that is not plain words, a field name that is not one word). It writes
// parentheses only where the grammar needs them (a list inside "and" or
// inside a list of its own kind, a list after "not"), so the text nests
// no deeper than any query that parses to e.
func Format(e render.Expr) (s string, ok bool) {
	var sb strings.Builder
	ok = format(&sb, e, false)
	return sb.String(), ok
}

// format writes e, in parentheses when wrap is set and e is a list.
func format(sb *strings.Builder, e render.Expr, wrap bool) bool {
	switch e.Kind {
	case render.ExprAll:
		return false
	case render.ExprAnd, render.ExprOr:
		if len(e.Args) < 2 {
			return false
		}
		sep := " and "
		if e.Kind == render.ExprOr {
			sep = " or "
		}
		if wrap {
			sb.WriteByte('(')
		}
		for i, a := range e.Args {
			if i > 0 {
				sb.WriteString(sep)
			}
			// "and" binds tighter than "or": only an "and" inside an "or"
			// goes without parentheses.
			inner := a.Kind == e.Kind || e.Kind == render.ExprAnd
			if !format(sb, a, inner) {
				return false
			}
		}
		if wrap {
			sb.WriteByte(')')
		}
		return true
	case render.ExprNot:
		if len(e.Args) != 1 {
			return false
		}
		sb.WriteString("not ")
		return format(sb, e.Args[0], true)
	case render.ExprText:
		sb.WriteString(strconv.Quote(e.Text))
		return true
	case render.ExprName:
		for _, w := range strings.Split(e.Text, " ") {
			p := &parser{s: w}
			if p.word() != w || w == "" || p.atKeyword(0, "and") || p.atKeyword(0, "or") || p.atKeyword(0, "not") || w[0] == '!' || w[0] == '#' || len(w) >= 3 && strings.EqualFold(w[:3], "id:") {
				return false
			}
		}
		sb.WriteString(e.Text)
		return true
	case render.ExprPred:
		f := e.Pred.Field
		p := &parser{s: f}
		if f == "" || p.word() != f || f[0] == '!' || f[0] == '#' || strings.ContainsAny(f, " ") || len(f) >= 3 && strings.EqualFold(f[:3], "id:") || p.atKeyword(0, "not") {
			return false
		}
		sb.WriteString(f)
		if e.Pred.Op == render.OpMatch {
			sb.WriteString(" ~ /")
			sb.WriteString(strings.ReplaceAll(e.Pred.Value, "/", `\/`))
			sb.WriteByte('/')
			return !strings.HasSuffix(e.Pred.Value, `\`)
		}
		sb.WriteString(" " + opText(e.Pred.Op) + " ")
		sb.WriteString(strconv.Quote(e.Pred.Value))
		return opText(e.Pred.Op) != "?"
	}
	return false
}

// ParsePredicate parses `field op value`, op one of = != < <= > >= ~ (==
// is =). The value may be a Go-quoted string.
func ParsePredicate(s string) (render.Predicate, error) {
	if len(s) > MaxPredicate {
		return render.Predicate{}, fmt.Errorf("predicate longer than %d bytes", MaxPredicate)
	}
	at, op := -1, opSyntax[0]
	for i := 0; i < len(s) && at < 0; i++ {
		for _, o := range opSyntax {
			if strings.HasPrefix(s[i:], o.text) {
				at, op = i, o
				break
			}
		}
	}
	if at < 0 {
		return render.Predicate{}, fmt.Errorf("predicate %q has no operator (= != < <= > >= ~)", s)
	}
	p := render.Predicate{Field: strings.Trim(s[:at], spaces), Op: op.op, Value: strings.Trim(s[at+len(op.text):], spaces)}
	if p.Field == "" {
		return render.Predicate{}, fmt.Errorf("predicate %q names no field", s)
	}
	if strings.HasPrefix(p.Value, `"`) {
		v, err := strconv.Unquote(p.Value)
		if err != nil {
			return render.Predicate{}, fmt.Errorf("predicate %q: bad quoted value", s)
		}
		p.Value = v
	}
	return p, nil
}

// FormatPredicate writes p as text that [ParsePredicate] reads back (when
// the field name holds no operator), with the value quoted.
func FormatPredicate(p render.Predicate) string {
	return p.Field + " " + opText(p.Op) + " " + strconv.Quote(p.Value)
}

func opText(o render.Op) string {
	for _, s := range opSyntax {
		if s.op == o && s.text != "==" {
			return s.text
		}
	}
	return "?"
}
