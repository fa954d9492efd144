package web

// A combined view (PROTOCOL.md §together, issue 20): several traces of
// the library on one time axis, served to the page as if they were one
// trace.
//
// # Design
//
// The traces' own indexes answer everything; nothing is indexed again.
// A [combined] is made per request from the indexes (acquired as a
// session acquires one) and the alignment of their clocks (trace/align):
// trace k's event at its own Time t is at aligned time t + shift[k], where
// shift is align's placement with no user offsets plus the user's offset
// of the trace. The axis is aligned without the offsets so that dragging
// one trace does not move the others (and the URL's range) when it
// passes the earliest first event.
//
// Tracks and event types are renumbered densely: trace k's track i is
// global track trackBase[k]+i, its type j global type typeBase[k]+j
// (types folded beyond MaxListedTypes as a single trace's are). The page
// sees one track list and one type list; event ids (EventRef) carry the
// global track. Numbering depends only on the traces' metadata, so a
// reloaded URL means the same tracks; live traces, whose tracks grow, are
// refused until they stop.
//
// A viewport is each trace's viewport shifted back by its shift, merged
// into one reply: individual events keep their exact times; aggregate
// buckets of a trace whose shift is not a multiple of the resolution land
// on the nearest combined bucket (half a bucket, under a pixel, off).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/bits"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"viewer/render"
	"viewer/render/query"
	"viewer/render/wire"
	"viewer/trace"
	"viewer/trace/align"
	"viewer/ui/templates"
)

// Bounds of a combined view.
const (
	// MaxTogether is the most traces one combined view shows.
	MaxTogether = 8
	// MaxOffset bounds a user offset either way (about 13 days): far
	// beyond any recording's misalignment, and far from overflowing
	// trace.Time when added to a shift.
	MaxOffset = time.Duration(1 << 50)
)

// TraceOffset is a user offset of one trace of a combined view: its
// events move by NS nanoseconds on the aligned axis. Trace is the
// trace's position in [View].Traces.
type TraceOffset struct {
	Trace int        `json:"trace"`
	NS    trace.Time `json:"ns,string"`
}

