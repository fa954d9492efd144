package web

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"viewer/render/query"
	"viewer/trace"
	"viewer/trace/span"
)

// ViewVersion is the version of the URL-state grammar this server writes.
// Older versions are upgraded by [ParseView]; newer ones are refused.
const ViewVersion = 1

// Limits on what one URL may ask for, so that a hostile link cannot make
// the server (or the page) allocate without bound.
const (
	MaxViewIDs   = 1 << 16      // track or type ids in one list or set, expanded
	MaxViewQuery = query.MaxLen // bytes of the search query or track filter
	MaxViewName  = 256          // bytes of the stacks panel's event or weight
	MaxViewPath  = 8192         // bytes of the stacks panel's selected node path
)

// Mode is how the timeline draws events (g2's two glyph modes).
type Mode string

const (
	ModeEvent   Mode = "event"   // boxes holding the event code or name
	ModeSummary Mode = "summary" // ticks
)

// View is the state of a viewer tab that a shareable URL carries: the
// query of /t/{id}. The zero View (with Version set) is the default view.
type View struct {
	Version int `json:"v"`
	// HasRange says whether Start and End are set; without it the page
	// shows the whole trace.
	HasRange bool       `json:"has_range"`
	Start    trace.Time `json:"start,string"`
	End      trace.Time `json:"end,string"`
	// Sel is the selected event, or nil.
	Sel *EventRef `json:"sel"`
	// Track is the selected track, or nil.
	Track     *trace.TrackID  `json:"track"`
	Hide      []trace.TrackID `json:"hide"`       // hidden tracks, increasing
	Pin       []trace.TrackID `json:"pin"`        // pinned tracks, in order
	Order     []trace.TrackID `json:"order"`      // explicit track order, or empty
	HideTypes []trace.TypeID  `json:"hide_types"` // hidden event types, increasing
	// HideDerived are the derived tracks (trace/span) not shown, increasing.
	HideDerived []span.TrackID `json:"hide_derived"`
	Mode        Mode           `json:"mode"`
	Query       string         `json:"q"`      // search query
	Filter      string         `json:"filter"` // track-name filter
	// Where is the timeline filter's query (PROTOCOL.md §3, filter);
	// WhereMode is "dim" or "hide": what becomes of the other events.
	Where     string `json:"where"`
	WhereMode string `json:"where_mode"`

	// The stacks panel (PROTOCOL.md §6): open or closed, its view, the
	// time range and tracks it aggregates, the event carrying the stacks
	// ("" the default), the weight ("" count, "time", "field:NAME"), the
	// transforms (the stacks endpoint's tf), its search, the selected
	// function and the selected node as its path of frame names joined by
	// newlines.
	Stacks       string `json:"stacks"`
	StacksView   string `json:"stacks_view"`
	StacksRange  string `json:"stacks_range"`
	StacksTracks string `json:"stacks_tracks"`
	StacksEvent  string `json:"stacks_event"`
	StacksWeight string `json:"stacks_weight"`
	StacksTf     string `json:"stacks_tf"`
	StacksQ      string `json:"stacks_q"`
	StacksFn     string `json:"stacks_fn"`
	StacksNode   string `json:"stacks_node"`

	// Traces are a combined view's traces (/v, PROTOCOL.md §together),
	// in order; empty on /t/{id}. Offsets are the user's offsets of
	// some of them (g2's time slew), by increasing position in Traces.
	Traces  []uuid.UUID   `json:"traces"`
	Offsets []TraceOffset `json:"offsets"`
}

// DefaultView returns the view of a link without parameters.
func DefaultView() View {
	var v View
	for i := range viewParams {
		viewParams[i].setDefault(&v)
	}
	return v
}

// ViewError reports a URL parameter that does not parse.
type ViewError struct {
	Key string
	Msg string
}

func (e *ViewError) Error() string { return "view parameter " + strconv.Quote(e.Key) + ": " + e.Msg }

// ParseView decodes the view state of a shareable URL's query. It is the
// one place that reads view parameters; [View.Encode] is its inverse. Both
// follow the grammar's table, viewParams, which the page's urlstate.js
// follows too. Unknown keys are ignored so that newer links degrade
// gracefully; the first value that does not parse, in the table's order,
// is the error.
func ParseView(q url.Values) (View, error) {
	v := DefaultView()
	var startKey string // the range start's key
	var haveStart bool
	for i := range viewParams {
		p := &viewParams[i]
		vals, ok := q[p.Key]
		if ok && len(vals) != 1 {
			return View{}, &ViewError{p.Key, "given more than once"}
		}
		if ok {
			if err := p.parse(&v, vals[0]); err != nil {
				return View{}, &ViewError{p.Key, err.Error()}
			}
		}
		switch p.Kind {
		case kindStart:
			startKey, haveStart = p.Key, ok
		case kindEnd:
			if haveStart != ok {
				return View{}, &ViewError{startKey, fmt.Sprintf("a range needs both %s and %s", startKey, p.Key)}
			}
			if ok {
				if v.End <= v.Start {
					return View{}, &ViewError{p.Key, "the range ends before it starts"}
				}
				v.HasRange = true
			}
		}
	}
	return v, nil
}

// Encode returns the query string of v (without "?"), leaving out
// defaults, in the table's key order so that equal views give equal URLs.
// The server reads URLs and never writes one: Encode is ParseView's other
// half in the tests, the Go side of the agreement with urlstate.js's
// formatState (urlstate_test.go).
func (v View) Encode() string {
	var b strings.Builder
	for i := range viewParams {
		p := &viewParams[i]
		val := p.format(&v)
		if val == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.Key)
		b.WriteByte('=')
		b.WriteString(val)
	}
	return b.String()
}

func parseID(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("%q is not an id", s)
	}
	return int32(n), nil
}

// parseIDs parses a comma-separated id list. A set may hold inclusive
// ranges (a-b) and must increase strictly; a list keeps its order and may
// not repeat an id.
func parseIDs(s string, set bool, max int) ([]int32, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	var ids []int32
	seen := map[int32]bool{}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi := part, part
		if i := strings.IndexByte(part, '-'); i >= 0 && set {
			lo, hi = part[:i], part[i+1:]
		}
		a, err := parseID(lo)
		if err != nil {
			return nil, err
		}
		b, err := parseID(hi)
		if err != nil {
			return nil, err
		}
		if b < a {
			return nil, fmt.Errorf("range %s runs backwards", part)
		}
		if int64(len(ids))+int64(b-a)+1 > int64(max) {
			return nil, fmt.Errorf("more than %d ids", max)
		}
		for id := a; ; id++ {
			if set && len(ids) > 0 && id <= ids[len(ids)-1] {
				return nil, errors.New("ids must increase")
			}
			if !set && seen[id] {
				return nil, fmt.Errorf("id %d repeats", id)
			}
			seen[id] = true
			ids = append(ids, id)
			if id == b {
				break
			}
		}
	}
	return ids, nil
}

func convertIDs[T, U ~int32](ids []U) []T {
	out := make([]T, len(ids))
	for i, id := range ids {
		out[i] = T(id)
	}
	return out
}

// formatSet writes increasing ids with runs of three or more as ranges.
func formatSet[T ~int32](ids []T) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var b []byte
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(ids[i]), 10)
		switch {
		case j >= i+2:
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(ids[j]), 10)
		case j == i+1:
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(ids[j]), 10)
		}
		i = j + 1
	}
	return string(b)
}

func formatList[T ~int32](ids []T) string {
	var b []byte
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return string(b)
}
