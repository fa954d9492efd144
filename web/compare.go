package web

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"viewer/render"
	"viewer/render/compare"
	"viewer/render/stacks"
	"viewer/trace"
	"viewer/ui/templates"
)

// The compare page and its endpoints (PROTOCOL.md §compare): two traces,
// or two ranges of one, compared by render/compare (a table of counts,
// rates, durations and field statistics with their deltas) and
// render/stacks (a differential stack tree). Each side is a trace id and
// an optional range in the trace's nanoseconds: a, afrom, ato and b,
// bfrom, bto.

// Limits of the compare endpoints.
const (
	DefaultCompareRows = 500  // rows of a compare reply
	MaxCompareRows     = 5000 // the most a reply holds (`limit`)
	// CompareTimeout bounds the numeric field rows, which decode every
	// event of both ranges: an analysis like a stack aggregation
	// (StacksTimeout), not an interactive query.
	CompareTimeout = 10 * time.Second
)

// CompareRow is one row of a comparison as the API writes it; the keys
// and their meaning are those of `viewer diff --json` (render/compare).
type CompareRow struct {
	Kind    string  `json:"kind"`
	Key     string  `json:"key"`
	Measure string  `json:"measure"`
	A       float64 `json:"a"`
	B       float64 `json:"b"`
	Delta   float64 `json:"delta"`
	// Rel is Delta / |A|: null when A is 0 and B is not.
	Rel   *float64 `json:"rel"`
	Score float64  `json:"score"`
}

// NewCompareRow returns the API's form of a row.
func NewCompareRow(r compare.Row) CompareRow {
	c := CompareRow{Kind: r.Kind.String(), Key: r.Key, Measure: r.Measure.String(), A: r.A, B: r.B, Delta: r.Delta, Score: r.Score}
	if !math.IsInf(r.Rel, 0) {
		rel := r.Rel
		c.Rel = &rel
	}
	return c
}

// compareSideReply says what one side of a reply compared.
type compareSideReply struct {
	ID    string     `json:"id"`
	Name  string     `json:"name"`
	First trace.Time `json:"first,string"` // the trace's first event, for times relative to it
	From  trace.Time `json:"from,string"`
	To    trace.Time `json:"to,string"` // exclusive
}

// compareReply is the reply of GET /api/compare.
type compareReply struct {
	A        compareSideReply `json:"a"`
	B        compareSideReply `json:"b"`
	SecondsA float64          `json:"seconds_a"`
	SecondsB float64          `json:"seconds_b"`
	Total    int              `json:"total"` // rows of the whole table; Rows holds the first `limit`
	Rows     []CompareRow     `json:"rows"`
	Fields   bool             `json:"fields"` // the numeric field rows are in
	Notice   string           `json:"notice,omitempty"`
}

// sideSpec is one side of a request: a trace and an optional range.
type sideSpec struct {
	id       string
	from, to *trace.Time
}

// parseSides reads a, afrom, ato, b, bfrom, bto; the error is a message
// for a 400.
func parseSides(q url.Values) ([2]sideSpec, error) {
	var out [2]sideSpec
	for i, p := range []string{"a", "b"} {
		out[i].id = q.Get(p)
		if out[i].id == "" {
			return out, fmt.Errorf("%s: the trace id of side %s is missing", p, p)
		}
		for _, b := range []struct {
			key  string
			into **trace.Time
		}{{p + "from", &out[i].from}, {p + "to", &out[i].to}} {
			s := q.Get(b.key)
			if s == "" {
				continue
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return out, fmt.Errorf("%s: not a time in nanoseconds", b.key)
			}
			t := trace.Time(n)
			*b.into = &t
		}
		if f, t := out[i].from, out[i].to; f != nil && t != nil && *t <= *f {
			return out, fmt.Errorf("%sto: the range of side %s is empty", p, p)
		}
	}
	return out, nil
}

// side is the compared range of x: the trace's whole span, cut by the
// spec's bounds.
func (sp sideSpec) side(x *render.Index) compare.Side {
	s := compare.Whole(x)
	if sp.from != nil {
		s.From = *sp.from
	}
	if sp.to != nil {
		s.To = *sp.to
	}
	return s
}

// comparedSide is one side of a request, its trace indexed.
type comparedSide struct {
	e    Entry
	idx  *index
	side compare.Side
}

// compareSides resolves both sides of a request to indexed traces; it
// writes the error and returns ok false when it fails. release lets go
// of both indexes.
func (s *Server) compareSides(w http.ResponseWriter, r *http.Request) (sides [2]comparedSide, release func(), ok bool) {
	specs, err := parseSides(r.URL.Query())
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return sides, nil, false
	}
	var releases []func()
	release = func() {
		for _, f := range releases {
			f()
		}
	}
	for i, sp := range specs {
		id, ok := parseTraceID(sp.id)
		if !ok {
			release()
			writeError(w, http.StatusNotFound, "ab"[i:i+1]+": not a trace id")
			return sides, nil, false
		}
		e, ok := s.lib.Get(id)
		if !ok {
			release()
			writeError(w, http.StatusNotFound, "ab"[i:i+1]+": no such trace")
			return sides, nil, false
		}
		idx, rel, ok := s.index(w, e)
		if !ok {
			release()
			return sides, nil, false
		}
		releases = append(releases, rel)
		sides[i] = comparedSide{e: e, idx: idx, side: sp.side(idx.x)}
	}
	return sides, release, true
}