// parseTraceIDs parses the `t` grammar: canonical trace ids separated by
// commas, none repeated, at most max.
func parseTraceIDs(s string, max int) ([]uuid.UUID, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	var ids []uuid.UUID
	for part := range strings.SplitSeq(s, ",") {
		id, ok := parseTraceID(part)
		if !ok {
			return nil, fmt.Errorf("%q is not a trace id", part)
		}
		if slices.Contains(ids, id) {
			return nil, fmt.Errorf("trace %s repeats", part)
		}
		if len(ids) == max {
			return nil, fmt.Errorf("more than %d traces", max)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func formatTraceIDs(ids []uuid.UUID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.String()
	}
	return strings.Join(parts, ",")
}

// parseOffsets parses the `off` grammar: K:NS pairs separated by commas,
// K a trace position below max, increasing, and NS a non-zero offset in
// nanoseconds (canonical decimal) within ±MaxOffset.
func parseOffsets(s string, max int) ([]TraceOffset, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	var out []TraceOffset
	for part := range strings.SplitSeq(s, ",") {
		k, ns, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("%q is not TRACE:NANOSECONDS", part)
		}
		i, err := parseID(k)
		if err != nil {
			return nil, err
		}
		if int(i) >= max {
			return nil, fmt.Errorf("trace %d: there are at most %d", i, max)
		}
		if len(out) > 0 && int(i) <= out[len(out)-1].Trace {
			return nil, errors.New("traces must increase")
		}
		n, err := strconv.ParseInt(ns, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != ns {
			return nil, fmt.Errorf("%q is not a number of nanoseconds", ns)
		}
		if n == 0 {
			return nil, errors.New("a zero offset is left out")
		}
		if n > int64(MaxOffset) || n < -int64(MaxOffset) {
			return nil, fmt.Errorf("offset %d ns is beyond ±%d", n, int64(MaxOffset))
		}
		out = append(out, TraceOffset{Trace: int(i), NS: trace.Time(n)})
	}
	return out, nil
}

func formatOffsets(offs []TraceOffset) string {
	var b []byte
	for _, o := range offs {
		if o.NS == 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(o.Trace), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(o.NS), 10)
	}
	return string(b)
}

// viewParam returns the grammar's row for key.
func viewParam(key string) *ViewParam {
	for i := range viewParams {
		if viewParams[i].Key == key {
			return &viewParams[i]
		}
	}
	panic("invariant violation: no view parameter " + key)
}

// parseTogether reads a combined view's traces (`t`, required) and
// offsets (`off`) from a query, by the URL grammar's rows.
func parseTogether(q url.Values) (ids []uuid.UUID, offs []TraceOffset, err error) {
	var v View
	for _, key := range []string{"t", "off"} {
		p := viewParam(key)
		p.setDefault(&v)
		vals, ok := q[key]
		if !ok {
			continue
		}
		if len(vals) != 1 {
			return nil, nil, &ViewError{key, "given more than once"}
		}
		if err := p.parse(&v, vals[0]); err != nil {
			return nil, nil, &ViewError{key, err.Error()}
		}
	}
	if len(v.Traces) == 0 {
		return nil, nil, &ViewError{"t", "a combined view needs its traces"}
	}
	for _, o := range v.Offsets {
		if o.Trace >= len(v.Traces) {
			return nil, nil, &ViewError{"off", fmt.Sprintf("trace %d: the view has %d", o.Trace, len(v.Traces))}
		}
	}
	return v.Traces, v.Offsets, nil
}

// offsetsOf returns one offset per trace.
func offsetsOf(n int, offs []TraceOffset) []trace.Time {
	out := make([]trace.Time, n)
	for _, o := range offs {
		if o.Trace < n {
			out[o.Trace] = o.NS
		}
	}
	return out
}

// addTime adds without overflowing.
func addTime(a, b trace.Time) trace.Time {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// combined is several indexes on one axis (see the design above). It is
// made per request and holds no resources of its own.
type combined struct {
	entries []Entry
	idx     []*index
	axis    align.Axis   // aligned without the user offsets
	shift   []trace.Time // trace k's Time t is at aligned t + shift[k]
	offset  []trace.Time // the user offsets shift holds
	// trackBase[k] is the global id of trace k's track 0; typeBase[k]
	// that of its type 0. Both have a last entry past the last trace.
	trackBase []trace.TrackID
	typeBase  []trace.TypeID
}

// newCombined places ready indexes on one axis with the user's offsets
// (one per index).
func newCombined(entries []Entry, idx []*index, offsets []trace.Time) *combined {
	c := &combined{entries: entries, idx: idx, offset: offsets,
		shift: make([]trace.Time, len(idx)), trackBase: make([]trace.TrackID, len(idx)+1), typeBase: make([]trace.TypeID, len(idx)+1)}
	ts := make([]align.Trace, len(idx))
	for k, x := range idx {
		first, _ := x.x.Span()
		ts[k] = align.Of(x.x.Meta(), first)
		m := x.x.Meta()
		c.trackBase[k+1] = c.trackBase[k] + trace.TrackID(len(m.Tracks))
		c.typeBase[k+1] = c.typeBase[k] + trace.TypeID(min(len(m.Types), MaxListedTypes))
	}
	c.axis = align.Align(ts)
	for k := range idx {
		c.shift[k] = addTime(c.axis.Places[k].Shift, offsets[k])
	}
	return c
}

// track returns the global id of trace k's track, and false for events
// on no track (not shown in a combined view).
func (c *combined) track(k int, id trace.TrackID) (trace.TrackID, bool) {
	if id < 0 || id >= c.trackBase[k+1]-c.trackBase[k] {
		return 0, false
	}
	return c.trackBase[k] + id, true
}

// local returns the trace and own id of a global track.
func (c *combined) local(g trace.TrackID) (k int, id trace.TrackID, ok bool) {
	if g < 0 || g >= c.trackBase[len(c.idx)] {
		return 0, 0, false
	}
	k = sort.Search(len(c.idx), func(i int) bool { return c.trackBase[i+1] > g })
	return k, g - c.trackBase[k], true
}

// typ returns the global id of trace k's event type: types beyond the
// listed ones fold into the trace's "other" entry as on /t/{id}; an id
// the trace does not describe is -1.
func (c *combined) typ(k int, t trace.TypeID) trace.TypeID {
	n := c.typeBase[k+1] - c.typeBase[k]
	all := len(c.idx[k].x.Meta().Types)
	switch {
	case t < 0 || int(t) >= all:
		return -1
	case t >= n:
		return c.typeBase[k] + n - 1
	}
	return c.typeBase[k] + t
}

// span returns the aligned first and last events.
func (c *combined) span() (first, last trace.Time) {
	first, last = math.MaxInt64, math.MinInt64
	for k, x := range c.idx {
		if x.x.Events() == 0 {
			continue
		}
		f, l := x.x.Span()
		first, last = min(first, addTime(f, c.shift[k])), max(last, addTime(l, c.shift[k]))
	}
	if first > last {
		return 0, 0
	}
	return first, last
}

// meta returns the combined trace metadata the name tables are made of:
// every trace's types (capped) and tracks, renumbered.
func (c *combined) meta() (*trace.Meta, []trace.TrackID) {
	m := &trace.Meta{}
	var listed []trace.TrackID
	for k, x := range c.idx {
		km := x.x.Meta()
		n := int(c.typeBase[k+1] - c.typeBase[k])
		m.Types = append(m.Types, km.Types[:n]...)
		if len(km.Types) > n {
			m.Types[len(m.Types)-1] = trace.EventType{Name: otherTypesName(len(km.Types) - (n - 1))}
		}
		for i, t := range km.Tracks {
			if t.Parent >= 0 {
				if p, ok := c.track(k, t.Parent); ok {
					t.Parent = p
				} else {
					t.Parent = trace.NoTrack
				}
			}
			m.Tracks = append(m.Tracks, t)
			if i < MaxListedTracks {
				listed = append(listed, c.trackBase[k]+trace.TrackID(i))
			}
		}
	}
	return m, listed
}

// query answers a viewport of global tracks on the aligned axis into out,
// using scratch for each trace's own query.
func (c *combined) query(ctx context.Context, vp render.Viewport, scratch, out *render.Slice) error {
	res, start, buckets, err := render.Resolution(vp)
	if err != nil {
		return err
	}
	out.Start, out.Res, out.Buckets = start, res, buckets
	out.Tracks = slices.Grow(out.Tracks[:0], len(vp.Tracks))[:len(vp.Tracks)]
	out.Markers = out.Markers[:0]
	for i, g := range vp.Tracks {
		out.Tracks[i].Track = g
		out.Tracks[i].Items = out.Tracks[i].Items[:0]
	}
	bucket := func(t trace.Time) int32 {
		return int32(max(math.MinInt32, min(math.MaxInt32, (int64(t)-int64(start))>>bits.TrailingZeros64(uint64(res)))))
	}
	for k, x := range c.idx {
		var own []trace.TrackID
		var at []int // position in vp.Tracks of each of own
		for i, g := range vp.Tracks {
			if gk, id, ok := c.local(g); ok && gk == k {
				own = append(own, id)
				at = append(at, i)
			}
		}
		// Markers belong to the whole trace: ask even without tracks.
		kvp := render.Viewport{Start: addTime(vp.Start, -c.shift[k]), End: addTime(vp.End, -c.shift[k]), Width: vp.Width, Tracks: own}
		if kvp.End <= kvp.Start {
			continue
		}
		if err := x.x.QueryInto(ctx, kvp, scratch); err != nil {
			return err
		}
		sh := c.shift[k]
		for j, ts := range scratch.Tracks {
			items := out.Tracks[at[j]].Items
			for _, it := range ts.Items {
				// An aggregate goes to the combined bucket of its first
				// event: where its own bucket starts is no event's time.
				t := it.Time
				if it.Count != 1 {
					t = scratch.BucketStart(int(it.Bucket))
					if p, ok := x.x.PositionOf(render.EventID{Track: ts.Track, Index: it.First}); ok {
						t = p.Time
					}
				}
				it.Time = addTime(t, sh)
				it.Bucket = bucket(it.Time)
				it.Type = c.typ(k, it.Type)
				if n := len(items); n > 0 && items[n-1].Bucket == it.Bucket {
					// Two own buckets in one combined bucket: one
					// aggregate, of the larger's type.
					last := &items[n-1]
					if it.Count > last.Count {
						last.Type = it.Type
					}
					last.Count += it.Count
					last.Time = out.BucketStart(int(it.Bucket))
					continue
				}
				if it.Count != 1 {
					it.Time = out.BucketStart(int(it.Bucket))
				}
				items = append(items, it)
			}
			out.Tracks[at[j]].Items = items
		}
		for _, mi := range scratch.Markers {
			mi.Marker.Time = addTime(mi.Marker.Time, sh)
			if g, ok := c.track(k, mi.Marker.Track); ok {
				mi.Marker.Track = g
			} else {
				mi.Marker.Track = trace.NoTrack
			}
			mi.Bucket = bucket(mi.Marker.Time)
			out.Markers = append(out.Markers, mi)
		}
	}
	slices.SortStableFunc(out.Markers, func(a, b render.MarkerItem) int {
		if a.Marker.Kind != b.Marker.Kind {
			return int(a.Marker.Kind) - int(b.Marker.Kind)
		}
		return int(a.Bucket) - int(b.Bucket)
	})
	return nil
}

// ---- acquiring the traces ----------------------------------------------

// togetherEntries returns the library entries of a combined view's
// traces, or writes 400 or 404.
func (s *Server) togetherEntries(w http.ResponseWriter, r *http.Request) ([]Entry, []TraceOffset, bool) {
	ids, offs, err := parseTogether(r.URL.Query())
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return nil, nil, false
	}
	entries := make([]Entry, len(ids))
	for i, id := range ids {
		e, ok := s.lib.Get(id)
		if !ok {
			writeError(w, http.StatusNotFound, "no such trace: "+id.String())
			return nil, nil, false
		}
		entries[i] = e
	}
	return entries, offs, true
}

// togetherIndex acquires the indexes of a request's traces and combines
// them; while one builds it writes 409 with the progress, as [Server.index].
func (s *Server) togetherIndex(w http.ResponseWriter, r *http.Request) (*combined, func(), bool) {
	entries, offs, ok := s.togetherEntries(w, r)
	if !ok {
		return nil, nil, false
	}
	var releases []func()
	release := func() {
		for _, f := range releases {
			f()
		}
	}
	idx := make([]*index, len(entries))
	for k, e := range entries {
		x, rel, ok := s.index(w, e)
		if !ok {
			release()
			return nil, nil, false
		}
		releases = append(releases, rel)
		if p, _ := s.ix.get(e).snapshot(); p.State == StateLive {
			release()
			writeError(w, http.StatusConflict, liveRefusal(e))
			return nil, nil, false
		}
		idx[k] = x
	}
	return newCombined(entries, idx, offsetsOf(len(entries), offs)), release, true
}

func liveRefusal(e Entry) string {
	return e.Name + " is still being recorded: open it together with others once it has stopped"
}

// handleTogetherMissing answers the endpoints a combined view does not
// have yet.
func (s *Server) handleTogetherMissing(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotImplemented, "not available in a combined view yet: open one of its traces alone for this")
}

