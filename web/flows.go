package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"viewer/render"
	"viewer/trace"
)

// Flows (PROTOCOL.md §3, GET /flows): events joined by their activity
// ids (the NetTrace and EventHeader labels ActivityId and
// RelatedActivityId), for the page's flow arrows.

// Limits of the flows endpoint.
const (
	// MaxFlowEvents is the most events one reply lists.
	MaxFlowEvents = 10000
	// MaxFlowChains is the most chains a range reply lists.
	MaxFlowChains = 1000
)

// flowHit is one event of a flow, as a search hit.
type flowHit struct {
	Ev    EventRef      `json:"ev"`
	Time  int64         `json:"time,string"`
	Track trace.TrackID `json:"track"`
}

// flowsReply is GET /flows?event=: the related events in time order.
type flowsReply struct {
	IDs    []string  `json:"ids"` // the activity ids the event carries
	Events []flowHit `json:"events"`
	More   bool      `json:"more"`              // the limit cut the list
	CutOff bool      `json:"cut_off,omitempty"` // the time budget ran out first
}

// flowChain is one activity's events in a range.
type flowChain struct {
	ID     string    `json:"id"`
	Events []flowHit `json:"events"`
}

// flowsRangeReply is GET /flows?from=&to=.
type flowsRangeReply struct {
	Flows  []flowChain `json:"flows"`
	More   bool        `json:"more"`
	CutOff bool        `json:"cut_off,omitempty"`
}

// activityIDs returns an event's activity id and related activity id
// ("" when absent or all zero).
func activityIDs(labels []trace.Label) (id, related string) {
	for _, l := range labels {
		switch l.Key {
		case "ActivityId":
			id = nonZeroID(l.Value.String())
		case "RelatedActivityId":
			related = nonZeroID(l.Value.String())
		}
	}
	return id, related
}

func nonZeroID(s string) string {
	if strings.Trim(s, "0-{}x") == "" {
		return ""
	}
	return s
}

// labelCache remembers the activity ids of label lists already decoded:
// readers deduplicate label lists, so most events cost a lookup.
// It reads event headers with one render.EventReader per track, since a
// walk in time order interleaves the tracks.
type labelCache struct {
	x       *render.Index
	seen    map[trace.LabelsID][2]string
	readers map[trace.TrackID]*render.EventReader
}

func newLabelCache(x *render.Index) *labelCache {
	return &labelCache{x: x, seen: map[trace.LabelsID][2]string{}, readers: map[trace.TrackID]*render.EventReader{}}
}

func (c *labelCache) ids(ev render.EventID) (id, related string, err error) {
	rd := c.readers[ev.Track]
	if rd == nil {
		rd = c.x.NewEventReader()
		c.readers[ev.Track] = rd
	}
	e, err := rd.Event(ev)
	if err != nil {
		return "", "", err
	}
	if e.Labels == trace.NoLabels {
		return "", "", nil
	}
	if v, ok := c.seen[e.Labels]; ok {
		return v[0], v[1], nil
	}
	id, related = activityIDs(c.x.Labels(e.Labels))
	c.seen[e.Labels] = [2]string{id, related}
	return id, related, nil
}

// handleFlows answers GET /flows?event=TRACK:INDEX[&limit=N] (the events
// sharing the event's activity ids) or GET /flows?from=F&to=T (the
// events of [F, T) grouped by activity).
func (s *Server) handleFlows(w http.ResponseWriter, r *http.Request) {
	e, ok := s.entry(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit, err := countParam("limit", q.Get("limit"), 1000, MaxFlowEvents)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	var ref EventRef
	var from, to int64
	byEvent := q.Has("event")
	if byEvent {
		var err error
		if ref, err = ParseEventRef(q.Get("event")); err != nil {
			writeError(w, http.StatusBadRequest, "event: "+err.Error())
			return
		}
	} else {
		var err1, err2 error
		from, err1 = strconv.ParseInt(q.Get("from"), 10, 64)
		to, err2 = strconv.ParseInt(q.Get("to"), 10, 64)
		if err1 != nil || err2 != nil || to <= from {
			writeError(w, http.StatusBadRequest, "give event=TRACK:INDEX, or from and to (ns) with from < to")
			return
		}
	}
	idx, release, ok := s.index(w, e)
	if !ok {
		return
	}
	defer release()
	ctx, cancel := context.WithTimeout(r.Context(), s.res.timeout)
	defer cancel()
	c := newLabelCache(idx.x)
	if byEvent {
		rep, err := eventFlows(ctx, c, render.EventID(ref), limit)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			writeErr(w, http.StatusNotFound, err)
			return
		}
		writeJSON(w, http.StatusOK, rep)
		return
	}
	writeJSON(w, http.StatusOK, rangeFlows(ctx, c, trace.Time(from), trace.Time(to), limit))
}

// eventFlows lists, in time order, the events whose activity id or
// related activity id is one of the event's.
func eventFlows(ctx context.Context, c *labelCache, ev render.EventID, limit int) (flowsReply, error) {
	rep := flowsReply{IDs: []string{}, Events: []flowHit{}}
	id, related, err := c.ids(ev)
	if err != nil {
		return rep, err
	}
	want := map[string]bool{}
	for _, k := range []string{id, related} {
		if k != "" && !want[k] {
			want[k] = true
			rep.IDs = append(rep.IDs, k)
		}
	}
	if len(want) == 0 {
		return rep, nil
	}
	for pos, err := range c.x.Hits(ctx, render.Filter{}, render.At(-render.MaxTime), false) {
		if err != nil {
			rep.CutOff = true
			return rep, err
		}
		a, b, err := c.ids(pos.ID)
		if err != nil {
			continue
		}
		if (a != "" && want[a]) || (b != "" && want[b]) {
			if len(rep.Events) == limit {
				rep.More = true
				break
			}
			rep.Events = append(rep.Events, flowHit{Ev: EventRef(pos.ID), Time: int64(pos.Time), Track: pos.ID.Track})
		}
	}
	return rep, nil
}

// rangeFlows groups the events of [from, to) that carry an activity id
// by it (an event with a related activity id also joins that one's
// chain, so parent and child are linked); chains of one event are left
// out.
func rangeFlows(ctx context.Context, c *labelCache, from, to trace.Time, limit int) flowsRangeReply {
	rep := flowsRangeReply{Flows: []flowChain{}}
	chains := map[string]int{}
	var all []flowChain
	seen := 0
	for pos, err := range c.x.Hits(ctx, render.Filter{}, render.At(from), false) {
		if err != nil {
			rep.CutOff = true
			break
		}
		if pos.Time >= to {
			break
		}
		a, b, err := c.ids(pos.ID)
		if err != nil || (a == "" && b == "") {
			continue
		}
		if seen == limit {
			rep.More = true
			break
		}
		seen++
		h := flowHit{Ev: EventRef(pos.ID), Time: int64(pos.Time), Track: pos.ID.Track}
		for _, k := range []string{a, b} {
			if k == "" {
				continue
			}
			i, ok := chains[k]
			if !ok {
				if len(all) == MaxFlowChains {
					rep.More = true
					continue
				}
				i = len(all)
				chains[k] = i
				all = append(all, flowChain{ID: k})
			}
			all[i].Events = append(all[i].Events, h)
		}
	}
	for _, ch := range all {
		if len(ch.Events) > 1 {
			rep.Flows = append(rep.Flows, ch)
		}
	}
	return rep
}
