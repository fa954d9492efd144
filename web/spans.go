package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/span"
)

// spansReply is GET /api/traces/{id}/spans (PROTOCOL.md §3): the derived
// tracks in a time range at a resolution.
type spansReply struct {
	Start   int64            `json:"start"`   // bucket 0's start, ns
	Res     int64            `json:"res"`     // bucket width, ns (a power of two)
	Buckets int              `json:"buckets"` // buckets in the range
	Tracks  []spanTrackReply `json:"tracks"`
	Total   int              `json:"total_tracks"` // derived tracks of the trace
}

type spanTrackReply struct {
	ID       int32             `json:"id"`
	Kind     string            `json:"kind"` // "cpu", "state", "slices", "counter"
	Name     string            `json:"name"`
	Of       int32             `json:"of"` // the trace track it belongs under, -1 for none
	CPU      int32             `json:"cpu"`
	Items    []spanItemReply   `json:"items"`
	Counters []counterItemJSON `json:"counters,omitempty"`
}

type spanItemReply struct {
	Slice   int32   `json:"slice"` // index in the track for /spans/{track}/{slice}; a summary's first slice
	Depth   uint16  `json:"depth"`
	Start   int64   `json:"start"`
	End     int64   `json:"end"`
	Name    string  `json:"name"` // a summary's: its first slice's
	Count   int32   `json:"count"`
	Summary bool    `json:"summary,omitempty"`
	Busy    float32 `json:"busy,omitempty"`
	Open    string  `json:"open,omitempty"` // "start", "end" or "both"
	Thread  int32   `json:"thread"`         // trace track, -1 for none
}