// ---- the page -----------------------------------------------------------

func (s *Server) handleTogetherPage(w http.ResponseWriter, r *http.Request) {
	// The library's form (no script) sends one t per ticked trace.
	if ts := r.URL.Query()["t"]; len(ts) > 1 && len(ts) <= MaxTogether && !slices.ContainsFunc(ts, func(id string) bool { _, ok := parseTraceID(id); return !ok }) {
		http.Redirect(w, r, "/v?t="+strings.Join(ts, ","), http.StatusSeeOther)
		return
	}
	view, err := ParseView(r.URL.Query())
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "This link's view cannot be read: "+err.Error())
		return
	}
	if _, _, err := parseTogether(r.URL.Query()); err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "This link's view cannot be read: "+err.Error())
		return
	}
	var traces []map[string]any
	var names []string
	for _, id := range view.Traces {
		e, ok := s.lib.Get(id)
		if !ok {
			s.errorPage(w, r, http.StatusNotFound, "The library holds no trace "+id.String()+"; it may have been deleted.")
			return
		}
		s.ix.get(e)
		names = append(names, e.Name)
		traces = append(traces, map[string]any{"id": e.ID, "name": e.Name, "format": e.Format})
	}
	t := "t=" + formatTraceIDs(view.Traces)
	title := strings.Join(names, " + ")
	s.render(w, r.Context(), http.StatusOK, templates.Viewer(templates.ViewerPage{Assets: s.assets(), Title: title, Data: map[string]any{
		"page":     "viewer",
		"trace":    map[string]any{"name": title, "format": "together"},
		"together": map[string]any{"traces": traces, "query": t},
		"view":     view,
		"ws":       "/api/together/ws?" + t,
	}}))
}

