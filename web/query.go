package web

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"viewer/render"
	"viewer/trace"
)

// MaxQueryTerms bounds the terms of one search query.
const MaxQueryTerms = 16

// ParseQuery turns a search query (PROTOCOL.md §5) into a render filter.
// Terms are joined with "&&" and must all hold; a term is "#CODE" or
// "id:CODE" (event types with that numeric id), "FIELD OP VALUE" (a
// predicate on decoded fields), or else a case-insensitive substring of
// the event type's "provider/name".
func ParseQuery(q string, m *trace.Meta) (render.Filter, error) {
	var f render.Filter
	q = strings.TrimSpace(q)
	if q == "" {
		return f, errors.New("the search query is empty")
	}
	if len(q) > MaxViewQuery {
		return f, fmt.Errorf("the search query is longer than %d bytes", MaxViewQuery)
	}
	terms := strings.Split(q, "&&")
	if len(terms) > MaxQueryTerms {
		return f, fmt.Errorf("more than %d search terms", MaxQueryTerms)
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
			p, err := render.ParsePredicate(t)
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
