package web

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/a-h/templ"

	"viewer/trace"
	"viewer/ui/templates"
)

func (s *Server) assets() templates.Assets {
	return templates.Assets{
		CSS:       s.static.URL("viewer.css"),
		ViewerJS:  s.static.URL("viewer.js"),
		LibraryJS: s.static.URL("library.js"),
	}
}

// render writes a page rendered into a buffer first, so that a template
// error becomes a clean 500 instead of half a page.
func (s *Server) render(w http.ResponseWriter, ctx context.Context, status int, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(ctx, &buf); err != nil {
		s.log.Error("rendering page", "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r.Context(), status, templates.Error(templates.ErrorPage{
		Assets:  s.assets(),
		Status:  strconv.Itoa(status) + " " + http.StatusText(status),
		Message: msg,
	}))
}

func (s *Server) handleLibraryPage(w http.ResponseWriter, r *http.Request) {
	list := s.lib.List()
	infos := make([]TraceInfo, len(list))
	rows := make([]templates.TraceRow, len(list))
	for i, e := range list {
		ti := s.listInfo(e)
		infos[i] = ti
		row := templates.TraceRow{
			ID:       e.ID.String(),
			Name:     e.Name,
			Format:   e.Format,
			Size:     formatBytes(e.Size),
			Uploaded: e.Uploaded.Local().Format("2006-01-02 15:04"),
			State:    string(ti.State),
			Error:    ti.Error,
		}
		if ti.Stats != nil {
			row.Events = strconv.FormatInt(ti.Stats.Events, 10)
			row.Span = formatSpan(ti.Stats.LastNS - ti.Stats.FirstNS)
		}
		rows[i] = row
	}
	s.render(w, r.Context(), http.StatusOK, templates.Library(templates.LibraryPage{
		Assets:    s.assets(),
		Traces:    rows,
		MaxUpload: formatBytes(s.cfg.MaxUpload),
		Data: map[string]any{
			"page":       "library",
			"traces":     infos,
			"max_upload": s.cfg.MaxUpload,
		},
	}))
}

// formatSpan renders a duration with three significant digits.
func formatSpan(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Hour:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Microsecond).String()
	}
	return d.String()
}

func (s *Server) handleViewerPage(w http.ResponseWriter, r *http.Request) {
	id, ok := parseTraceID(chiParam(r, "id"))
	if !ok {
		s.errorPage(w, r, http.StatusNotFound, "This is not a trace link.")
		return
	}
	e, ok := s.lib.Get(id)
	if !ok {
		s.errorPage(w, r, http.StatusNotFound, "The library holds no such trace; it may have been deleted.")
		return
	}
	view, err := ParseView(r.URL.Query())
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "This link's view cannot be read: "+err.Error())
		return
	}
	ti := s.listInfo(e)
	if !view.HasRange && ti.Stats != nil {
		view.Start, view.End = trace.Time(ti.Stats.FirstNS), trace.Time(ti.Stats.LastNS)
	}
	s.ix.get(e) // start indexing now if it is not loaded
	s.render(w, r.Context(), http.StatusOK, templates.Viewer(templates.ViewerPage{
		Assets: s.assets(),
		Title:  e.Name,
		Data: map[string]any{
			"page":  "viewer",
			"trace": ti,
			"view":  view,
			"ws":    "/api/traces/" + e.ID.String() + "/ws",
		},
	}))
}

// handleDeleteForm serves the library page's delete buttons, which work
// without script.
func (s *Server) handleDeleteForm(w http.ResponseWriter, r *http.Request) {
	id, ok := parseTraceID(chiParam(r, "id"))
	if !ok {
		s.errorPage(w, r, http.StatusNotFound, "This is not a trace link.")
		return
	}
	if e, ok := s.lib.Get(id); ok {
		if err := s.delete(e); err != nil {
			s.errorPage(w, r, http.StatusInternalServerError, err.Error())
			return
		}
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