// ---- meta, events, search -------------------------------------------------

// togetherTraceJSON is one trace of a combined view's meta.
type togetherTraceJSON struct {
	ID     uuid.UUID  `json:"id"`
	Name   string     `json:"name"`
	Format string     `json:"format"`
	First  trace.Time `json:"first,string"` // its own times
	Last   trace.Time `json:"last,string"`
	// Shift places it without the user's offset; Offset is that offset:
	// its Time t is at aligned t + Shift + Offset.
	Shift     trace.Time    `json:"shift,string"`
	Offset    trace.Time    `json:"offset,string"`
	How       string        `json:"how"` // "wall", "domain" or "first event"
	Wall      string        `json:"wall"`
	TrackBase trace.TrackID `json:"track_base"`
	Tracks    int           `json:"tracks"`
	TypeBase  trace.TypeID  `json:"type_base"`
	Types     int           `json:"types"`
}

type togetherTrackJSON struct {
	trackJSON
	Trace int `json:"trace"`
}

type togetherMetaJSON struct {
	Format      string              `json:"format"`
	First       trace.Time          `json:"first,string"`
	Last        trace.Time          `json:"last,string"`
	Wall        string              `json:"wall"`
	Tracks      []togetherTrackJSON `json:"tracks"`
	OtherTracks *otherJSON          `json:"other_tracks,omitempty"`
	Types       []typeJSON          `json:"types"`
	Lost        []gapJSON           `json:"lost"`
	TruncatedAt *string             `json:"truncated_at"`
	Error       string              `json:"error,omitempty"`
	Notices     []string            `json:"notices"`
	Traces      []togetherTraceJSON `json:"traces"`
}

