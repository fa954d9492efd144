package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"viewer/trace/nettrace/ipc"
)

// Attaching to a running .NET process (PROTOCOL.md §live): the library
// page lists the processes with a diagnostics socket and starts an
// EventPipe session in one; the session's NetTrace stream is recorded as a
// live trace whose Stop sends StopTracing, so that the stream ends after
// the runtime's rundown and the stored trace has its method tables.
//
// The viewer never leaves a session running: Stop (the page's button,
// Server.Close through live.go) sends StopTracing, and when the runtime
// does not answer, or does not end the stream after it, the connection is
// closed, which ends the session in the runtime too. The stream's end,
// whichever way, closes the connection.

// How long a stop waits for the runtime: for the reply to StopTracing,
// then for the end of the stream (the rundown). Past either the
// connection is closed.
const (
	attachStopTimeout = 10 * time.Second
	attachRundownWait = 30 * time.Second
)

// maxAttachRequest bounds the body of POST /api/dotnet/attach.
const maxAttachRequest = 64 << 10

// attachOff is why the attach endpoints answer 403.
const attachOff = "attaching to .NET processes is off: this viewer listens beyond the loopback interface, " +
	"where anyone who reaches it could trace your processes; start it with `viewer serve --allow-attach` to allow it"

// attachAllowed answers 403 and returns false unless Config.AllowAttach.
func (s *Server) attachAllowed(w http.ResponseWriter) bool {
	if !s.cfg.AllowAttach {
		writeError(w, http.StatusForbidden, attachOff)
	}
	return s.cfg.AllowAttach
}

// processJSON is a .NET process in GET /api/dotnet/processes.
type processJSON struct {
	PID         int    `json:"pid"`
	CommandLine string `json:"command_line"`
	Socket      string `json:"socket"`
}

// profileJSON is a profile the page offers.
type profileJSON struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// handleProcesses lists the .NET processes on the machine and the
// profiles a session may use.
func (s *Server) handleProcesses(w http.ResponseWriter, r *http.Request) {
	if !s.attachAllowed(w) {
		return
	}
	ps, err := ipc.Processes(s.cfg.DiagDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		writeError(w, http.StatusInternalServerError, "listing the diagnostics sockets: "+publicError(err))
		return
	}
	out := struct {
		Processes []processJSON `json:"processes"`
		Profiles  []profileJSON `json:"profiles"`
	}{Processes: []processJSON{}}
	for _, p := range ps {
		out.Processes = append(out.Processes, processJSON{PID: p.PID, CommandLine: p.CommandLine, Socket: p.Socket})
	}
	for _, p := range ipc.Profiles() {
		out.Profiles = append(out.Profiles, profileJSON{Name: p.Name, Description: p.Description})
	}
	writeJSON(w, http.StatusOK, out)
}

// attachRequest is the body of POST /api/dotnet/attach.
type attachRequest struct {
	PID int `json:"pid"`
	// Profiles are names of ipc.Profiles; none, with no Providers,
	// means cpu, as `viewer attach`.
	Profiles []string `json:"profiles"`
	// Providers are more providers in dotnet-trace's --providers syntax,
	// separated by commas or new lines.
	Providers string `json:"providers"`
	// Name is the trace's name in the library; "" names it after the
	// process, as dotnet-trace names its files.
	Name string `json:"name"`
}

// parseAttach reads an attach request, JSON or a form.
func parseAttach(w http.ResponseWriter, r *http.Request) (attachRequest, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxAttachRequest)
	var req attachRequest
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/json" {
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			return req, fmt.Errorf("the request is not the JSON expected: %v", err)
		}
		return req, nil
	}
	if err := r.ParseForm(); err != nil {
		return req, fmt.Errorf("the request is not a form: %v", err)
	}
	pid, err := strconv.Atoi(r.Form.Get("pid"))
	if err != nil {
		return req, fmt.Errorf("pid %q is not a process id", r.Form.Get("pid"))
	}
	req.PID = pid
	for _, v := range r.Form["profiles"] {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				req.Profiles = append(req.Profiles, p)
			}
		}
	}
	req.Providers, req.Name = r.Form.Get("providers"), r.Form.Get("name")
	return req, nil
}

// providers returns the session's providers: the profiles' and the extra
// ones, as ipc.Select combines them.
func (req attachRequest) providers() ([]ipc.Provider, error) {
	var extra []ipc.Provider
	for _, one := range splitProviders(req.Providers) {
		p, err := ipc.ParseProvider(one)
		if err != nil {
			return nil, err
		}
		extra = append(extra, p)
	}
	profiles := req.Profiles
	if len(profiles) == 0 && len(extra) == 0 {
		profiles = []string{"cpu"}
	}
	return ipc.Select(profiles, extra)
}

