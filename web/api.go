package web

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"viewer/render"
	"viewer/render/query"
	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/wrap"
)

// TraceInfo describes a trace to the JSON API and the pages.
type TraceInfo struct {
	Entry
	State    State         `json:"state"`
	Error    string        `json:"error"`
	Stats    *export.Stats `json:"stats"`
	Progress *Progress     `json:"progress,omitempty"`
}

// info returns what is known of a stored trace, with its per-type counts
// (capped: capStats).
func (s *Server) info(e Entry) TraceInfo {
	ti := TraceInfo{Entry: e, State: StateQueued}
	if st, ok := s.ix.stats.get(e.ID); ok {
		ti.State, ti.Stats = StateReady, st
	}
	if j, ok := s.ix.peek(e.ID); ok {
		p, _ := j.snapshot()
		ti.Progress = &p
		if p.State != StateReady || ti.Stats == nil {
			ti.State = p.State
		}
		ti.Error = p.Error
	}
	return ti
}

// parseTraceID accepts only a canonical lowercase UUID.
func parseTraceID(s string) (uuid.UUID, bool) {
	id, err := uuid.Parse(s)
	if err != nil || id.String() != s {
		return uuid.UUID{}, false
	}
	return id, true
}

// entry returns the trace named by the route's {id}, or writes 404.
func (s *Server) entry(w http.ResponseWriter, r *http.Request) (Entry, bool) {
	id, ok := parseTraceID(chiParam(r, "id"))
	if !ok {
		writeError(w, http.StatusNotFound, "not a trace id")
		return Entry{}, false
	}
	e, ok := s.lib.Get(id)
	if !ok {
		writeError(w, http.StatusNotFound, "no such trace")
		return Entry{}, false
	}
	return e, true
}

// index returns the built index of a trace, starting its build if needed,
// and a func to call when done with it; while it builds it writes 409
// with the progress.
// entryIndex is entry, then index: the trace a request names and its
// index, with the release the caller must call when ok.
func (s *Server) entryIndex(w http.ResponseWriter, r *http.Request) (Entry, *index, func(), bool) {
	e, ok := s.entry(w, r)
	if !ok {
		return e, nil, nil, false
	}
	idx, release, ok := s.index(w, e)
	return e, idx, release, ok
}

func (s *Server) index(w http.ResponseWriter, e Entry) (*index, func(), bool) {
	j, release := s.ix.acquire(e)
	p, idx := j.snapshot()
	if idx != nil {
		return idx, release, true
	}
	release()
	if p.State == StateFailed {
		writeError(w, http.StatusUnprocessableEntity, "the trace could not be indexed: "+p.Error)
		return nil, nil, false
	}
	writeJSON(w, http.StatusConflict, map[string]any{"error": "the trace is still being indexed", "progress": p})
	return nil, nil, false
}

// listInfo is info without the per-type counts (stats.counts is null),
// for the library listing: GET /api/traces/{id} has them.
func (s *Server) listInfo(e Entry) TraceInfo {
	ti := s.info(e)
	if ti.Stats != nil {
		st := *ti.Stats
		st.Counts = nil
		ti.Stats = &st
	}
	return ti
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	list := s.lib.List()
	out := make([]TraceInfo, len(list))
	for i, e := range list {
		out[i] = s.listInfo(e)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	e, ok := s.entry(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.info(e))
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	e, ok := s.entry(w, r)
	if !ok {
		return
	}
	if err := s.delete(e); err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, ErrLive) {
			status = http.StatusConflict
		}
		writeError(w, status, publicError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleRetry starts the index build of a trace whose build failed again.
func (s *Server) handleRetry(w http.ResponseWriter, r *http.Request) {
	e, ok := s.entry(w, r)
	if !ok {
		return
	}
	if !s.ix.retry(e) {
		writeError(w, http.StatusConflict, "the trace's index has not failed")
		return
	}
	j, _ := s.ix.peek(e.ID)
	p, _ := j.snapshot()
	writeJSON(w, http.StatusAccepted, map[string]any{"progress": p})
}

// delete removes a trace from the library first, so that no new index
// build can start for it, then stops and closes its index.
func (s *Server) delete(e Entry) error {
	err := s.lib.Delete(e.ID)
	if errors.Is(err, ErrLive) {
		return err
	}
	s.res.closeTrace(e.ID, CloseTraceDeleted, "the trace was deleted")
	s.ix.drop(e.ID)
	s.filters.drop(e.ID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		s.log.Error("deleting trace", "trace", e.ID, "err", err)
		return fmt.Errorf("could not delete the trace: %w", err)
	}
	return nil
}

// uploadStatus returns the status and message for a failed upload.
func (s *Server) uploadStatus(err error, r *http.Request, max int64) (int, string) {
	var ue *uploadError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ue):
		return ue.status, ue.msg
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, tooLarge(max)
	case errors.Is(err, errUploadStalled):
		return http.StatusRequestTimeout, "the upload stalled: no data for " + s.cfg.UploadIdle.String()
	case r.Context().Err() != nil || errors.Is(err, io.ErrUnexpectedEOF):
		return http.StatusBadRequest, "the upload was interrupted"
	case diskFull(err):
		s.log.Error("storing upload", "err", err)
		return http.StatusInsufficientStorage, "could not store the upload: " + publicError(err)
	}
	s.log.Error("storing upload", "err", err)
	return http.StatusInternalServerError, "could not store the upload: " + publicError(err)
}