func (c *combined) metaJSON() togetherMetaJSON {
	first, last := c.span()
	out := togetherMetaJSON{First: first, Last: last, Tracks: []togetherTrackJSON{}, Types: []typeJSON{}, Lost: []gapJSON{}, Notices: []string{}}
	if w, ok := c.axis.Wall(0); ok {
		out.Wall = w.UTC().Format(time.RFC3339Nano)
	}
	var formats, errs []string
	for k, x := range c.idx {
		m := x.x.Meta()
		e := c.entries[k]
		if !slices.Contains(formats, m.Format) {
			formats = append(formats, m.Format)
		}
		f, l := x.x.Span()
		p := c.axis.Places[k]
		tj := togetherTraceJSON{ID: e.ID, Name: e.Name, Format: m.Format, First: f, Last: l, Shift: p.Shift, Offset: c.offset[k], How: p.How.String(),
			TrackBase: c.trackBase[k], Tracks: int(c.trackBase[k+1] - c.trackBase[k]), TypeBase: c.typeBase[k], Types: int(c.typeBase[k+1] - c.typeBase[k])}
		if w, ok := m.Clock.WallTime(0); ok {
			tj.Wall = w.UTC().Format(time.RFC3339Nano)
		}
		out.Traces = append(out.Traces, tj)
		if p.How == align.ByFirstEvent {
			out.Notices = append(out.Notices, e.Name+" records no wall-clock time: its first event is placed at the start; Alt+drag its rows or type an offset to align it")
		}
		for _, n := range m.Notices {
			out.Notices = append(out.Notices, e.Name+": "+n)
		}
		if x.stats.Error != "" {
			errs = append(errs, e.Name+": "+x.stats.Error)
		} else if ms := x.x.Markers(render.MarkerTruncated); len(ms) > 0 {
			errs = append(errs, e.Name+": the file is cut short")
		}
		for i, t := range m.Tracks {
			if i >= MaxListedTracks {
				if out.OtherTracks == nil {
					out.OtherTracks = &otherJSON{}
				}
				out.OtherTracks.Tracks++
				out.OtherTracks.Events += int64(x.x.TrackEvents(trace.TrackID(i)))
				continue
			}
			g, _ := c.track(k, trace.TrackID(i))
			parent := trace.NoTrack
			if p, ok := c.track(k, t.Parent); ok {
				parent = p
			}
			out.Tracks = append(out.Tracks, togetherTrackJSON{trackJSON{ID: g, Kind: t.Kind.String(), Name: t.Name, PID: t.PID, TID: t.TID, CPU: t.CPU,
				Parent: parent, Events: int64(x.x.TrackEvents(trace.TrackID(i))), Names: t.Names}, k})
		}
		n := int(c.typeBase[k+1] - c.typeBase[k])
		count := func(i int) int64 {
			if i < len(x.types) {
				return x.types[i]
			}
			return 0
		}
		for i, t := range m.Types[:n] {
			out.Types = append(out.Types, typeJSON{ID: c.typeBase[k] + trace.TypeID(i), Provider: t.Provider, Name: t.Name, Code: t.ID, Version: t.Version, Count: count(i)})
		}
		if len(m.Types) > n {
			o := typeJSON{ID: c.typeBase[k] + trace.TypeID(n-1), Name: otherTypesName(len(m.Types) - (n - 1)), Code: -1, Other: len(m.Types) - (n - 1)}
			for i := n - 1; i < len(m.Types); i++ {
				o.Count += count(i)
			}
			out.Types[len(out.Types)-1] = o
		}
		for _, g := range m.Lost {
			tr, ok := c.track(k, g.Track)
			if !ok {
				tr = trace.NoTrack
			}
			out.Lost = append(out.Lost, gapJSON{addTime(g.Time, c.shift[k]), tr, g.Count})
		}
	}
	out.Format = strings.Join(formats, " + ")
	out.Error = strings.Join(errs, "; ")
	return out
}

