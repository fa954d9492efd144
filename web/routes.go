package web

import (
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/go-chi/chi/v5"
)

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(s.recoverPanics, s.checkHost, securityHeaders, s.checkToken)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, http.StatusForbidden, "cross-origin request refused: send it from the viewer's own page")
	}))
	r.Use(cop.Handler)

	r.Get("/", s.handleLibraryPage)
	r.Get("/t/{id}", s.handleViewerPage)
	r.Get("/compare", s.handleComparePage)
	r.Get("/v", s.handleTogetherPage)
	r.Post("/t/{id}/delete", s.handleDeleteForm)
	r.Post("/upload", s.handleUploadForm)
	r.Handle("/static/*", s.static)

	r.Post("/api/live", s.handleLive)
	r.Post("/api/live/demo", s.handleLiveDemo)
	r.Get("/api/dotnet/processes", s.handleProcesses)
	r.Post("/api/dotnet/attach", s.handleAttach)
	r.Get("/api/compare", s.handleCompare)
	r.Get("/api/compare/stacks", s.handleCompareStacks)
	r.Route("/api/together", func(r chi.Router) {
		r.Get("/meta", s.handleTogetherMeta)
		r.Get("/events/{ev}", s.handleTogetherEvent)
		r.Get("/search", s.handleTogetherSearch)
		r.Get("/ws", s.handleTogetherSocket)
		r.HandleFunc("/*", s.handleTogetherMissing)
	})
	r.Route("/api/traces", func(r chi.Router) {
		r.Get("/", s.handleList)
		r.Post("/", s.handleUpload)
		r.Get("/{id}", s.handleGet)
		r.Delete("/{id}", s.handleDelete)
		r.Post("/{id}/retry", s.handleRetry)
		r.Post("/{id}/stop", s.handleStop)
		r.Get("/{id}/meta", s.handleMeta)
		r.Get("/{id}/events/{ev}", s.handleEvent)
		r.Get("/{id}/search", s.handleSearch)
		r.Get("/{id}/counts", s.handleCounts)
		r.Get("/{id}/table", s.handleTable)
		r.Get("/{id}/filter", s.handleFilter)
		r.Get("/{id}/filter/viewport", s.handleFilterViewport)
		r.Get("/{id}/stacks", s.handleStacks)
		r.Get("/{id}/stacks/events", s.handleStackEvents)
		r.Get("/{id}/stacks/samples", s.handleStackSamples)
		r.Get("/{id}/stacks/speedscope", s.handleStackSpeedscope)
		r.Get("/{id}/spans", s.handleSpans)
		r.Get("/{id}/spans/{track}/{slice}", s.handleSpan)
		r.Get("/{id}/flows", s.handleFlows)
		r.Get("/{id}/ws", s.handleSocket)
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.errorPage(w, r, http.StatusNotFound, "There is no page here.")
	})
	return r
}

// chiParam returns a route parameter.
func chiParam(r *http.Request, key string) string { return chi.URLParam(r, key) }

// checkHost refuses requests whose Host header names another server: a
// page on a rebound DNS name must not reach this one.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			s.refuse(w, r, http.StatusMisdirectedRequest, "this server answers only to localhost (unknown Host header)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers a request the middleware refuses: a JSON error for the
// API (PROTOCOL.md §1), an error page otherwise.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeError(w, status, msg)
		return
	}
	s.errorPage(w, r, status, msg)
}

// contentSecurityPolicy allows the page's own scripts, styles and
// websocket and nothing else. The websocket's host is the request's Host
// rebuilt from validated parts (cspHost); without one only 'self'.
func contentSecurityPolicy(hostport string) string {
	connect := "'self'"
	if host := cspHost(hostport); host != "" {
		connect += " ws://" + host + " wss://" + host
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
		"connect-src " + connect + "; object-src 'none'; base-uri 'none'; " +
		"frame-ancestors 'none'; form-action 'self'"
}

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy(r.Host))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// recoverPanics turns a panic in a handler into a logged 500.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil || p == http.ErrAbortHandler {
				if p != nil {
					panic(p)
				}
				return
			}
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path,
				"trace", chiParam(r, "id"), "panic", p, "stack", string(debug.Stack()))
			if strings.HasPrefix(r.URL.Path, "/api/") {
				writeError(w, http.StatusInternalServerError, "internal error")
			} else {
				s.errorPage(w, r, http.StatusInternalServerError, "Something went wrong on the server; it has been logged.")
			}
		}()
		next.ServeHTTP(w, r)
	})
}
