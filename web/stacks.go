package web

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"viewer/render/stacks"
	"viewer/trace"
	"viewer/trace/export"
)

// Stack aggregation limits.
const (
	DefaultStacksWidth = 2000
	MaxStacksWidth     = 100000
	// StacksTimeout bounds one aggregation; past it the reply holds the
	// samples aggregated so far and says "partial".
	StacksTimeout = 10 * time.Second
)

// stacksQuery parses the parameters the stacks endpoints share.
func stacksQuery(q url.Values, meta *trace.Meta) (sq stacks.Query, width int, err error) {
	sq.From, sq.To = math.MinInt64, math.MaxInt64
	for _, p := range []struct {
		key string
		t   *trace.Time
	}{{"from", &sq.From}, {"to", &sq.To}} {
		if s := q.Get(p.key); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return sq, 0, fmt.Errorf("%s: not a time in nanoseconds", p.key)
			}
			*p.t = trace.Time(n)
		}
	}
	if s := q.Get("tracks"); s != "" {
		sq.Tracks = []trace.TrackID{}
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.ParseInt(f, 10, 32)
			if err != nil || n < -1 || n >= int64(len(meta.Tracks)) {
				return sq, 0, fmt.Errorf("tracks: %q is not a track id", f)
			}
			sq.Tracks = append(sq.Tracks, trace.TrackID(n))
		}
	}
	sq.Event = q.Get("event")
	if sq.Weight, err = stacks.ParseWeight(q.Get("weight")); err != nil {
		return sq, 0, err
	}
	if sq.View, err = stacks.ParseView(q.Get("view")); err != nil {
		return sq, 0, err
	}
	if sq.Transforms, err = stacks.ParseTransforms(q.Get("tf")); err != nil {
		return sq, 0, err
	}
	switch q.Get("thread") {
	case "", "0":
	case "1":
		sq.PerThread = true
	default:
		return sq, 0, fmt.Errorf("thread: 0 or 1")
	}
	width = DefaultStacksWidth
	if s := q.Get("width"); s != "" {
		if width, err = strconv.Atoi(s); err != nil || width < 1 || width > MaxStacksWidth {
			return sq, 0, fmt.Errorf("width: not a number from 1 to %d", MaxStacksWidth)
		}
	}
	return sq, width, nil
}

// stacksResult runs the aggregation a request describes and makes its
// reply; it writes the error and returns nil when it fails.
func (s *Server) stacksResult(w http.ResponseWriter, r *http.Request, refs bool) (*stacks.Result, func()) {
	a, q, release := s.aggregate(w, r, refs)
	if a == nil {
		return nil, nil
	}
	res := a.Result(q.width, 2*q.width, q.Weight.Unit())
	res.Partial = q.partial
	return res, release
}

// aggregated is what a stacks request asked for and how it went.
type aggregated struct {
	stacks.Query
	width   int
	partial bool // the aggregation was cut off by its deadline
	name    string
}

// aggregate runs the aggregation a request describes; it writes the error
// and returns nil when it fails. release lets go of the trace's index.
func (s *Server) aggregate(w http.ResponseWriter, r *http.Request, refs bool) (*stacks.Aggregator, aggregated, func()) {
	e, idx, release, ok := s.entryIndex(w, r)
	if !ok {
		return nil, aggregated{}, nil
	}
	sq, width, err := stacksQuery(r.URL.Query(), idx.x.Meta())
	if err != nil {
		release()
		writeErr(w, http.StatusBadRequest, err)
		return nil, aggregated{}, nil
	}
	sq.Refs = refs
	// An aggregation can scan a whole trace, like a search: it takes one
	// of the search slots, leaving the other processors to viewports.
	ctx, done, ok := s.querySlot(w, r, StacksTimeout)
	if !ok {
		release()
		return nil, aggregated{}, nil
	}
	defer done()
	a, partial, err := stacks.Aggregate(ctx, idx.x, sq)
	if err != nil {
		release()
		writeErr(w, http.StatusBadRequest, err)
		return nil, aggregated{}, nil
	}
	return a, aggregated{Query: sq, width: width, partial: partial, name: e.Name}, release
}

// handleStackSpeedscope serves the stacks a request selects as a file of
// speedscope's format (PROTOCOL.md §3), to open in speedscope or the
// Firefox Profiler.
func (s *Server) handleStackSpeedscope(w http.ResponseWriter, r *http.Request) {
	a, q, release := s.aggregate(w, r, false)
	if a == nil {
		return
	}
	defer release()
	if q.partial {
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("the aggregation was cut off after %v: export a shorter range", StacksTimeout))
		return
	}
	var out []export.WeightedStack
	for _, c := range a.Collapsed() {
		out = append(out, export.WeightedStack{Frames: c.Frames, Weight: c.Weight})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="stacks.speedscope.json"`)
	export.WriteSpeedscope(w, q.name, export.SpeedscopeUnit(q.Weight.Unit()), out)
}

func (s *Server) handleStacks(w http.ResponseWriter, r *http.Request) {
	res, release := s.stacksResult(w, r, false)
	if res == nil {
		return
	}
	defer release()
	writeJSON(w, http.StatusOK, res.Reply)
}

func (s *Server) handleStackSamples(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	node, err := strconv.Atoi(q.Get("node"))
	if err != nil || node < 0 {
		writeError(w, http.StatusBadRequest, "node: not a node index")
		return
	}
	limit, err := countParam("limit", q.Get("limit"), DefaultSearchLimit, MaxSearchLimit)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	res, release := s.stacksResult(w, r, true)
	if res == nil {
		return
	}
	defer release()
	if node >= len(res.Nodes) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("node: the reply has %d nodes", len(res.Nodes)))
		return
	}
	found, more := res.Hits(node, limit)
	hits := make([]SearchHit, len(found))
	for i, h := range found {
		hits[i] = SearchHit{Ev: EventRef(h.Ev), Time: h.Time, Track: h.Ev.Track}
	}
	out := map[string]any{"hits": hits, "more": more}
	if res.Partial {
		out["partial"] = true
	}
	writeJSON(w, http.StatusOK, out)
}

// StackEventType is an event type whose events carry stacks.
type StackEventType struct {
	Event    string       `json:"event"` // the name to pass as event=
	Provider string       `json:"provider"`
	Type     trace.TypeID `json:"type"`
	Count    int64        `json:"count"`
}

func (s *Server) handleStackEvents(w http.ResponseWriter, r *http.Request) {
	_, idx, release, ok := s.entryIndex(w, r)
	if !ok {
		return
	}
	defer release()
	meta := idx.x.Meta()
	out := []StackEventType{}
	for _, st := range idx.x.StackedTypes() {
		et := StackEventType{Type: st.Type, Count: st.Events}
		if st.Type >= 0 && int(st.Type) < len(meta.Types) {
			et.Event, et.Provider = meta.Types[st.Type].Name, meta.Types[st.Type].Provider
		}
		out = append(out, et)
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": out, "default": stacks.DefaultEvent})
}