func (s *Server) handleTogetherMeta(w http.ResponseWriter, r *http.Request) {
	c, release, ok := s.togetherIndex(w, r)
	if !ok {
		return
	}
	defer release()
	writeJSON(w, http.StatusOK, c.metaJSON())
}

func (s *Server) handleTogetherEvent(w http.ResponseWriter, r *http.Request) {
	ref, err := ParseEventRef(chiParam(r, "ev"))
	if err != nil {
		writeErr(w, http.StatusNotFound, err)
		return
	}
	c, release, ok := s.togetherIndex(w, r)
	if !ok {
		return
	}
	defer release()
	b, err := c.eventJSON(ref)
	if err != nil {
		writeErr(w, http.StatusNotFound, err)
		return
	}
	writeJSONBytes(w, http.StatusOK, b)
}

// eventJSON returns an event's details as on /t/{id}, with global ids and
// the aligned time; time_ns becomes the aligned time (trace_time_ns keeps
// the trace's own) and "trace" says which trace it came from.
func (c *combined) eventJSON(ref EventRef) ([]byte, error) {
	k, id, ok := c.local(ref.Track)
	if !ok {
		return nil, errors.New("no such event")
	}
	b, err := appendEventJSON(nil, c.idx[k], EventRef{Track: id, Index: ref.Index})
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("internal error: event JSON: %w", err)
	}
	var own int64
	if err := json.Unmarshal(bytes.Trim(obj["time_ns"], `"`), &own); err != nil {
		return nil, fmt.Errorf("internal error: event time: %w", err)
	}
	var typ int32
	json.Unmarshal(obj["type_id"], &typ)
	obj["trace_time_ns"] = obj["time_ns"]
	obj["time_ns"] = json.RawMessage(strconv.FormatInt(int64(addTime(trace.Time(own), c.shift[k])), 10))
	obj["ev"], _ = json.Marshal(ref.String())
	obj["track_id"] = json.RawMessage(strconv.Itoa(int(ref.Track)))
	obj["type_id"] = json.RawMessage(strconv.Itoa(int(c.typ(k, trace.TypeID(typ)))))
	obj["trace"], _ = json.Marshal(map[string]any{"index": k, "id": c.entries[k].ID, "name": c.entries[k].Name})
	return json.Marshal(obj)
}

// togetherHit is a search hit of a combined view: global ids, the aligned
// time, and the trace it came from.
type togetherHit struct {
	SearchHit
	Trace int `json:"trace"`
}

// search calls yield with the hits of q in every trace after from (an
// aligned position: the hit's trace, its event there, or at its time),
// merged in aligned time order (ties: the trace's position, then its own
// order), until yield returns false. A query that parses in no trace is
// an errBadQuery; one that parses in some searches those.
func (c *combined) search(ctx context.Context, q string, from togetherFrom, backward bool, yield func(togetherHit) bool) error {
	type head struct {
		next func() (render.Position, error, bool)
		stop func()
		pos  render.Position
		at   trace.Time // aligned
		ok   bool
	}
	heads := make([]head, len(c.idx))
	defer func() {
		for _, h := range heads {
			if h.stop != nil {
				h.stop()
			}
		}
	}()
	var parseErr error
	parsed := 0
	for k, x := range c.idx {
		f, err := query.Parse(q, x.x.Meta())
		if err != nil {
			parseErr = err
			continue
		}
		parsed++
		f.Budget = MaxSearchDecodes / int64(len(c.idx))
		start := from.position(c, k, backward)
		next, stop := iter.Pull2(x.x.Hits(ctx, f, start, backward))
		heads[k] = head{next: next, stop: stop}
	}
	if parsed == 0 {
		return errBadQuery{parseErr}
	}
	advance := func(k int) error {
		h := &heads[k]
		pos, err, ok := h.next()
		if !ok {
			h.ok = false
			return nil
		}
		if err != nil {
			return err
		}
		h.pos, h.at, h.ok = pos, addTime(pos.Time, c.shift[k]), true
		return nil
	}
	for k := range heads {
		if heads[k].next != nil {
			if err := advance(k); err != nil {
				return err
			}
		}
	}
	for {
		best := -1
		for k := range heads {
			h := &heads[k]
			if !h.ok {
				continue
			}
			// Ties go to the lower trace going forward, so to the
			// higher one going backward: the loop keeps the first of
			// equals, or moves to a later one backward.
			if best < 0 || (!backward && h.at < heads[best].at) || (backward && h.at >= heads[best].at) {
				best = k
			}
		}
		if best < 0 {
			return nil
		}
		h := heads[best]
		g, _ := c.track(best, h.pos.ID.Track)
		if !yield(togetherHit{SearchHit{Ev: EventRef{Track: g, Index: h.pos.ID.Index}, Time: h.at, Track: g}, best}) {
			return nil
		}
		if err := advance(best); err != nil {
			return err
		}
	}
}

