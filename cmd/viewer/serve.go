package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"viewer/trace/wrap"
	"viewer/ui"
	"viewer/web"
)

// DefaultPort is the port the viewer listens on unless told otherwise. A
// fixed port keeps shared URLs valid across restarts.
const DefaultPort = 8484

// runServe starts the web viewer on the loopback interface and serves
// until ctx ends. FILE arguments are added to the library and their
// viewer URLs printed; "-" records standard input as a live trace, and
// --follow a file another program is still writing.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	sf := addServeFlags(fs)
	sf.together = fs.Bool("together", false, "also print the URL that shows the FILE arguments together on one timeline, aligned on their clocks")
	var follows []string
	fs.Func("follow", "show `FILE` (a .nettrace or pipe-mode perf.data another program is still writing) as a live trace; repeatable", func(v string) error {
		follows = append(follows, v)
		return nil
	})
	inPlace := fs.Bool("in-place", false, "open FILE arguments where they are instead of copying them into the library (checked for changes whenever they are opened)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return sf.serve(ctx, stdout, stderr, func(ctx context.Context, srv *web.Server) ([]web.Entry, error) {
		var opened []web.Entry
		for _, name := range fs.Args() {
			var e web.Entry
			var err error
			switch {
			case name == "-":
				e, _, err = srv.Ingest(web.LiveSource{Name: "stdin", R: os.Stdin})
			case *inPlace:
				e, err = srv.AddInPlace(name)
			default:
				e, err = addFile(srv, name)
			}
			if err != nil {
				return nil, err
			}
			opened = append(opened, e)
		}
		for _, name := range follows {
			e, err := followFile(ctx, srv, name)
			if err != nil {
				return nil, err
			}
			opened = append(opened, e)
		}
		return opened, nil
	})
}

// serveFlags are the flags of the commands that start the viewer.
type serveFlags struct {
	port                    *int
	listen, dataDir, allow  *string
	noAuth, allowAttach     *bool
	maxUploads              *int
	uploadIdle              *time.Duration
	minFree, memBudget, max *int64
	together                *bool // serve only: print the combined view's URL
	fs                      *flag.FlagSet
}

func addServeFlags(fs *flag.FlagSet) *serveFlags {
	sf := &serveFlags{
		fs:         fs,
		port:       fs.Int("port", DefaultPort, "TCP port on 127.0.0.1; 0 picks a free port (environment: VIEWER_PORT)"),
		listen:     fs.String("listen", "", "listen on `host:port` instead of 127.0.0.1; requests must then carry the access token printed in the URL (environment VIEWER_TOKEN sets it)"),
		noAuth:     fs.Bool("no-auth", false, "with --listen, serve without an access token: anyone who can reach the port sees and deletes your traces"),
		maxUploads: fs.Int("max-uploads", web.DefaultMaxUploads, "uploads received at once; more are refused with 429"),
		uploadIdle: fs.Duration("upload-idle", web.DefaultUploadIdle, "cut off an upload that delivers less than 16 KiB in this `duration`"),
		minFree:    fs.Int64("min-free", web.DefaultMinFreeDisk, "free `bytes` the data directory must keep for an upload or index build to start (-1: no check)"),
		memBudget:  fs.Int64("memory-budget", 0, "`bytes` of trace indexes kept in memory while no one views them; the least recently used beyond it are closed and rebuilt when opened again (0: a quarter of physical memory, -1: no bound)"),
		dataDir:    fs.String("data", "", "directory of the trace library (default: the user's data directory)"),
		max:        fs.Int64("max-upload", web.DefaultMaxUpload, "largest accepted upload (or live trace) in `bytes`"),
		allow:      fs.String("allow-host", "", "comma-separated extra `names` accepted in the Host header (with --listen)"),
	}
	sf.allowAttach = fs.Bool("allow-attach", false, "with --listen beyond loopback, let the page list and trace the .NET processes on this machine (always allowed on loopback)")
	return sf
}