type counterItemJSON struct {
	Bucket int32   `json:"bucket"`
	Count  int32   `json:"count"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Last   float64 `json:"last"`
}

// spanReply is GET /api/traces/{id}/spans/{track}/{slice}: one slice
// with its arguments (both ends' fields).
type spanReply struct {
	Slice      int32          `json:"slice"`
	Track      int32          `json:"track"`
	Name       string         `json:"name"`
	Start      int64          `json:"start"`
	End        int64          `json:"end"`
	DurationNS int64          `json:"duration_ns"`
	Depth      uint16         `json:"depth"`
	Open       string         `json:"open,omitempty"`
	Thread     int32          `json:"thread"`
	Args       []spanArgReply `json:"args"`
}

type spanArgReply struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// spansOf returns a trace's derived-track index, or writes why there is
// none.
func (s *Server) spansOf(w http.ResponseWriter, r *http.Request) (*render.Spans, func(), bool) {
	_, idx, release, ok := s.entryIndex(w, r)
	if !ok {
		return nil, nil, false
	}
	return idx.x.Spans(), release, true
}

// handleSpans answers a viewport query over derived tracks.
func (s *Server) handleSpans(w http.ResponseWriter, r *http.Request) {
	sp, release, ok := s.spansOf(w, r)
	if !ok {
		return
	}
	defer release()
	var set *span.Set
	if sp != nil {
		set = sp.Set()
	}
	vp, err := spanViewport(r.URL.Query(), set)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	reply := spansReply{Tracks: []spanTrackReply{}}
	if sp == nil {
		res, start, buckets, _ := render.Resolution(render.Viewport{Start: vp.Start, End: vp.End, Width: vp.Width})
		reply.Start, reply.Res, reply.Buckets = int64(start), res, buckets
		writeJSON(w, http.StatusOK, reply)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.res.timeout)
	defer cancel()
	got, err := sp.Query(ctx, vp)
	if err != nil {
		status := http.StatusBadRequest
		if !errors.Is(err, render.ErrViewport) {
			status = http.StatusServiceUnavailable
		}
		writeError(w, status, err.Error())
		return
	}
	reply.Start, reply.Res, reply.Buckets, reply.Total = int64(got.Start), got.Res, got.Buckets, len(set.Tracks)
	for _, t := range got.Tracks {
		tr := set.Tracks[t.Track]
		tj := spanTrackReply{ID: int32(t.Track), Kind: tr.Kind.String(), Name: tr.Name, Of: int32(tr.Of), CPU: tr.CPU, Items: make([]spanItemReply, 0, len(t.Items))}
		col := set.Column(t.Track)
		for _, it := range t.Items {
			sl := col.At(int(it.Slice))
			ij := spanItemReply{Slice: it.Slice, Depth: it.Depth, Start: int64(it.Start), End: int64(it.End), Name: set.Name(sl.Name), Count: it.Count, Summary: it.Summary, Busy: it.Busy, Thread: int32(sl.Thread)}
			if !it.Summary {
				ij.Open = sl.Flags.Ends()
			}
			tj.Items = append(tj.Items, ij)
		}
		for _, c := range t.Counters {
			tj.Counters = append(tj.Counters, counterItemJSON{Bucket: c.Bucket, Count: c.Count, Min: finite(c.Min), Max: finite(c.Max), Last: finite(c.Last)})
		}
		reply.Tracks = append(reply.Tracks, tj)
	}
	writeJSON(w, http.StatusOK, reply)
}

// finite keeps a counter value JSON can carry (NaN and infinities are
// not numbers in JSON): they become 0.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// handleSpan returns one derived slice with its arguments.
func (s *Server) handleSpan(w http.ResponseWriter, r *http.Request) {
	sp, release, ok := s.spansOf(w, r)
	if !ok {
		return
	}
	defer release()
	if sp == nil {
		writeError(w, http.StatusNotFound, "the trace has no derived slices")
		return
	}
	set := sp.Set()
	tr, err1 := strconv.ParseInt(chiParam(r, "track"), 10, 32)
	n, err2 := strconv.ParseInt(chiParam(r, "slice"), 10, 32)
	col := set.Column(span.TrackID(tr))
	if err1 != nil || err2 != nil || col == nil || n < 0 || n >= int64(col.Len()) {
		writeError(w, http.StatusNotFound, "no such derived slice")
		return
	}
	sl := col.At(int(n))
	rep := spanReply{Slice: int32(n), Track: int32(sl.Track), Name: set.Name(sl.Name), Start: int64(sl.Start), End: int64(sl.End),
		DurationNS: int64(sl.End - sl.Start), Depth: sl.Depth, Open: sl.Flags.Ends(), Thread: int32(sl.Thread), Args: []spanArgReply{}}
	for _, a := range set.ArgList(sl.Args) {
		rep.Args = append(rep.Args, spanArgReply{Name: a.Name, Value: a.Value.String()})
	}
	writeJSON(w, http.StatusOK, rep)
}

// spanViewport parses from, to (ns), width (px) and tracks (derived
// track ids, comma-separated; default all, up to render.MaxTracks).
func spanViewport(q url.Values, set *span.Set) (render.SpanViewport, error) {
	var vp render.SpanViewport
	from, err1 := strconv.ParseInt(q.Get("from"), 10, 64)
	to, err2 := strconv.ParseInt(q.Get("to"), 10, 64)
	width, err3 := strconv.Atoi(q.Get("width"))
	if err1 != nil || err2 != nil || err3 != nil {
		return vp, errors.New("from, to (ns) and width (px) are required integers")
	}
	if to <= from || width < 1 || width > render.MaxWidth {
		return vp, fmt.Errorf("need from < to and width from 1 to %d", render.MaxWidth)
	}
	vp.Start, vp.End, vp.Width = trace.Time(from), trace.Time(to), width
	n := 0
	if set != nil {
		n = len(set.Tracks)
	}
	if t := q.Get("tracks"); t != "" {
		for f := range strings.SplitSeq(t, ",") {
			id, err := strconv.ParseInt(f, 10, 32)
			if err != nil || id < 0 || id >= int64(n) {
				return vp, fmt.Errorf("tracks: %q is not a derived track id", f)
			}
			if len(vp.Tracks) >= render.MaxTracks {
				return vp, fmt.Errorf("tracks: more than %d", render.MaxTracks)
			}
			vp.Tracks = append(vp.Tracks, span.TrackID(id))
		}
		return vp, nil
	}
	for id := range min(n, render.MaxTracks) {
		vp.Tracks = append(vp.Tracks, span.TrackID(id))
	}
	return vp, nil
}