// togetherFrom is where a combined search starts: after an event (ref
// set) or at an aligned time.
type togetherFrom struct {
	ref     *EventRef
	refK    int
	refPos  render.Position
	at      trace.Time
	hasTime bool
}

// position returns where trace k's search starts.
func (f togetherFrom) position(c *combined, k int, backward bool) render.Position {
	switch {
	case f.ref != nil && k == f.refK:
		return f.refPos
	case f.ref != nil:
		// The events of other traces at the event's aligned time come
		// before it when their trace does (in either direction): a
		// lower trace's start after them, a higher one's before.
		own := addTime(addTime(f.refPos.Time, c.shift[f.refK]), -c.shift[k])
		if k < f.refK {
			return render.At(addTime(own, 1))
		}
		return render.At(own)
	case f.hasTime:
		return render.At(addTime(f.at, -c.shift[k]))
	case backward:
		return render.At(math.MaxInt64)
	}
	return render.At(math.MinInt64)
}

func (s *Server) handleTogetherSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sp, err := parseSearchParams(q)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	limit, backward := sp.limit, sp.backward
	if q.Get("bins") != "" && q.Get("bins") != "0" {
		s.handleTogetherMissing(w, r)
		return
	}
	c, release, ok := s.togetherIndex(w, r)
	if !ok {
		return
	}
	defer release()
	var from togetherFrom
	switch {
	case sp.after != nil:
		ref := *sp.after
		k, id, ok := c.local(ref.Track)
		var pos render.Position
		if ok {
			pos, ok = c.idx[k].x.PositionOf(render.EventID{Track: id, Index: ref.Index})
		}
		if !ok {
			writeError(w, http.StatusBadRequest, "after: no such event")
			return
		}
		from = togetherFrom{ref: &ref, refK: k, refPos: pos}
	case sp.hasFrom:
		from = togetherFrom{at: sp.from, hasTime: true}
	}
	// The query's time budget counts its wait for a search slot; the
	// request's context ends it early when the client goes away.
	ctx, done, ok := s.searchSlot(w, r)
	if !ok {
		return
	}
	defer done()
	hits, more, notice, ok := collectHits(w, r, ctx, limit, s.res.timeout, func(yield func(togetherHit) bool) error {
		return c.search(ctx, q.Get("q"), from, backward, yield)
	})
	if !ok {
		return
	}
	out := map[string]any{"hits": hits, "more": more}
	if notice != "" {
		out["cut_off"] = true
		out["notice"] = notice
	}
	writeJSON(w, http.StatusOK, out)
}

// ---- the websocket --------------------------------------------------------

// togetherRequest is a viewport request of a combined view: a request
// with the user's offsets, in the URL's `off` grammar.
type togetherRequest struct {
	request
	Off string `json:"off"`

	offsets []trace.Time
}

// togetherSession is one combined view tab's websocket (PROTOCOL.md
// §together): a socket over several indexes, without live chasing.
type togetherSession struct {
	*socket
	entries []Entry
	jobs    []*job
	// members stand for the session in the per-trace session counts; the
	// server closes them (closeWith) when their trace is deleted, which
	// closes the combined view naming the trace.
	members []*session

	mu       sync.Mutex
	pending  *togetherRequest
	sentInit bool         // ready and the tables went out (writer only)
	scratch  render.Slice // each trace's own reply (writer only)
	merged   render.Slice
}

func (s *Server) handleTogetherSocket(w http.ResponseWriter, r *http.Request) {
	entries, _, ok := s.togetherEntries(w, r)
	if !ok {
		return
	}
	conn, ok := s.upgrade(w, r)
	if !ok {
		return
	}
	ts := &togetherSession{socket: newSocket(s, conn, "combined", len(entries)), entries: entries}
	leave := func() {
		for _, m := range ts.members {
			s.res.leave(m)
		}
	}
	for _, e := range entries {
		m := &session{e: e, closer: newCloseSignal()}
		if ok, reason := s.res.join(m); !ok {
			leave()
			ts.refuse(reason)
			return
		}
		ts.members = append(ts.members, m)
		go func() {
			select {
			case <-m.closer.done:
				ts.closing.closeWith(m.closer.code, e.Name+": "+m.closer.text)
			case <-ts.ctx.Done():
			}
		}()
	}
	var release []func()
	progress := make(chan struct{}, 1)
	for _, e := range entries {
		j, rel := s.ix.acquire(e)
		ts.jobs = append(ts.jobs, j)
		c, unsubscribe := j.subscribe()
		release = append(release, rel, unsubscribe)
		go func() { // every job's progress wakes the one writer
			for {
				select {
				case <-c:
					select {
					case progress <- struct{}{}:
					default:
					}
				case <-ts.ctx.Done():
					return
				}
			}
		}()
	}
	ts.run(ts, progress, func() {
		for _, f := range release {
			f()
		}
		leave()
	})
}