// uploadError is a refused upload: a 4xx status and a message for the user.
type uploadError struct {
	status int
	msg    string
}

func (e *uploadError) Error() string { return e.msg }

// handleUpload stores the raw request body as a new trace.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	max := s.cfg.MaxUpload
	if r.ContentLength > max {
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge(max))
		return
	}
	release, ok := s.acquireUpload(w, r, false)
	if !ok {
		return
	}
	defer release()
	if r.ContentLength > 0 {
		if err := checkFree(filepath.Join(s.cfg.DataDir, tmpDir), r.ContentLength+s.cfg.MinFreeDisk); err != nil {
			writeError(w, http.StatusInsufficientStorage, "could not store the upload: "+publicError(err))
			return
		}
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		name = r.Header.Get("X-File-Name")
	}
	body := newIdleBody(w, http.MaxBytesReader(w, r.Body, max), s.cfg.UploadIdle)
	e, existing, err := s.lib.Add(body, name, s.checker(r.Context(), r.URL.Query().Get("member"), 0))
	body.done()
	if err != nil {
		status, msg := s.uploadStatus(err, r, max)
		writeError(w, status, msg)
		return
	}
	s.ix.get(e)
	status := http.StatusCreated
	if existing {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]any{"id": e.ID, "existing": existing})
}

// handleUploadForm serves the library page's upload form, which works
// without script: the file part of a multipart body is streamed to the
// library like a raw upload, then the browser is sent to the viewer.
func (s *Server) handleUploadForm(w http.ResponseWriter, r *http.Request) {
	max := s.cfg.MaxUpload
	if r.ContentLength > max+64<<10 {
		s.errorPage(w, r, http.StatusRequestEntityTooLarge, tooLarge(max))
		return
	}
	release, ok := s.acquireUpload(w, r, true)
	if !ok {
		return
	}
	defer release()
	body := newIdleBody(w, http.MaxBytesReader(w, r.Body, max+64<<10), s.cfg.UploadIdle) // the form's own bytes too
	defer body.done()
	r.Body = io.NopCloser(body)
	mr, err := r.MultipartReader()
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "the upload is not a form: "+err.Error())
		return
	}
	for {
		part, err := mr.NextPart()
		if err != nil {
			s.errorPage(w, r, http.StatusBadRequest, "the form holds no file")
			return
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		e, _, err := s.lib.Add(io.LimitReader(part, max+1), part.FileName(), s.checker(r.Context(), "", max))
		part.Close()
		if err != nil {
			status, msg := s.uploadStatus(err, r, max)
			s.errorPage(w, r, status, msg)
			return
		}
		s.ix.get(e)
		http.Redirect(w, r, "/t/"+e.ID.String(), http.StatusSeeOther)
		return
	}
}

func tooLarge(max int64) string {
	return "the file is larger than this server's upload limit of " + formatBytes(max)
}

