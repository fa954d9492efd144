package web

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/google/uuid"

	"viewer/render"
	"viewer/render/query"
	"viewer/render/wire"
	"viewer/trace"
)

// The timeline filter (PROTOCOL.md §3, filter): a query evaluated once
// per trace into a render.FilterMask, kept in a bounded LRU cache, then
// read by every filtered viewport at the cost of a plain one.

// filterKey names a cached mask: a trace and the query's text.
type filterKey struct {
	trace uuid.UUID
	q     string
}

// filterEntry is a mask being evaluated (done open) or evaluated.
type filterEntry struct {
	key  filterKey
	idx  weak.Pointer[index] // the index it was evaluated on: a rebuilt index is another
	done chan struct{}
	mask *render.FilterMask
	err  error // a stop (budget, deadline) with a partial mask, or a failure
	size int64
}

// filterCache holds evaluated masks, least recently used first out, within
// a byte bound carved out of Config.MemoryBudget (filterCacheBytes).
type filterCache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	lru   *list.List // of *filterEntry, most recently used first
	m     map[filterKey]*list.Element
}

func newFilterCache(max int64) *filterCache {
	return &filterCache{max: max, lru: list.New(), m: map[filterKey]*list.Element{}}
}

// get returns the mask of q on idx, evaluating it with eval unless it is
// cached or being evaluated (then it waits for it, within ctx). A mask
// cut off by time is not kept (another try may finish); one cut off by
// the work budget is (the same budget cuts it at the same place).
func (c *filterCache) get(ctx context.Context, key filterKey, idx *index, eval func() (*render.FilterMask, error)) (*render.FilterMask, error) {
	c.mu.Lock()
	if el, ok := c.m[key]; ok {
		e := el.Value.(*filterEntry)
		if e.idx.Value() == idx {
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			select {
			case <-e.done:
				return e.mask, e.err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		c.removeLocked(el)
	}
	e := &filterEntry{key: key, idx: weak.Make(idx), done: make(chan struct{})}
	el := c.lru.PushFront(e)
	c.m[key] = el
	c.mu.Unlock()

	e.mask, e.err = eval()
	c.mu.Lock()
	keep := e.mask != nil && (e.err == nil || errors.Is(e.err, render.ErrBudget))
	if c.m[key] == el {
		if keep {
			e.size = e.mask.Bytes()
			c.bytes += e.size
		} else {
			c.removeLocked(el)
		}
	}
	for b := c.lru.Back(); b != nil && c.bytes > c.max; {
		prev := b.Prev()
		if be := b.Value.(*filterEntry); be.size > 0 {
			c.removeLocked(b)
		}
		b = prev
	}
	c.mu.Unlock()
	close(e.done)
	return e.mask, e.err
}

// removeLocked drops an entry; c.mu is held.
func (c *filterCache) removeLocked(el *list.Element) {
	e := el.Value.(*filterEntry)
	c.lru.Remove(el)
	if c.m[e.key] == el {
		delete(c.m, e.key)
	}
	c.bytes -= e.size
	e.size = 0
}

// drop forgets the masks of a deleted trace.
func (c *filterCache) drop(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if e := el.Value.(*filterEntry); e.key.trace == id {
			select {
			case <-e.done:
				c.removeLocked(el)
			default: // being evaluated: its end sees it gone
				c.lru.Remove(el)
				delete(c.m, e.key)
			}
		}
		el = next
	}
}

// Sizes.
const (
	// MaxFilterLen bounds a filter's query text, as a search's.
	MaxFilterLen = query.MaxLen
	// maxFilterCache caps the filter cache whatever the memory budget.
	maxFilterCache = 1 << 30
)

// filterCacheBytes is the share of the memory budget the filter cache
// keeps (an eighth, at most maxFilterCache; a mask of a 100M-event trace
// takes 13.3 MB); the indexes keep the rest. A mask larger than the
// cache is answered and not kept.
func filterCacheBytes(budget int64) int64 { return min(budget/8, maxFilterCache) }

// filterMask parses q and returns its mask on idx (writing the error
// reply itself, ok false, when it cannot); see maskOf.
func (s *Server) filterMask(w http.ResponseWriter, r *http.Request, e Entry, idx *index) (m *render.FilterMask, ok bool) {
	q := r.URL.Query().Get("q")
	if strings.TrimSpace(q) == "" || len(q) > MaxFilterLen {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("q: a query of 1 to %d bytes is required", MaxFilterLen))
		return nil, false
	}
	f, err := query.Parse(q, idx.x.Meta())
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return nil, false
	}
	return s.maskOf(w, r, e, idx, q, f)
}