// receive decodes and keeps a client message (socketView).
func (ts *togetherSession) receive(msg []byte) (uint32, error) {
	var req togetherRequest
	if err := decodeMessage(msg, &req); err != nil {
		return 0, err
	}
	return req.Seq, ts.accept(&req)
}

func (ts *togetherSession) accept(req *togetherRequest) error {
	if req.Type != "viewport" {
		return fmt.Errorf("unknown message type %q", req.Type)
	}
	if err := req.check(); err != nil {
		return err
	}
	var offs []TraceOffset
	if req.Off != "" {
		var err error
		if offs, err = parseOffsets(req.Off, len(ts.entries)); err != nil {
			return errors.New("viewport: off: " + err.Error())
		}
	}
	req.offsets = offsetsOf(len(ts.entries), offs)
	ts.mu.Lock()
	ts.pending = req
	ts.mu.Unlock()
	return nil
}

// indexes returns every trace's index once all are ready, else the
// combined progress, or why the view cannot open.
func (ts *togetherSession) indexes() ([]*index, Progress, string) {
	idx := make([]*index, len(ts.jobs))
	sum := Progress{State: StateReady}
	for k, j := range ts.jobs {
		p, x := j.snapshot()
		switch {
		case p.State == StateFailed:
			return nil, p, ts.entries[k].Name + ": " + p.Error
		case p.State == StateLive:
			return nil, p, liveRefusal(ts.entries[k])
		case x == nil || p.State != StateReady:
			sum.State = StateIndexing
		}
		if p.State == StateReady {
			p.Percent = 100
		}
		sum.Percent += p.Percent / float64(len(ts.jobs))
		sum.Events += p.Events
		sum.EventsPerS += p.EventsPerS
		idx[k] = x
	}
	if sum.State != StateReady {
		return nil, sum, ""
	}
	return idx, sum, ""
}

func (ts *togetherSession) writeProgress() error {
	idx, p, failed := ts.indexes()
	switch {
	case failed != "":
		return ts.writeJSON(map[string]any{"type": "failed", "error": failed})
	case idx != nil:
		return ts.serve()
	}
	return ts.writeJSON(struct {
		Type string `json:"type"`
		Progress
	}{"progress", p})
}

// serve answers the newest pending viewport request once every index is
// ready, sending ready and the name tables first.
func (ts *togetherSession) serve() error {
	idx, _, failed := ts.indexes()
	if idx == nil || failed != "" {
		return nil
	}
	if !ts.sentInit {
		ts.sentInit = true
		if err := ts.writeJSON(map[string]any{"type": "ready"}); err != nil {
			return err
		}
		c := newCombined(ts.entries, idx, make([]trace.Time, len(idx)))
		m, listed := c.meta()
		if err := ts.write(websocket.BinaryMessage, wire.AppendTables(nil, 0, wire.NewTables(m, listed))); err != nil {
			return err
		}
	}
	buf, err := ts.takeSlot(ts.srv.res.slots)
	if buf == nil {
		return err
	}
	defer ts.srv.res.putSlot(buf)
	ts.mu.Lock()
	vp := ts.pending
	ts.pending = nil
	ts.mu.Unlock()
	if vp == nil {
		return nil
	}
	start := time.Now()
	c := newCombined(ts.entries, idx, vp.offsets)
	ctx, cancel := context.WithTimeout(ts.ctx, ts.srv.res.timeout)
	defer cancel()
	err = c.query(ctx, render.Viewport{Start: trace.Time(vp.Start), End: trace.Time(vp.End), Width: vp.Width, Tracks: vp.Tracks}, &ts.scratch, &ts.merged)
	if err != nil {
		return ts.writeQueryError(ctx, vp.Seq, err)
	}
	buf.frame = wire.AppendSlice(buf.frame[:0], vp.Seq, &ts.merged, time.Since(start), math.MaxInt32)
	return ts.write(websocket.BinaryMessage, buf.frame)
}