// checker returns the Checker of an upload. It decides whether the
// upload is a trace this server reads: a format must recognize its first
// bytes, open it, and read it up to its first event (or its clean end). An
// upload wrapped in zip, gzip or zstd is unwrapped into the library first
// (member names the zip entry; without it the zip must hold one trace),
// within the upload limit, and the trace inside is checked and stored.
// max > 0 refuses uploads larger than max, for bodies that cannot enforce
// the limit themselves.
func (s *Server) checker(ctx context.Context, member string, max int64) Checker {
	return func(u *Upload) (Checked, error) {
		if max > 0 && u.Size > max {
			return Checked{}, &uploadError{http.StatusRequestEntityTooLarge, tooLarge(max)}
		}
		if u.Size == 0 {
			return Checked{}, &uploadError{http.StatusBadRequest, "the upload is empty"}
		}
		f, size := u.File, u.Size
		var c Checked
		format, err := trace.Sniff(f, size, s.cfg.Formats)
		if member != "" || errors.Is(err, trace.ErrUnknownFormat) {
			head := make([]byte, min(size, 16))
			if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
				return c, err
			}
			kind := wrap.Detect(head)
			if kind == "" && member != "" {
				return c, &uploadError{http.StatusBadRequest, "member names a zip entry, but the upload is not a zip file"}
			}
			if kind != "" {
				f, size, err = u.Replace(func(w io.Writer) error {
					info, err := wrap.Unwrap(ctx, u.File, u.Size, member, s.cfg.Formats, wrap.Limits{MaxSize: s.cfg.MaxUpload}, w)
					c.Wrapper, c.Member = info.Wrapper, info.Member
					return err
				})
				if err != nil {
					return c, s.unwrapError(kind, err)
				}
				format, err = trace.Sniff(f, size, s.cfg.Formats)
			}
		}
		if err != nil {
			if errors.Is(err, trace.ErrUnknownFormat) {
				return c, &uploadError{http.StatusUnsupportedMediaType, err.Error() + "; " + s.tried()}
			}
			return c, err
		}
		c.Format = format.Name()
		r, err := format.Open(f, size)
		if err == nil {
			_, err = r.ReadEvent()
			if err == io.EOF {
				err = nil
			}
		}
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, format.Name()) {
				msg = format.Name() + ": " + msg
			}
			return c, &uploadError{http.StatusUnprocessableEntity, "the file looks like " + format.Name() + " but cannot be read: " + msg}
		}
		return c, nil
	}
}

// unwrapError turns an error from unwrapping an upload into the reply.
func (s *Server) unwrapError(kind string, err error) error {
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe), ctxErr(err): // storing failed, or the client left
		return err
	case errors.Is(err, wrap.ErrLimit):
		return &uploadError{http.StatusRequestEntityTooLarge, err.Error()}
	case errors.Is(err, trace.ErrUnknownFormat):
		return &uploadError{http.StatusUnsupportedMediaType, err.Error() + "; " + s.tried()}
	case errors.Is(err, wrap.ErrChoice):
		return &uploadError{http.StatusUnprocessableEntity, err.Error() + "; upload one of them alone, or name it with member=NAME in the upload's query"}
	}
	return &uploadError{http.StatusUnprocessableEntity, "the file looks like " + kind + " but its trace cannot be unwrapped: " + err.Error()}
}

func ctxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (s *Server) tried() string {
	if len(s.cfg.Formats) == 0 {
		return "this server has no trace readers"
	}
	names := make([]string, len(s.cfg.Formats))
	for i, f := range s.cfg.Formats {
		names[i] = f.Name()
	}
	return "tried " + strings.Join(names, ", ")
}

func (s *Server) handleMeta(w http.ResponseWriter, r *http.Request) {
	_, idx, release, ok := s.entryIndex(w, r)
	if !ok {
		return
	}
	defer release()
	writeJSONBytes(w, http.StatusOK, appendMetaJSON(nil, idx))
}

