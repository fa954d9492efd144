package web

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"viewer/render/query"
	"viewer/trace"
)

// ViewVersion is the version of the URL-state grammar this server writes.
// Older versions are upgraded by [ParseView]; newer ones are refused.
const ViewVersion = 1

// Limits on what one URL may ask for, so that a hostile link cannot make
// the server (or the page) allocate without bound.
const (
	MaxViewIDs   = 1 << 16      // track or type ids in one list or set, expanded
	MaxViewQuery = query.MaxLen // bytes of the search query or track filter
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
	Mode      Mode            `json:"mode"`
	Query     string          `json:"q"`      // search query
	Filter    string          `json:"filter"` // track-name filter
}

// DefaultView returns the view of a link without parameters.
func DefaultView() View {
	return View{
		Version:   ViewVersion,
		Hide:      []trace.TrackID{},
		Pin:       []trace.TrackID{},
		Order:     []trace.TrackID{},
		HideTypes: []trace.TypeID{},
		Mode:      ModeEvent,
	}
}

// ViewError reports a URL parameter that does not parse.
type ViewError struct {
	Key string
	Msg string
}

func (e *ViewError) Error() string { return "view parameter " + strconv.Quote(e.Key) + ": " + e.Msg }

// ParseView decodes the view state of a shareable URL's query. It is the
// one place that reads view parameters; [View.Encode] is its inverse.
// Unknown keys are ignored so that newer links degrade gracefully.
func ParseView(q url.Values) (View, error) {
	v := DefaultView()
	one := func(key string) (string, bool, error) {
		vals, ok := q[key]
		if !ok {
			return "", false, nil
		}
		if len(vals) != 1 {
			return "", false, &ViewError{key, "given more than once"}
		}
		return vals[0], true, nil
	}
	if s, ok, err := one("v"); err != nil {
		return View{}, err
	} else if ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return View{}, &ViewError{"v", "not a version number"}
		}
		if n > ViewVersion {
			return View{}, &ViewError{"v", fmt.Sprintf("version %d is newer than this viewer (%d)", n, ViewVersion)}
		}
	}
	var haveS, haveE bool
	for _, k := range []struct {
		key  string
		dst  *trace.Time
		have *bool
	}{{"s", &v.Start, &haveS}, {"e", &v.End, &haveE}} {
		s, ok, err := one(k.key)
		if err != nil {
			return View{}, err
		}
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return View{}, &ViewError{k.key, "not a time in nanoseconds"}
		}
		*k.dst, *k.have = trace.Time(n), true
	}
	if haveS != haveE {
		return View{}, &ViewError{"s", "a range needs both s and e"}
	}
	if haveS {
		if v.End <= v.Start {
			return View{}, &ViewError{"e", "the range ends before it starts"}
		}
		v.HasRange = true
	}
	if s, ok, err := one("sel"); err != nil {
		return View{}, err
	} else if ok {
		ref, err := ParseEventRef(s)
		if err != nil {
			return View{}, &ViewError{"sel", err.Error()}
		}
		v.Sel = &ref
	}
	if s, ok, err := one("tr"); err != nil {
		return View{}, err
	} else if ok {
		n, err := parseID(s)
		if err != nil {
			return View{}, &ViewError{"tr", err.Error()}
		}
		tr := trace.TrackID(n)
		v.Track = &tr
	}
	for _, k := range []struct {
		key string
		dst *[]trace.TrackID
		set bool
	}{{"hide", &v.Hide, true}, {"pin", &v.Pin, false}, {"order", &v.Order, false}} {
		s, ok, err := one(k.key)
		if err != nil {
			return View{}, err
		}
		if !ok {
			continue
		}
		ids, err := parseIDs(s, k.set)
		if err != nil {
			return View{}, &ViewError{k.key, err.Error()}
		}
		*k.dst = convertIDs[trace.TrackID](ids)
	}
	if s, ok, err := one("xt"); err != nil {
		return View{}, err
	} else if ok {
		ids, err := parseIDs(s, true)
		if err != nil {
			return View{}, &ViewError{"xt", err.Error()}
		}
		v.HideTypes = convertIDs[trace.TypeID](ids)
	}
	if s, ok, err := one("mode"); err != nil {
		return View{}, err
	} else if ok {
		switch Mode(s) {
		case ModeEvent, ModeSummary:
			v.Mode = Mode(s)
		default:
			return View{}, &ViewError{"mode", "not event or summary"}
		}
	}
	for _, k := range []struct {
		key string
		dst *string
	}{{"q", &v.Query}, {"f", &v.Filter}} {
		s, ok, err := one(k.key)
		if err != nil {
			return View{}, err
		}
		if !ok {
			continue
		}
		if len(s) > MaxViewQuery {
			return View{}, &ViewError{k.key, fmt.Sprintf("longer than %d bytes", MaxViewQuery)}
		}
		*k.dst = strings.ToValidUTF8(s, "\uFFFD")
	}
	return v, nil
}

// Encode returns the query string of v (without "?"), leaving out
// defaults, in a fixed key order so that equal views give equal URLs.
func (v View) Encode() string {
	var b strings.Builder
	add := func(key, val string) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(key)
		b.WriteByte('=')
		b.WriteString(val)
	}
	add("v", strconv.Itoa(ViewVersion))
	if v.HasRange {
		add("s", strconv.FormatInt(int64(v.Start), 10))
		add("e", strconv.FormatInt(int64(v.End), 10))
	}
	if v.Sel != nil {
		add("sel", v.Sel.String())
	}
	if v.Track != nil {
		add("tr", strconv.Itoa(int(*v.Track)))
	}
	if len(v.Hide) > 0 {
		add("hide", formatSet(v.Hide))
	}
	if len(v.Pin) > 0 {
		add("pin", formatList(v.Pin))
	}
	if len(v.Order) > 0 {
		add("order", formatList(v.Order))
	}
	if len(v.HideTypes) > 0 {
		add("xt", formatSet(v.HideTypes))
	}
	if v.Mode != "" && v.Mode != ModeEvent {
		add("mode", string(v.Mode))
	}
	if v.Query != "" {
		add("q", url.QueryEscape(v.Query))
	}
	if v.Filter != "" {
		add("f", url.QueryEscape(v.Filter))
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
func parseIDs(s string, set bool) ([]int32, error) {
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
		if int64(len(ids))+int64(b-a)+1 > MaxViewIDs {
			return nil, fmt.Errorf("more than %d ids", MaxViewIDs)
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

func convertIDs[T ~int32](ids []int32) []T {
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
