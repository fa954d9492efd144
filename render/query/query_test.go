package query

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"viewer/render"
	"viewer/trace"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		q    string
		want string // the expression, formatted; "" when the query is refused
	}{
		{"GC/Start", `GC/Start`},
		{"#1", `@id = "1"`},
		{"id:2 && Reason = 4", `@id = "2" and Reason = "4"`},
		{"#1 && #0x1 && Alloc", `@id = "1" and @id = "1" and Alloc`},
		{"a && b", `a and b`},
		{"Thread Sample", `Thread Sample`},
		{"TypeName ~ System.Byte[]", `TypeName ~ "System.Byte[]"`},
		{"Message ~ hello world", `Message ~ "hello world"`},
		{"a=1 or b<2 and not c>=3", `a = "1" or b < "2" and not c >= "3"`},
		{"a=1 || b<2 && !c>=3", `a = "1" or b < "2" and not c >= "3"`},
		{"(a=1 or b=2) and GC", `(a = "1" or b = "2") and GC`},
		{"Reason in (1, 4, Induced)", `Reason = "1" or Reason = "4" or Reason = "Induced"`},
		{"Reason in (\"a,b\")", `Reason = "a,b"`},
		{`name ~ /^item-(3|4)$/`, `name ~ /^item-(3|4)$/`},
		{`path ~ /a\/b/`, `path ~ /a\/b/`},
		{`"zzzz"`, `"zzzz"`},
		{`not "a b" and x != "and"`, `not "a b" and x != "and"`},
		{"@event = Start", `@event = "Start"`},
		{"(x = a)b", ""},
		{"x = (a)", `x = "(a)"`},
		{"(x = (a))", ""},
		{"", ""},
		{"a && ", ""},
		{"a and", ""},
		{"(a", ""},
		{"a)", ""},
		{"#x", ""},
		{"= 3", ""},
		{"x ~ /(/", ""},
		{"x ~ /abc", ""},
		{"x in 3", `x in 3`},
		{"x in (3", ""},
		{`"unterminated`, ""},
		{strings.Repeat("(", MaxDepth+1) + "a" + strings.Repeat(")", MaxDepth+1), ""},
		{strings.Repeat("not ", MaxDepth) + "x in (1, 2)", ""}, // the list nests once more
		{strings.Repeat("not ", MaxDepth-1) + "x in (1, 2)", strings.Repeat("not ", MaxDepth-1) + `(x = "1" or x = "2")`},
		{"(a or b) or c and (d and e)", `(a or b) or c and (d and e)`},
		{"not (a and b) or not (c or d)", `not (a and b) or not (c or d)`},
		{strings.Repeat("a", MaxLen+1), ""},
		{strings.Repeat("a=1&&", MaxTerms) + "a=1", ""},
	} {
		e, err := ParseExpr(c.q)
		got := ""
		if err == nil {
			var ok bool
			if got, ok = Format(e); !ok {
				got = fmt.Sprintf("unformattable %+v", e)
			}
		}
		if got != c.want {
			t.Errorf("ParseExpr(%.40q) = %s, %v; want %s", c.q, got, err, c.want)
		}
	}
	f, err := Parse("GC/Start and Reason = 4", nil)
	if err != nil || f.Expr.Kind != render.ExprAnd || len(f.Types) != 0 {
		t.Errorf("Parse: %+v, %v", f, err)
	}
}