func (s *Server) handleEvent(w http.ResponseWriter, r *http.Request) {
	e, ok := s.entry(w, r)
	if !ok {
		return
	}
	ref, err := ParseEventRef(chiParam(r, "ev"))
	if err != nil {
		writeErr(w, http.StatusNotFound, err)
		return
	}
	idx, release, ok := s.index(w, e)
	if !ok {
		return
	}
	defer release()
	b, err := appendEventJSON(nil, idx, ref)
	if err != nil {
		writeErr(w, http.StatusNotFound, err)
		return
	}
	writeJSONBytes(w, http.StatusOK, b)
}

// appendEventJSON appends the `viewer dump` object of one event with its
// ids and raw payload.
func appendEventJSON(b []byte, idx *index, ref EventRef) ([]byte, error) {
	d, err := idx.x.Details(render.EventID(ref), nil)
	if err != nil {
		return b, err
	}
	if d.DetailsErr != nil {
		d.Details.Label = "error: " + d.DetailsErr.Error()
	}
	b = export.AppendEvent(b, idx.r, d.Event, d.Details, d.Stack)
	b = b[:len(b)-1] // reopen the object
	b = append(b, `,"ev":"`...)
	b = append(b, ref.String()...)
	b = append(b, `","track_id":`...)
	b = strconv.AppendInt(b, int64(d.Event.Track), 10)
	b = append(b, `,"type_id":`...)
	b = strconv.AppendInt(b, int64(d.Event.Type), 10)
	b = append(b, `,"raw":"`...)
	b = hex.AppendEncode(b, d.Details.Raw)
	b = append(b, `"}`...)
	return b, nil
}

// SearchHit is one matching event.
type SearchHit struct {
	Ev    EventRef      `json:"ev"`
	Time  trace.Time    `json:"time,string"`
	Track trace.TrackID `json:"track"`
}

// Search limits.
const (
	DefaultSearchLimit = 1000
	MaxSearchLimit     = 10000
	// MaxSearchDecodes is a search's work budget: the events whose
	// payload or spilled header it reads (render.Filter.Budget), besides
	// its time budget.
	MaxSearchDecodes = 8 << 20
)

// errBadQuery marks a query that does not parse.
type errBadQuery struct{ error }

func (e errBadQuery) Unwrap() error { return e.error }

// search calls yield with the events matching q after from (before it when
// backward), in order, until yield returns false or no event matches. A
// query that does not parse is an errBadQuery; ctx ending is its error.
func (idx *index) search(ctx context.Context, q string, from render.Position, backward bool, yield func(SearchHit) bool) error {
	f, err := query.Parse(q, idx.x.Meta())
	if err != nil {
		return errBadQuery{err}
	}
	f.Budget = MaxSearchDecodes
	for pos, err := range idx.x.Hits(ctx, f, from, backward) {
		if err != nil {
			return err
		}
		if !yield(SearchHit{Ev: EventRef(pos.ID), Time: pos.Time, Track: pos.ID.Track}) {
			return nil
		}
	}
	return nil
}

// searchParams are a search request's parameters that the search of a
// trace and of a combined view share (PROTOCOL.md §3 search).
type searchParams struct {
	limit    int
	backward bool      // dir=prev
	after    *EventRef // search from this event
	from     trace.Time
	hasFrom  bool // search from this time (when after is absent)
}

