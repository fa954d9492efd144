// Package query is the search query grammar (web/PROTOCOL.md §5): it turns
// the text a user types into a [render.Filter]. It is the one place that
// reads a query: the server's search endpoint calls [Parse], and the page
// passes the text through untouched.
//
// A query is terms joined by "&&", all of which must hold:
//
//   - "#CODE" or "id:CODE": event types whose numeric id is CODE;
//   - "FIELD OP VALUE": a [render.Predicate] on decoded fields (see
//     [ParsePredicate]);
//   - anything else: a case-insensitive substring of the event type's
//     "provider/name" (one such term per query).
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
	MaxTerms     = 16      // terms of a query
	MaxPredicate = MaxLen  // bytes of one predicate given to ParsePredicate
)

// Parse turns a search query into a render filter; m names the event
// types that "#CODE" terms select.
func Parse(q string, m *trace.Meta) (render.Filter, error) {
	var f render.Filter
	q = strings.TrimSpace(q)
	if q == "" {
		return f, errors.New("the search query is empty")
	}
	if len(q) > MaxLen {
		return f, fmt.Errorf("the search query is longer than %d bytes", MaxLen)
	}
	terms := strings.Split(q, "&&")
	if len(terms) > MaxTerms {
		return f, fmt.Errorf("more than %d search terms", MaxTerms)
	}
	codeSet := false
	for _, t := range terms {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			return f, errors.New("an empty search term")
		case strings.HasPrefix(t, "#") || strings.HasPrefix(strings.ToLower(t), "id:"):
			s := strings.TrimPrefix(t, "#")
			if len(s) == len(t) {
				s = t[3:]
			}
			code, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
			if err != nil {
				return f, fmt.Errorf("%q is not an event code", t)
			}
			var types []trace.TypeID
			for i, et := range m.Types {
				if et.ID == code && (!codeSet || containsType(f.Types, trace.TypeID(i))) {
					types = append(types, trace.TypeID(i))
				}
			}
			if len(types) == 0 {
				types = []trace.TypeID{-2} // matches nothing
			}
			f.Types, codeSet = types, true
		case strings.ContainsAny(t, "=<>~"):
			p, err := ParsePredicate(t)
			if err != nil {
				return f, err
			}
			f.Where = append(f.Where, p)
		default:
			if f.Name != "" {
				return f, errors.New("only one name term per search")
			}
			f.Name = t
		}
	}
	return f, nil
}

func containsType(ts []trace.TypeID, t trace.TypeID) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// opSyntax lists the operators as written, longest first for parsing.
var opSyntax = []struct {
	text string
	op   render.Op
}{{"!=", render.OpNe}, {"<=", render.OpLe}, {">=", render.OpGe}, {"==", render.OpEq}, {"=", render.OpEq}, {"<", render.OpLt}, {">", render.OpGt}, {"~", render.OpContains}}

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
	p := render.Predicate{Field: strings.TrimSpace(s[:at]), Op: op.op, Value: strings.TrimSpace(s[at+len(op.text):])}
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