func TestParsePredicate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want render.Predicate
		bad  bool
	}{
		{in: "a=1", want: render.Predicate{Field: "a", Op: render.OpEq, Value: "1"}},
		{in: " size  >=  0x10 ", want: render.Predicate{Field: "size", Op: render.OpGe, Value: "0x10"}},
		{in: "x != y", want: render.Predicate{Field: "x", Op: render.OpNe, Value: "y"}},
		{in: "x == y", want: render.Predicate{Field: "x", Op: render.OpEq, Value: "y"}},
		{in: "x<=-3", want: render.Predicate{Field: "x", Op: render.OpLe, Value: "-3"}},
		{in: `name ~ "a = b"`, want: render.Predicate{Field: "name", Op: render.OpContains, Value: "a = b"}},
		{in: "p.q > 2.5", want: render.Predicate{Field: "p.q", Op: render.OpGt, Value: "2.5"}},
		{in: "novalue", bad: true},
		{in: "= 3", bad: true},
		{in: `x = "unterminated`, bad: true},
	} {
		got, err := ParsePredicate(c.in)
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("ParsePredicate(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	d := trace.Details{Label: "hello", Fields: []trace.Field{
		{Name: "i", Value: trace.IntValue(-5)},
		{Name: "u", Value: trace.HexValue(0x20)},
		{Name: "f", Value: trace.FloatValue(2.5)},
		{Name: "s", Value: trace.StringValue("Abc")},
	}}
	for _, c := range []struct {
		p    string
		want bool
	}{
		{"i < 0", true}, {"i = -5", true}, {"i > -6", true}, {"i >= -4", false},
		{"u = 32", true}, {"u = 0x20", true}, {"u > -1", true}, {"u < 16", false},
		{"f <= 2.5", true}, {"f > 3", false}, {"s = Abc", true}, {"s ~ bC", true}, {"s != Abc", false},
		{"s < B", true}, {"label ~ ELL", true}, {"missing = 1", false}, {"missing != 1", false},
	} {
		p, err := ParsePredicate(c.p)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Match(d); got != c.want {
			t.Errorf("%s: %v, want %v", c.p, got, c.want)
		}
	}
}

// FuzzParsePredicate checks that any text parses or fails cleanly, and
// that a parsed predicate prints as text that parses back to it.
func FuzzParsePredicate(f *testing.F) {
	for _, s := range []string{"a=1", "x != y", `name ~ "a = b"`, "p.q >= -2.5", "==", "a<<b", "\"\"=\"\""} {
		f.Add(s)
	}
	for _, s := range []string{"a=1 or (b<2 and not c ~ /x|y/)", `"free" && #3`, "x in (1, \"2\", 3)", "!(!a)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if e, err := ParseExpr(s); err == nil {
			// A parsed query prints as text that parses back to it.
			if text, ok := Format(e); ok && len(text) <= MaxLen {
				e2, err := ParseExpr(text)
				if err != nil || !reflect.DeepEqual(e, e2) {
					t.Fatalf("%q parsed to %+v, printed %q, parsed back to %+v, %v", s, e, text, e2, err)
				}
			}
			// It compiles, and matching it cannot fail.
			m, err := render.NewMatcher(render.Filter{Expr: e}, fuzzReader{})
			if err != nil {
				t.Fatalf("%q parsed but does not compile: %v", s, err)
			}
			m.Match(&trace.Event{})
		}
		p, err := ParsePredicate(s)
		if err != nil {
			return
		}
		q, err := ParsePredicate(FormatPredicate(p))
		if len(FormatPredicate(p)) > MaxPredicate {
			return // quoting made it longer than the limit
		}
		if err != nil || q != p {
			// A field name containing an operator cannot print back.
			for _, o := range opSyntax {
				if strings.Contains(p.Field, o.text) {
					return
				}
			}
			if p.Field != strings.TrimSpace(p.Field) {
				return
			}
			t.Fatalf("%q parsed to %+v, printed %q, parsed back to %+v, %v", s, p, FormatPredicate(p), q, err)
		}
		p.Match(trace.Details{Label: s, Fields: []trace.Field{{Name: p.Field, Value: trace.StringValue(p.Value)}}})
	})
}

// fuzzReader is a trace of one event type with two fields.
type fuzzReader struct{}

func (fuzzReader) Meta() *trace.Meta {
	return &trace.Meta{Types: []trace.EventType{{Name: "E", Fields: []trace.FieldSpec{{Name: "a"}, {Name: "b"}}}}}
}
func (fuzzReader) ReadEvent() (trace.Event, error)     { return trace.Event{}, nil }
func (fuzzReader) Stack(trace.StackID) []uint64        { return nil }
func (fuzzReader) Labels(trace.LabelsID) []trace.Label { return nil }
func (fuzzReader) Details(trace.Event) (trace.Details, error) {
	return trace.Details{Label: "l", Fields: []trace.Field{{Name: "a", Value: trace.IntValue(1)}, {Name: "b", Value: trace.StringValue("x")}}}, nil
}