// serve starts the viewer with the parsed flags, lets open add the
// traces to show (their URLs are printed), and serves until ctx ends.
func (sf *serveFlags) serve(ctx context.Context, stdout, stderr io.Writer, open func(ctx context.Context, srv *web.Server) ([]web.Entry, error)) error {
	port, listen, dataDir, noAuth := sf.port, sf.listen, sf.dataDir, sf.noAuth
	portSet := false
	sf.fs.Visit(func(f *flag.Flag) { portSet = portSet || f.Name == "port" })
	if v := os.Getenv("VIEWER_PORT"); v != "" && !portSet {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("VIEWER_PORT=%q is not a port number", v)
		}
		*port = n
	}
	if *port < 0 || *port > 65535 {
		return fmt.Errorf("--port %d is not a port number", *port)
	}
	if *dataDir == "" {
		d, err := defaultDataDir()
		if err != nil {
			return err
		}
		*dataDir = d
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(*port))
	var hosts []string
	if *sf.allow != "" {
		hosts = strings.Split(*sf.allow, ",")
	}
	if *listen != "" {
		addr = *listen
		h, _, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("--listen %q: %w", addr, err)
		}
		if ip := net.ParseIP(h); h != "" && (ip == nil || !ip.IsUnspecified()) {
			hosts = append(hosts, h)
		} else if len(hosts) == 0 {
			fmt.Fprintln(stderr, "viewer: listening on every interface; name the host names browsers will use with --allow-host, or only localhost works")
		}
	}

	token := ""
	if *listen != "" && !*noAuth {
		token = os.Getenv("VIEWER_TOKEN")
		if token == "" {
			token = web.NewToken()
		}
	} else if *listen == "" && *noAuth {
		fmt.Fprintln(stderr, "viewer: --no-auth has no effect without --listen: the loopback server asks for no token")
	}

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := web.New(web.Config{
		DataDir:    *dataDir,
		Formats:    formats(),
		Symbols:    symbolSource,
		Derive:     deriver,
		Static:     ui.Static(),
		MaxUpload:  *sf.max,
		AllowHosts: hosts,
		Demo:       demoTrace,
		Logger:     log,

		MaxUploads:   *sf.maxUploads,
		MemoryBudget: *sf.memBudget,
		UploadIdle:   *sf.uploadIdle,
		MinFreeDisk:  *sf.minFree,
		Token:        token,
		AllowAttach:  *sf.allowAttach || loopbackOnly(addr),
	})
	if err != nil {
		return err
	}
	defer srv.Close()

	opened, err := open(ctx, srv)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	hs.RegisterOnShutdown(srv.CloseSessions)
	base := "http://" + ln.Addr().String()
	// With a token the printed URLs carry it once; the page sets a cookie
	// and drops it from the address bar.
	q := ""
	if token != "" {
		q = "?token=" + token
	}
	fmt.Fprintf(stdout, "viewer: serving the library in %s at %s/%s\n", *dataDir, base, q)
	for _, e := range opened {
		fmt.Fprintf(stdout, "viewer: %s: %s/t/%s%s\n", e.Name, base, e.ID, q)
	}
	if sf.together != nil && *sf.together && len(opened) > 0 {
		var ids []string // a file given twice is stored, and shown, once
		for _, e := range opened {
			if !slices.Contains(ids, e.ID.String()) {
				ids = append(ids, e.ID.String())
			}
		}
		tq := ""
		if token != "" {
			tq = "&token=" + token
		}
		fmt.Fprintf(stdout, "viewer: together: %s/v?t=%s%s\n", base, strings.Join(ids, ","), tq)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(stdout, "viewer: shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// loopbackOnly reports whether addr (host:port) listens on the loopback
// interface only, where the page may attach to .NET processes without
// --allow-attach.
func loopbackOnly(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// addFile adds a FILE argument, which may be ARCHIVE:MEMBER, to the
// library.
func addFile(srv *web.Server, name string) (web.Entry, error) {
	path, member := wrap.SplitMember(name)
	f, err := os.Open(path)
	if err != nil {
		return web.Entry{}, err
	}
	defer f.Close()
	e, err := srv.AddMember(filepath.Base(path), f, member)
	if err != nil {
		return web.Entry{}, fmt.Errorf("%s: %w", name, err)
	}
	return e, nil
}

// defaultDataDir returns $XDG_DATA_HOME/viewer, else ~/.local/share/viewer,
// else the user's configuration directory.
func defaultDataDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "viewer"), nil
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "viewer"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no data directory: %w (use --data)", err)
	}
	return filepath.Join(d, "viewer"), nil
}
