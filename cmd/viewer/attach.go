package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/nettrace/ipc"
	"viewer/trace/wrap"
	"viewer/web"
)

// How long attach waits, once it has asked the runtime to stop, for the
// reply and then for the end of the stream (the rundown). Past that it
// closes the connection, which ends the session in the runtime too.
const (
	stopTimeout    = 10 * time.Second
	rundownTimeout = 60 * time.Second
)

// runAttach traces a running .NET process through its diagnostics socket
// into a .nettrace file or the library, until --duration, Ctrl-C or the
// process ends the session.
func runAttach(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("attach", stderr)
	duration := fs.Duration("duration", 0, "stop after this `duration` (default: at Ctrl-C or when the process exits)")
	output := fs.String("output", "", "write the trace to `FILE` (default: store it in the library and print its URL)")
	var profileNames []string
	for _, p := range ipc.Profiles() {
		profileNames = append(profileNames, p.Name)
	}
	profiles := fs.String("profile", "", "comma-separated `profiles`: "+strings.Join(profileNames, ", ")+" (default cpu, unless --providers is given)")
	var providers []ipc.Provider
	fs.Func("providers", "more providers, comma-separated, each `Name[:0xKeywords[:level[:key=value;...]]]` (as dotnet-trace's --providers)", func(s string) error {
		for _, one := range splitOutsideQuotes(s, ',') {
			p, err := ipc.ParseProvider(one)
			if err != nil {
				return err
			}
			providers = append(providers, p)
		}
		return nil
	})
	bufferMB := fs.Uint("buffer", ipc.DefaultBufferMB, "the runtime's buffer for the session in `MB`")
	socket := fs.String("socket", "", "the diagnostics socket's `path` (instead of finding the PID's)")
	dir := fs.String("dir", "", "`directory` of the diagnostics sockets (default $TMPDIR, else /tmp)")
	dataDir := fs.String("data", "", "the library's `directory`, when no viewer is serving on --port (default: as viewer serve)")
	port := fs.Int("port", DefaultPort, "port of the viewer whose URL is printed; a viewer serving there stores the trace")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pid := 0
	switch {
	case fs.NArg() == 1:
		n, err := strconv.Atoi(fs.Arg(0))
		if err != nil || n <= 0 {
			return fmt.Errorf("attach: %q is not a process id", fs.Arg(0))
		}
		pid = n
	case fs.NArg() == 0 && *socket != "":
	default:
		fs.Usage()
		return errors.New("attach takes one PID (or --socket PATH)")
	}
	if *profiles == "" && len(providers) == 0 {
		*profiles = "cpu"
	}
	var names []string
	if *profiles != "" {
		names = strings.Split(*profiles, ",")
	}
	selected, err := ipc.Select(names, providers)
	if err != nil {
		return err
	}
	if *bufferMB == 0 || *bufferMB > 1<<20 {
		return fmt.Errorf("--buffer %d: want 1 to %d MB", *bufferMB, 1<<20)
	}
	proc := ipc.Process{PID: pid, Socket: *socket}
	if *socket == "" {
		if proc, err = ipc.Find(*dir, pid); err != nil {
			return err
		}
	}

	// The stream goes to a temporary file beside the output (so that the
	// rename is atomic) or in $TMPDIR for the library.
	tmpDir := os.TempDir()
	if *output != "" {
		tmpDir = filepath.Dir(*output)
	}
	f, err := os.CreateTemp(tmpDir, ".viewer-attach-*.nettrace")
	if err != nil {
		return err
	}
	keep := false // the trace could not be stored: leave it where it is
	defer func() {
		f.Close()
		if !keep {
			os.Remove(f.Name()) // after a rename, there is nothing left to remove
		}
	}()

	sess, err := ipc.Start(ctx, proc.Socket, ipc.Config{Providers: selected, BufferMB: uint32(*bufferMB)})
	if err != nil {
		return fmt.Errorf("attach to %s: %w", describe(proc), err)
	}
	defer sess.Close()
	fmt.Fprintf(stderr, "viewer: tracing %s, session %#x (%s)\n", describe(proc), sess.ID(), providerList(selected))
	res := record(ctx, sess, f, *duration, stderr)

	if err := f.Sync(); err != nil && res.err == nil {
		res.err = err
	}
	if err := f.Close(); err != nil && res.err == nil {
		res.err = err
	}
	st, readErr := checkTrace(ctx, f.Name(), res.n)
	note := res.describe(st, readErr)
	if res.n == 0 {
		return errors.New(note)
	}

	if *output != "" {
		if err := os.Rename(f.Name(), *output); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "viewer: wrote %s: %d bytes, %d events\n", *output, res.n, st.Events)
		if note != "" {
			return fmt.Errorf("%s; the %d bytes received are in %s", note, res.n, *output)
		}
		return nil
	}
	name := fmt.Sprintf("%s_%d_%s.nettrace", processName(proc), proc.PID, time.Now().Format("20060102_150405"))
	id, where, err := store(ctx, f.Name(), name, *dataDir, *port, stderr)
	if err != nil {
		keep = true
		if note != "" {
			err = fmt.Errorf("%w; besides, %s", err, note)
		}
		return fmt.Errorf("storing the trace: %w; it is in %s", err, f.Name())
	}
	fmt.Fprintf(stderr, "viewer: stored %s (%d bytes, %d events) in %s\n", name, res.n, st.Events, where)
	fmt.Fprintf(stdout, "%s http://127.0.0.1:%d/t/%s\n", id, *port, id)
	if note != "" {
		return errors.New(note)
	}
	return nil
}

