package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"viewer/render"
	"viewer/render/query"
	"viewer/trace"
	"viewer/trace/export"
)

// Limits of the table endpoints (PROTOCOL.md §3, counts and table).
const (
	MaxTableTracks    = 4096 // track ids in `tracks`
	DefaultTableLimit = 200  // rows of a table page
	MaxTableLimit     = 1000
	MaxTableColumns   = 256 // field columns of a table page
	DefaultHistBins   = 20  // bins of a counts reply's histogram
	MaxHistBins       = 1000
)

// selection is what the table endpoints select: a query over a time
// range and a set of tracks.
type selection struct {
	f      render.Filter
	lo, hi trace.Time
}

// parseSelection reads q, from, to and tracks; the error is a message for
// a 400.
func parseSelection(r *http.Request, idx *index) (selection, error) {
	q := r.URL.Query()
	first, last := idx.x.Span()
	sel := selection{lo: first, hi: last}
	if s := q.Get("q"); strings.TrimSpace(s) != "" {
		f, err := query.Parse(s, idx.x.Meta())
		if err != nil {
			return sel, err
		}
		sel.f = f
	}
	for _, p := range []struct {
		name string
		to   *trace.Time
	}{{"from", &sel.lo}, {"to", &sel.hi}} {
		if s := q.Get(p.name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return sel, fmt.Errorf("%s: not a time in nanoseconds", p.name)
			}
			*p.to = trace.Time(n)
		}
	}
	if s := q.Get("tracks"); s != "" {
		parts := strings.Split(s, ",")
		if len(parts) > MaxTableTracks {
			return sel, fmt.Errorf("tracks: more than %d", MaxTableTracks)
		}
		for _, p := range parts {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
			if err != nil {
				return sel, fmt.Errorf("tracks: %q is not a track id", p)
			}
			sel.f.Tracks = append(sel.f.Tracks, trace.TrackID(n))
		}
	}
	sel.f.Budget = MaxSearchDecodes
	return sel, nil
}

// searchSlot waits for a search slot within the query's time budget; ok
// is false when it wrote the reply (503) or the client went away. done
// releases the slot and the budget.
func (s *Server) searchSlot(w http.ResponseWriter, r *http.Request) (ctx context.Context, done func(), ok bool) {
	return s.querySlot(w, r, s.res.timeout)
}

// querySlot is searchSlot for a query whose budget is timeout (a stack
// aggregation's is StacksTimeout).
func (s *Server) querySlot(w http.ResponseWriter, r *http.Request, timeout time.Duration) (ctx context.Context, done func(), ok bool) {
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	select {
	case s.res.searchSlots <- struct{}{}:
		return ctx, func() { <-s.res.searchSlots; cancel() }, true
	case <-ctx.Done():
		cancel()
		if r.Context().Err() == nil {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("too many queries are running; none finished within %v: try again", timeout))
		}
		return nil, nil, false
	}
}

// cutOffNotice is the notice of a reply cut off by its budget.
func (s *Server) cutOffNotice() string {
	return fmt.Sprintf("the query was cut off (%v, or %d decoded events): the numbers are those found by then; narrow the query, the range or the tracks", s.res.timeout, MaxSearchDecodes)
}

// countsReply is the reply of GET /api/traces/{id}/counts.
type countsReply struct {
	From     trace.Time   `json:"from,string"`
	To       trace.Time   `json:"to,string"`
	Total    int64        `json:"total"`
	Types    []typeCount  `json:"types"`
	Tracks   []trackCount `json:"tracks"`
	Complete bool         `json:"complete"`
	CutOff   bool         `json:"cut_off,omitempty"`
	Notice   string       `json:"notice,omitempty"`
	// Histogram is the distribution of the field named by `field`.
	Histogram *histogramReply `json:"histogram,omitempty"`
}