// parseSearchParams reads limit, dir, after and from.
func parseSearchParams(q url.Values) (searchParams, error) {
	var sp searchParams
	var err error
	if sp.limit, err = countParam("limit", q.Get("limit"), DefaultSearchLimit, MaxSearchLimit); err != nil {
		return sp, err
	}
	switch q.Get("dir") {
	case "", "next":
	case "prev":
		sp.backward = true
	default:
		return sp, errors.New("dir: next or prev")
	}
	if a := q.Get("after"); a != "" {
		ref, err := ParseEventRef(a)
		if err != nil {
			return sp, errors.New("after: " + err.Error())
		}
		sp.after = &ref
	} else if t := q.Get("from"); t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return sp, errors.New("from: not a time in nanoseconds")
		}
		sp.from, sp.hasFrom = trace.Time(n), true
	}
	return sp, nil
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	e, ok := s.entry(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	sp, err := parseSearchParams(q)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	limit, backward := sp.limit, sp.backward
	bins, err := parseBins(q.Get("bins"))
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	idx, release, ok := s.index(w, e)
	if !ok {
		return
	}
	defer release()
	from := render.At(math.MinInt64)
	if backward {
		from = render.At(math.MaxInt64)
	}
	switch {
	case sp.after != nil:
		pos, ok := idx.x.PositionOf(render.EventID(*sp.after))
		if !ok {
			writeError(w, http.StatusBadRequest, "after: no such event")
			return
		}
		from = pos
	case sp.hasFrom:
		from = render.At(sp.from)
	}
	if _, err := query.Parse(q.Get("q"), idx.x.Meta()); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	// The query's time budget counts its wait for a search slot; the
	// request's context ends it early when the client goes away.
	ctx, done, ok := s.searchSlot(w, r)
	if !ok {
		return
	}
	defer done()
	hits, more, notice, ok := collectHits(w, r, ctx, limit, s.res.timeout, func(yield func(SearchHit) bool) error {
		return idx.search(ctx, q.Get("q"), from, backward, yield)
	})
	if !ok {
		return
	}
	out := searchReply{Hits: hits, More: more, CutOff: notice != "", Notice: notice}
	if bins > 0 {
		b, err := idx.countBins(ctx, q.Get("q"), bins)
		if err != nil {
			writeErr(w, http.StatusBadRequest, err)
			return
		}
		out.Bins = b
	}
	writeJSON(w, http.StatusOK, out)
}

// collectHits runs a search (run yields its hits in order) and keeps the
// first limit hits; more says there were others. A search cut off by its
// time budget (timeout) or decode budget keeps what it found, with a
// notice. On any other error it writes the reply and returns ok false,
// as when the client went away.
func collectHits[H any](w http.ResponseWriter, r *http.Request, ctx context.Context, limit int, timeout time.Duration, run func(yield func(H) bool) error) (hits []H, more bool, notice string, ok bool) {
	hits = []H{}
	err := run(func(h H) bool {
		if len(hits) == limit {
			more = true
			return false
		}
		hits = append(hits, h)
		return true
	})
	switch {
	case err == nil:
	case r.Context().Err() != nil:
		return nil, false, "", false // the client went away
	case errors.Is(err, render.ErrBudget):
		notice = fmt.Sprintf("the search was cut off after decoding %d events: the hits are those found by then; narrow the query (an event name, a time range)", MaxSearchDecodes)
	case ctx.Err() != nil:
		notice = fmt.Sprintf("the search was cut off after %v: the hits are those found by then; narrow the query (an event name, a time range)", timeout)
	case errors.As(err, new(errBadQuery)):
		writeErr(w, http.StatusBadRequest, err)
		return nil, false, "", false
	default:
		writeError(w, http.StatusInternalServerError, "search failed: "+err.Error())
		return nil, false, "", false
	}
	return hits, more, notice, true
}

// searchReply is the reply of GET /api/traces/{id}/search.
type searchReply struct {
	Hits []SearchHit `json:"hits"`
	More bool        `json:"more"`
	// CutOff says the scan stopped at the query timeout: Hits are those
	// found before it, and there may be more (Notice says so for people).
	CutOff bool   `json:"cut_off,omitempty"`
	Notice string `json:"notice,omitempty"`
	// Bins are the hits per time bin over the whole trace, when asked
	// for with bins=N.
	Bins *searchBins `json:"bins,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSONBytes(w, status, b)
}

func writeJSONBytes(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
	w.Write([]byte{'\n'})
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// writeErr answers err with status, except that a question a reopened
// index cannot answer until its reader pass ends (render.ErrLoading) is
// 503 with a Retry-After the page honours.
func writeErr(w http.ResponseWriter, status int, err error) {
	if errors.Is(err, render.ErrLoading) {
		w.Header().Set("Retry-After", "1")
		status = http.StatusServiceUnavailable
	}
	writeError(w, status, err.Error())
}

// formatBytes renders a size for people: "512 B", "1.5 MiB".
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	prec := 1
	if v == float64(int64(v)) {
		prec = 0
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + " " + string("KMGTPE"[exp]) + "iB"
}