// splitProviders splits a providers list at commas and line breaks
// outside "quotes" (filter data may quote either), dropping empty parts.
func splitProviders(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	flush := func() {
		if p := strings.TrimSpace(cur.String()); p != "" {
			out = append(out, p)
		}
		cur.Reset()
	}
	for _, c := range s {
		switch {
		case c == '"':
			quoted = !quoted
			cur.WriteRune(c)
		case !quoted && (c == ',' || c == '\n' || c == '\r'):
			flush()
		default:
			cur.WriteRune(c)
		}
	}
	flush()
	return out
}

// handleAttach starts an EventPipe session in a .NET process and records
// it as a live trace.
func (s *Server) handleAttach(w http.ResponseWriter, r *http.Request) {
	if !s.attachAllowed(w) {
		return
	}
	req, err := parseAttach(w, r)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	if req.PID <= 0 {
		writeError(w, http.StatusBadRequest, "pid: a process id is required")
		return
	}
	providers, err := req.providers()
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	if s.live.full(s.cfg.MaxLive) { // before a session starts in the process
		writeError(w, http.StatusTooManyRequests, ErrTooManyLive.Error())
		return
	}
	proc, err := ipc.Find(s.cfg.DiagDir, req.PID)
	if err != nil {
		writeErr(w, http.StatusNotFound, err)
		return
	}
	sess, err := ipc.Start(r.Context(), proc.Socket, ipc.Config{Providers: providers})
	if err != nil {
		// The runtime's own words (ipc.Error names the command and the
		// HRESULT): the user needs them as they are.
		writeError(w, http.StatusBadGateway, fmt.Sprintf("attaching to process %d: %v", proc.PID, err))
		return
	}
	name := req.Name
	if name == "" {
		name = fmt.Sprintf("%s_%d_%s.nettrace", processName(proc.CommandLine), proc.PID, time.Now().Format("20060102_150405"))
	}
	src := &attached{sess: sess, ended: make(chan struct{})}
	src.log = s.log.With("pid", proc.PID, "session", fmt.Sprintf("%#x", sess.ID()))
	e, _, err := s.Ingest(LiveSource{Name: name, R: src, Stop: src.stop})
	if err != nil {
		sess.Close() // the runtime ends a session whose client is gone
		status := http.StatusInsufficientStorage
		if errors.Is(err, ErrTooManyLive) {
			status = http.StatusTooManyRequests
		}
		writeError(w, status, publicError(err))
		return
	}
	src.log.Info("attached", "trace", e.ID, "providers", len(providers))
	writeJSON(w, http.StatusCreated, map[string]any{"id": e.ID, "session": fmt.Sprintf("%#x", sess.ID())})
}

// processName is a command line's executable's base name.
func processName(cmdline string) string {
	exe, _, _ := strings.Cut(cmdline, " ")
	if b := filepath.Base(exe); exe != "" && b != "." && b != "/" {
		return b
	}
	return "dotnet"
}

// attached is an EventPipe session read as a live source.
type attached struct {
	sess *ipc.Session
	log  *slog.Logger

	ended   chan struct{} // closed when the stream has ended
	endOnce sync.Once
	stopped sync.Once
}

// Read reads the session's stream; at its end, whichever way, the
// connection is closed.
func (a *attached) Read(p []byte) (int, error) {
	n, err := a.sess.Read(p)
	if err != nil {
		a.endOnce.Do(func() {
			a.sess.Close()
			close(a.ended)
		})
	}
	return n, err
}

// stop asks the runtime to end the session, in the background: the
// stream then ends after the rundown. When the runtime refuses or does
// not end the stream in time, the connection is closed, which ends the
// session all the same.
func (a *attached) stop() {
	a.stopped.Do(func() {
		go func() {
			select {
			case <-a.ended:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), attachStopTimeout)
			err := a.sess.Stop(ctx)
			cancel()
			if err != nil {
				a.log.Warn("stopping the session failed; closing its connection", "err", err)
				a.sess.Close()
				return
			}
			t := time.NewTimer(attachRundownWait)
			defer t.Stop()
			select {
			case <-a.ended:
			case <-t.C:
				a.log.Warn("the stream did not end after StopTracing; closing its connection", "waited", attachRundownWait)
				a.sess.Close()
			}
		}()
	})
}