func (c comparedSide) reply() compareSideReply {
	first, _ := c.idx.x.Span()
	return compareSideReply{ID: c.e.ID.String(), Name: c.e.Name, First: first, From: c.side.From, To: c.side.To}
}

// handleCompare answers GET /api/compare: the compare table of two
// sides, rows by significance. The numeric field rows decode every event
// of both ranges; when that does not finish within CompareTimeout the
// table is made again without them, within the query timeout, and the
// reply says so.
func (s *Server) handleCompare(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := countParam("limit", q.Get("limit"), DefaultCompareRows, MaxCompareRows)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	fields := true
	switch q.Get("fields") {
	case "", "1":
	case "0":
		fields = false
	default:
		writeError(w, http.StatusBadRequest, "fields: 0 or 1")
		return
	}
	sides, release, ok := s.compareSides(w, r)
	if !ok {
		return
	}
	defer release()
	ctx, done, ok := s.searchSlot(w, r)
	if !ok {
		return
	}
	defer done()
	out := compareReply{A: sides[0].reply(), B: sides[1].reply(), Rows: []CompareRow{}, Fields: fields}
	opts := compare.Options{NoFields: true}
	if fields {
		// The field rows get the longer timeout; the index-only rows
		// below, quick, the query timeout.
		fctx, cancel := context.WithTimeout(r.Context(), CompareTimeout)
		defer cancel()
		ctx = fctx
		opts.NoFields = false
	}
	tab, err := compare.Compare(ctx, sides[0].side, sides[1].side, opts)
	if err != nil && fields && render.Stopped(err) && r.Context().Err() == nil {
		ctx2, cancel := context.WithTimeout(r.Context(), s.res.timeout)
		defer cancel()
		out.Fields = false
		out.Notice = fmt.Sprintf("the numeric field rows are left out: decoding every event of both ranges took longer than %v; compare shorter ranges to see them", CompareTimeout)
		tab, err = compare.Compare(ctx2, sides[0].side, sides[1].side, compare.Options{NoFields: true})
	}
	switch {
	case err == nil:
	case r.Context().Err() != nil:
		return
	case render.Stopped(err):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("the comparison did not finish within %v: compare shorter ranges", s.res.timeout))
		return
	default:
		writeError(w, http.StatusInternalServerError, "compare failed: "+err.Error())
		return
	}
	out.SecondsA, out.SecondsB, out.Total = tab.SecondsA, tab.SecondsB, len(tab.Rows)
	for _, row := range tab.Rows[:min(len(tab.Rows), limit)] {
		out.Rows = append(out.Rows, NewCompareRow(row))
	}
	writeJSON(w, http.StatusOK, out)
}

// handleCompareStacks answers GET /api/compare/stacks: the stacks of both
// sides aggregated as the stacks endpoint does (event, weight, view, tf,
// thread, width; not tracks, which belong to one trace) and laid out as
// one tree, each node's weights fractions of its side's total.
func (s *Server) handleCompareStacks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Has("tracks") || q.Has("from") || q.Has("to") {
		writeError(w, http.StatusBadRequest, "tracks, from, to: not with compare (give afrom, ato, bfrom, bto)")
		return
	}
	sides, release, ok := s.compareSides(w, r)
	if !ok {
		return
	}
	defer release()
	sq, width, err := stacksQuery(q, sides[0].idx.x.Meta())
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	// Like a stack aggregation, both sides take one search slot.
	ctx, done, ok := s.querySlot(w, r, StacksTimeout)
	if !ok {
		return
	}
	defer done()
	var aggs [2]*stacks.Aggregator
	partial := false
	for i, sd := range sides {
		sq := sq
		sq.From, sq.To = sd.side.From, sd.side.To
		a, p, err := stacks.Aggregate(ctx, sd.idx.x, sq)
		switch {
		case err == nil:
		case r.Context().Err() != nil:
			return
		default:
			writeError(w, http.StatusBadRequest, "ab"[i:i+1]+": "+err.Error())
			return
		}
		aggs[i], partial = a, partial || p
	}
	out := stacks.Diff(aggs[0], aggs[1], width, 2*width, sq.Weight.Unit())
	out.Partial = partial
	writeJSON(w, http.StatusOK, out)
}

// handleComparePage serves /compare?a=…&b=…: the page that shows both
// replies (ui/static/js/comparepage.js). Its data names the sides; the
// script asks the API.
func (s *Server) handleComparePage(w http.ResponseWriter, r *http.Request) {
	specs, err := parseSides(r.URL.Query())
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "This compare link cannot be read: "+err.Error())
		return
	}
	var names [2]string
	data := map[string]any{"page": "compare"}
	for i, sp := range specs {
		id, ok := parseTraceID(sp.id)
		e, found := s.lib.Get(id)
		if !ok || !found {
			s.errorPage(w, r, http.StatusNotFound, "The library holds no trace "+sp.id+"; it may have been deleted.")
			return
		}
		s.ix.get(e) // start indexing now if it is not loaded
		names[i] = e.Name
		side := map[string]any{"trace": s.listInfo(e), "from": nil, "to": nil}
		if sp.from != nil {
			side["from"] = strconv.FormatInt(int64(*sp.from), 10)
		}
		if sp.to != nil {
			side["to"] = strconv.FormatInt(int64(*sp.to), 10)
		}
		data["ab"[i:i+1]] = side
	}
	s.render(w, r.Context(), http.StatusOK, templates.Compare(templates.ComparePage{
		Assets: s.assets(),
		Script: s.static.URL("js/comparepage.js"),
		A:      names[0],
		B:      names[1],
		Data:   data,
	}))
}