type histogramReply struct {
	Field    string  `json:"field"`
	Count    int64   `json:"count"`
	Missing  int64   `json:"missing"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	Mean     float64 `json:"mean"`
	P50      float64 `json:"p50"`
	P90      float64 `json:"p90"`
	P99      float64 `json:"p99"`
	Bins     []int64 `json:"bins"`
	Complete bool    `json:"complete"`
}

type typeCount struct {
	Type     trace.TypeID `json:"type"`
	Provider string       `json:"provider"`
	Event    string       `json:"event"`
	Count    int64        `json:"count"`
}

type trackCount struct {
	Track trace.TrackID `json:"track"`
	Name  string        `json:"name"`
	Count int64         `json:"count"`
}

// handleCounts answers an area selection's counts table: the events
// matching q in [from, to] on the tracks, per type and per track.
func (s *Server) handleCounts(w http.ResponseWriter, r *http.Request) {
	_, idx, release, ok := s.entryIndex(w, r)
	if !ok {
		return
	}
	defer release()
	sel, err := parseSelection(r, idx)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	field := r.URL.Query().Get("field")
	bins, err := countParam("bins", r.URL.Query().Get("bins"), DefaultHistBins, MaxHistBins)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	if len(field) > query.MaxLen {
		writeError(w, http.StatusBadRequest, "field: too long")
		return
	}
	ctx, done, ok := s.searchSlot(w, r)
	if !ok {
		return
	}
	defer done()
	t, err := idx.x.Count(ctx, sel.f, sel.lo, sel.hi)
	var hist *histogramReply
	if field != "" && err == nil {
		var h render.Histogram
		h, err = idx.x.Histogram(ctx, sel.f, sel.lo, sel.hi, field, bins)
		hist = &histogramReply{Field: field, Count: h.Count, Missing: h.Missing, Min: h.Min, Max: h.Max, Mean: h.Mean,
			P50: h.P50, P90: h.P90, P99: h.P99, Bins: h.Bins, Complete: h.Complete}
	}
	out := countsReply{From: sel.lo, To: sel.hi, Total: t.Total, Types: []typeCount{}, Tracks: []trackCount{}, Complete: t.Complete, Histogram: hist}
	switch {
	case err == nil:
	case r.Context().Err() != nil:
		return
	case render.Stopped(err):
		out.CutOff, out.Notice = true, s.cutOffNotice()
	default:
		writeError(w, http.StatusInternalServerError, "count failed: "+err.Error())
		return
	}
	m := idx.x.Meta()
	for ty, n := range t.Types {
		tc := typeCount{Type: ty, Count: n}
		if ty >= 0 && int(ty) < len(m.Types) {
			tc.Provider, tc.Event = m.Types[ty].Provider, m.Types[ty].Name
		}
		out.Types = append(out.Types, tc)
	}
	slices.SortFunc(out.Types, func(a, b typeCount) int {
		if a.Count != b.Count {
			return int(b.Count - a.Count)
		}
		return int(a.Type - b.Type)
	})
	for tr, n := range t.Tracks {
		tc := trackCount{Track: tr, Count: n}
		if tr >= 0 && int(tr) < len(m.Tracks) {
			tc.Name = m.Tracks[tr].Name
		}
		out.Tracks = append(out.Tracks, tc)
	}
	slices.SortFunc(out.Tracks, func(a, b trackCount) int {
		if a.Count != b.Count {
			return int(b.Count - a.Count)
		}
		return int(a.Track - b.Track)
	})
	writeJSON(w, http.StatusOK, out)
}

// tableReply is the reply of GET /api/traces/{id}/table.
type tableReply struct {
	// Total is the selection's rows, given with `row` (random access).
	Total   *int64     `json:"total,omitempty"`
	Columns []string   `json:"columns"`
	Rows    []tableRow `json:"rows"`
	More    bool       `json:"more"`
	CutOff  bool       `json:"cut_off,omitempty"`
	Notice  string     `json:"notice,omitempty"`
}

type tableRow struct {
	Ev     EventRef          `json:"ev"`
	Time   trace.Time        `json:"time,string"`
	Track  trace.TrackID     `json:"track"`
	Type   trace.TypeID      `json:"type"`
	Event  string            `json:"event"`
	Label  string            `json:"label"`
	Values []json.RawMessage `json:"values"` // by column; null where the event has no such field
}

// handleTable answers one page of an events table: the events matching
// q in [from, to] on the tracks, in time order, after the event `after`,
// with their fields as columns.
func (s *Server) handleTable(w http.ResponseWriter, r *http.Request) {
	e, idx, release, ok := s.entryIndex(w, r)
	if !ok {
		return
	}
	defer release()
	sel, err := parseSelection(r, idx)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	q := r.URL.Query()
	limit, err := countParam("limit", q.Get("limit"), DefaultTableLimit, MaxTableLimit)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	from := render.At(sel.lo)
	if a := q.Get("after"); a != "" {
		ref, err := ParseEventRef(a)
		if err != nil {
			writeError(w, http.StatusBadRequest, "after: "+err.Error())
			return
		}
		pos, ok := idx.x.PositionOf(render.EventID(ref))
		if !ok {
			writeError(w, http.StatusBadRequest, "after: no such event")
			return
		}
		if pos.Time >= sel.lo {
			from = pos
		}
	}
	out := tableReply{Columns: []string{}, Rows: []tableRow{}}
	if rs := q.Get("row"); rs != "" {
		// Random access (filter.go): the selection's query evaluated into
		// a cached mask, the row found by ranks.
		k, err := strconv.ParseInt(rs, 10, 64)
		if err != nil || k < 0 || q.Get("after") != "" {
			writeError(w, http.StatusBadRequest, "row: not a row number (and not with after)")
			return
		}
		m, ok := s.maskOf(w, r, e, idx, q.Get("q"), sel.f)
		if !ok {
			return
		}
		total := idx.x.CountMasked(m, sel.f.Tracks, sel.lo, sel.hi)
		out.Total = &total
		if !m.Complete {
			out.CutOff, out.Notice = true, s.filterNotice()
		}
		pos, ok := idx.x.Seek(m, sel.f.Tracks, sel.lo, k)
		if !ok || k >= total {
			writeJSON(w, http.StatusOK, out)
			return
		}
		from = pos
	}
	ctx, done, ok := s.searchSlot(w, r)
	if !ok {
		return
	}
	defer done()
	col := map[string]int{}
	m := idx.x.Meta()
	for pos, err := range idx.x.Hits(ctx, sel.f, from, false) {
		if err != nil {
			switch {
			case r.Context().Err() != nil:
				return
			case render.Stopped(err):
				out.CutOff, out.Notice = true, s.cutOffNotice()
			default:
				writeError(w, http.StatusInternalServerError, "table failed: "+err.Error())
				return
			}
			break
		}
		if pos.Time > sel.hi {
			break
		}
		if len(out.Rows) == limit {
			out.More = true
			break
		}
		d, err := idx.x.Details(pos.ID, nil)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "table failed: "+err.Error())
			return
		}
		row := tableRow{Ev: EventRef(pos.ID), Time: pos.Time, Track: pos.ID.Track, Type: d.Event.Type, Label: d.Details.Label, Values: []json.RawMessage{}}
		if ty := d.Event.Type; ty >= 0 && int(ty) < len(m.Types) {
			row.Event = m.Types[ty].Name
			if p := m.Types[ty].Provider; p != "" {
				row.Event = p + "/" + row.Event
			}
		}
		for _, f := range d.Details.Fields {
			k, ok := col[f.Name]
			if !ok {
				if len(out.Columns) == MaxTableColumns {
					continue
				}
				k = len(out.Columns)
				col[f.Name] = k
				out.Columns = append(out.Columns, f.Name)
			}
			for len(row.Values) <= k {
				row.Values = append(row.Values, json.RawMessage("null"))
			}
			if string(row.Values[k]) == "null" { // the first field of a name wins
				row.Values[k] = export.AppendValue(nil, f.Value)
			}
		}
		out.Rows = append(out.Rows, row)
	}
	for i := range out.Rows { // every row as wide as the columns
		for len(out.Rows[i].Values) < len(out.Columns) {
			out.Rows[i].Values = append(out.Rows[i].Values, json.RawMessage("null"))
		}
	}
	writeJSON(w, http.StatusOK, out)
}