// recorded is how a session's stream ended.
type recorded struct {
	n        int64  // bytes written
	stopped  string // why attach stopped the session, "" if the stream ended first
	err      error  // a read or write error that ended the stream
	writeErr bool   // err is the file's
}

// record copies the session's stream into w until it ends, stopping the
// session after d (when positive) or when ctx ends; it never returns with
// the session still running.
func record(ctx context.Context, sess *ipc.Session, w io.Writer, d time.Duration, stderr io.Writer) recorded {
	cw := &countingWriter{w: w}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(cw, sess)
		if cw.err != nil {
			err = cw.err
		}
		done <- err
	}()
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	var res recorded
	var err error
	select {
	case err = <-done:
		if err == nil {
			fmt.Fprintln(stderr, "viewer: the runtime ended the session (has the process exited?)")
		}
	case <-timer:
		res.stopped = "after " + d.String()
	case <-ctx.Done():
		res.stopped = "interrupted"
	}
	if res.stopped != "" {
		fmt.Fprintf(stderr, "viewer: stopping the session (%s); waiting for the rundown\n", res.stopped)
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		serr := sess.Stop(stopCtx)
		cancel()
		if serr != nil {
			fmt.Fprintf(stderr, "viewer: %v; closing the connection, which ends the session\n", serr)
			sess.Close()
		}
		select {
		case err = <-done:
		case <-time.After(rundownTimeout):
			fmt.Fprintf(stderr, "viewer: no end of the stream %v after StopTracing; closing the connection\n", rundownTimeout)
			sess.Close()
			err = <-done
		}
	}
	res.n, res.err, res.writeErr = cw.n, err, cw.err != nil
	return res
}

// describe says what went wrong with the recording, from how the stream
// ended and what the NetTrace reader made of the file; "" when all went
// well.
func (r recorded) describe(st export.Stats, readErr error) string {
	switch {
	case r.writeErr:
		return "writing the trace failed: " + r.err.Error()
	case r.n == 0 && r.err != nil:
		return "the runtime sent no trace: " + r.err.Error()
	case r.n == 0:
		return "the runtime sent no trace: it closed the stream at once"
	case readErr != nil:
		return "the trace received does not read: " + readErr.Error()
	case st.Truncated:
		how := "the runtime closed the stream"
		if r.err != nil {
			how = "the stream broke (" + r.err.Error() + ")"
		}
		return fmt.Sprintf("%s before the end of the trace, which is cut short: %s", how, st.Error)
	}
	return ""
}

// checkTrace reads the trace received once, as `viewer stats` does, to
// count its events and find out whether it is complete.
func checkTrace(ctx context.Context, name string, n int64) (export.Stats, error) {
	if n == 0 {
		return export.Stats{}, nil
	}
	ctx = context.WithoutCancel(ctx) // an interrupted recording is still checked
	f, err := wrap.OpenFile(ctx, name, formats(), wrap.Limits{})
	if err != nil {
		return export.Stats{}, err
	}
	defer f.Close()
	return countTrace(ctx, f)
}

type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		c.err = err
	}
	return n, err
}

// store adds the trace file to the library: through the viewer serving on
// port when there is one (it indexes it at once, and its library is not
// opened twice), else in dataDir. It returns the trace's id and where it
// went.
func store(ctx context.Context, name, traceName, dataDir string, port int, stderr io.Writer) (string, string, error) {
	id, err := upload(ctx, name, traceName, port)
	if err == nil {
		return id, fmt.Sprintf("the viewer on port %d", port), nil
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return "", "", fmt.Errorf("the viewer on port %d: %w", port, err)
	}
	if dataDir == "" {
		if dataDir, err = defaultDataDir(); err != nil {
			return "", "", err
		}
	}
	lib, err := web.OpenLibrary(dataDir, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return "", "", err
	}
	f, err := os.Open(name)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	e, _, err := lib.Add(f, traceName, func(u *web.Upload) (web.Checked, error) {
		format, err := trace.Sniff(u.File, u.Size, formats())
		if err != nil {
			return web.Checked{}, err
		}
		return web.Checked{Format: format.Name()}, nil
	})
	if err != nil {
		return "", "", err
	}
	return e.ID.String(), "the library in " + dataDir, nil
}

// upload posts the trace file to the viewer's upload API on port.
func upload(ctx context.Context, name, traceName string, port int) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	u := fmt.Sprintf("http://127.0.0.1:%d/api/traces/?name=%s", port, url.QueryEscape(traceName))
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, u, f)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		ID    string `json:"id"`
		Error string `json:"error"`
	}
	json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated || body.ID == "" {
		return "", fmt.Errorf("upload: %s %s", resp.Status, body.Error)
	}
	return body.ID, nil
}

// describe names a process for messages.
func describe(p ipc.Process) string {
	if p.PID == 0 {
		return p.Socket
	}
	s := "process " + strconv.Itoa(p.PID)
	if p.CommandLine != "" {
		s += " (" + truncate(p.CommandLine, 80) + ")"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// processName is the executable's base name, for the stored trace's
// name, as dotnet-trace names its files.
func processName(p ipc.Process) string {
	exe, _, _ := strings.Cut(p.CommandLine, " ")
	if b := filepath.Base(exe); exe != "" && b != "." && b != "/" {
		return b
	}
	return "dotnet"
}

func providerList(ps []ipc.Provider) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, ", ")
}

// splitOutsideQuotes splits s at sep where sep is not inside "quotes".
func splitOutsideQuotes(s string, sep rune) []string {
	var out []string
	start, in := 0, false
	for i, c := range s {
		switch {
		case c == '"':
			in = !in
		case c == sep && !in:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
