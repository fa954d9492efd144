package query

import (
	"fmt"
	"strings"
	"testing"

	"viewer/render"
	"viewer/trace"
)

func TestParse(t *testing.T) {
	m := &trace.Meta{Types: []trace.EventType{
		{Provider: "P", Name: "GC/Start", ID: 1},
		{Provider: "P", Name: "GC/Stop", ID: 2},
		{Provider: "Q", Name: "Alloc", ID: 1},
	}}
	for _, c := range []struct {
		q    string
		want string // the filter, printed; "" when the query is refused
	}{
		{"GC/Start", `{[] GC/Start [] []}`},
		{"#1", `{[0 2]  [] []}`},
		{"id:2 && Reason = 4", `{[1]  [{Reason 1 4}] []}`},
		{"#1 && #0x1 && Alloc", `{[0 2] Alloc [] []}`},
		{"#1 && #2", `{[-2]  [] []}`},
		{"#9", `{[-2]  [] []}`},
		{"a && b", ""},
		{"", ""},
		{"a && ", ""},
		{"#x", ""},
		{"= 3", ""},
		{strings.Repeat("a", MaxLen+1), ""},
		{strings.Repeat("a=1&&", MaxTerms) + "a=1", ""},
	} {
		f, err := Parse(c.q, m)
		got := ""
		if err == nil {
			got = fmt.Sprint(f)
		}
		if got != c.want {
			t.Errorf("Parse(%.40q) = %s, %v; want %s", c.q, got, err, c.want)
		}
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
	f.Fuzz(func(t *testing.T, s string) {
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