// maskOf returns the mask of the parsed query q (f, without tracks) on
// idx, evaluating it under the search budgets (a search slot, the query
// timeout, MaxSearchDecodes) when it is not cached; a mask cut off by its
// budget is returned with Complete false. It writes the error reply
// itself and returns ok false then.
func (s *Server) maskOf(w http.ResponseWriter, r *http.Request, e Entry, idx *index, q string, f render.Filter) (m *render.FilterMask, ok bool) {
	f.Budget = MaxSearchDecodes
	f.Tracks = nil
	ctx, done, ok := s.searchSlot(w, r)
	if !ok {
		return nil, false
	}
	defer done()
	m, err := s.filters.get(ctx, filterKey{e.ID, q}, idx, func() (*render.FilterMask, error) {
		// The evaluation serves every request waiting for it: it ends
		// with its budget, not with the client that started it.
		ectx, cancel := context.WithTimeout(s.ctx, s.res.timeout)
		defer cancel()
		return idx.x.EvaluateFilter(ectx, f)
	})
	switch {
	case m != nil && (err == nil || render.Stopped(err)):
		return m, true
	case r.Context().Err() != nil:
		return nil, false
	case render.Stopped(err):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "the filter is still being evaluated: try again")
	default:
		writeError(w, http.StatusInternalServerError, "filter failed: "+err.Error())
	}
	return nil, false
}

// filterReply is the reply of GET /api/traces/{id}/filter (tracks in
// track order).
type filterReply struct {
	Total    int64        `json:"total"`
	Tracks   []trackCount `json:"tracks"`
	Complete bool         `json:"complete"`
	Notice   string       `json:"notice,omitempty"`
}

// handleFilter evaluates a timeline filter (or finds it cached) and
// answers its matching events per track.
func (s *Server) handleFilter(w http.ResponseWriter, r *http.Request) {
	e, idx, release, ok := s.entryIndex(w, r)
	if !ok {
		return
	}
	defer release()
	m, ok := s.filterMask(w, r, e, idx)
	if !ok {
		return
	}
	out := filterReply{Total: m.Total(), Tracks: []trackCount{}, Complete: m.Complete}
	if !m.Complete {
		out.Notice = s.filterNotice()
	}
	meta := idx.x.Meta()
	for id, n := range m.Counts() {
		tc := trackCount{Track: id, Count: n}
		if id >= 0 && int(id) < len(meta.Tracks) {
			tc.Name = meta.Tracks[id].Name
		}
		out.Tracks = append(out.Tracks, tc)
	}
	slices.SortFunc(out.Tracks, func(a, b trackCount) int { return cmp.Compare(a.Track, b.Track) })
	writeJSON(w, http.StatusOK, out)
}

// filterNotice is the notice of a filter cut off by its budget.
func (s *Server) filterNotice() string {
	return fmt.Sprintf("the filter was cut off (%v, or %d decoded events): events not reached are shown as not matching; narrow the query", s.res.timeout, MaxSearchDecodes)
}

// handleFilterViewport answers a filtered viewport with a render/wire
// reply frame (PROTOCOL.md §3): the buckets' matching events only.
func (s *Server) handleFilterViewport(w http.ResponseWriter, r *http.Request) {
	e, idx, release, ok := s.entryIndex(w, r)
	if !ok {
		return
	}
	defer release()
	vp, seq, err := parseViewportQuery(r)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	m, ok := s.filterMask(w, r, e, idx)
	if !ok {
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), s.res.timeout)
	defer cancel()
	var sl render.Slice
	if err := idx.x.QueryFilteredInto(ctx, vp, m, &sl); err != nil {
		switch {
		case r.Context().Err() != nil:
		case ctx.Err() != nil:
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("the view took longer than %v to draw and was cut off", s.res.timeout))
		default:
			writeErr(w, http.StatusBadRequest, err)
		}
		return
	}
	frame := wire.AppendSlice(nil, seq, &sl, time.Since(start), idx.maxType())
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("Viewer-Filter-Complete", strconv.FormatBool(m.Complete))
	w.Write(frame)
}

// parseViewportQuery reads a viewport from a query string: start, end
// (ns), width, tracks (comma-separated) and seq, under the limits of a
// websocket viewport (PROTOCOL.md §4).
func parseViewportQuery(r *http.Request) (render.Viewport, uint32, error) {
	q := r.URL.Query()
	var vp render.Viewport
	for _, p := range []struct {
		name string
		to   *trace.Time
	}{{"start", &vp.Start}, {"end", &vp.End}} {
		n, err := strconv.ParseInt(q.Get(p.name), 10, 64)
		if err != nil {
			return vp, 0, fmt.Errorf("%s: not a time in nanoseconds", p.name)
		}
		*p.to = trace.Time(n)
	}
	width, err := strconv.Atoi(q.Get("width"))
	if err != nil || width < 1 || width > render.MaxWidth {
		return vp, 0, fmt.Errorf("width: not a number from 1 to %d", render.MaxWidth)
	}
	vp.Width = width
	if s := q.Get("tracks"); s != "" {
		parts := strings.Split(s, ",")
		if len(parts) > render.MaxTracks {
			return vp, 0, fmt.Errorf("tracks: more than %d", render.MaxTracks)
		}
		for _, p := range parts {
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				return vp, 0, fmt.Errorf("tracks: %q is not a track id", p)
			}
			vp.Tracks = append(vp.Tracks, trace.TrackID(n))
		}
	}
	var seq uint64
	if s := q.Get("seq"); s != "" {
		if seq, err = strconv.ParseUint(s, 10, 32); err != nil {
			return vp, 0, errors.New("seq: not a uint32")
		}
	}
	if _, _, _, err := render.Resolution(vp); err != nil {
		return vp, 0, err
	}
	return vp, uint32(seq), nil
}
