// Package web is the viewer's HTTP server: the trace library on disk,
// uploads, the HTML pages, the JSON API and one websocket session per
// viewer tab. PROTOCOL.md beside this file specifies what the browser and
// the server exchange.
//
// # Design
//
// A [Server] is a struct of dependencies (the [Library], the trace
// formats, the static files); its handlers are methods, and only
// routes.go knows the router. A trace is indexed once, in the background,
// into an immutable render.Index shared read-only by every session;
// sessions get the build's progress pushed while it runs.
//
// Each websocket session has one reader and one writer goroutine. The
// reader parses requests; viewport requests go to a one-slot mailbox that
// keeps only the newest, so a query that is running finishes and is sent
// while older pending requests are dropped ("latest wins": cancelling the
// running query on every new request starves the view). The writer runs
// the queries and owns every write, pings included.
//
// # Security
//
// The server is meant for the loopback interface. Every request's Host
// must be in an allowlist (against DNS rebinding), websocket upgrades must
// come from the page's own origin, state-changing requests are refused
// cross-origin, path ids must be canonical UUIDs, uploads are bounded, and
// pages carry a Content-Security-Policy. Strings from traces reach the
// browser escaped by templ or inside JSON.
package web

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/span"
)

// DefaultMaxUpload is the default upload limit.
const DefaultMaxUpload = 4 << 30

// DefaultResidentIndexes is the default Config.ResidentIndexes.
const DefaultResidentIndexes = 4

// Config is what a [Server] is made of.
type Config struct {
	// DataDir holds the library.
	DataDir string
	// Formats are the trace formats uploads are sniffed against, in order.
	Formats []trace.Format
	// Symbols returns, for the trace r reads (the format's own reader),
	// what names its stack frames while it is indexed (see
	// render.SymbolSource); nil, or a nil result, leaves stacks as
	// addresses.
	Symbols func(r trace.Reader) render.SymbolSource
	// Derive returns, for the trace r reads (the format's own reader),
	// what derives its slice tracks while it is indexed (see
	// render.Options.Derive); nil, or a nil result, derives none.
	Derive func(r trace.Reader) span.Deriver
	// Static holds the browser's files (ui.Static()).
	Static fs.FS
	// MaxUpload bounds an upload in bytes; 0 means DefaultMaxUpload.
	MaxUpload int64
	// AllowHosts are host names accepted in the Host header besides
	// localhost and the loopback addresses.
	AllowHosts []string
	// Demo returns a trace the library holds on first start: its file
	// name and content. Nil, or a nil result, means no demo.
	Demo func() (name string, data []byte)
	// MaxLive bounds the live traces recorded at once (live sources,
	// attached processes); more are refused. 0 means DefaultMaxLive.
	MaxLive int
	// LiveDemoTime is how long the live demo takes to write the demo
	// trace; 0 means DefaultLiveDemoTime.
	LiveDemoTime time.Duration
	// ResidentIndexes is how many indexes of traces no one is viewing
	// stay in memory; 0 means DefaultResidentIndexes.
	ResidentIndexes int
	// Logger receives the server's log; nil means slog.Default().
	Logger *slog.Logger
	// MaxSessions bounds the websocket sessions open at once, and
	// MaxTraceSessions those on one trace; 0 means DefaultMaxSessions and
	// DefaultMaxTraceSessions (limits.go).
	MaxSessions, MaxTraceSessions int
	// QueryTimeout bounds one search or viewport query; 0 means
	// DefaultQueryTimeout.
	QueryTimeout time.Duration
	// MemoryBudget bounds, in bytes, the indexes held in memory while no
	// one views them: beyond it the least recently used are closed (and
	// built again when next opened), as beyond ResidentIndexes. Indexes
	// in use are never closed, and a trace is never refused for its
	// index's size. 0 means DefaultMemoryBudget(), negative no bound.
	MemoryBudget int64
	// MaxUploads bounds the uploads received at once (each stages a
	// file); more get 429. 0 means DefaultMaxUploads.
	MaxUploads int
	// UploadIdle is how long an upload body may go without delivering
	// 16 KiB before the server cuts it off; 0 means DefaultUploadIdle.
	UploadIdle time.Duration
	// MinFreeDisk is the free space in DataDir that uploads and index
	// builds require before they start; 0 means DefaultMinFreeDisk,
	// negative none.
	MinFreeDisk int64
	// Token, when set, is the secret every request must present (see
	// PROTOCOL.md, "Authentication"): as ?token=, which sets a cookie, as
	// that cookie, or as "Authorization: Bearer". Serve beyond the
	// loopback interface only with one.
	Token string
	// AllowAttach lets the page list the machine's .NET processes and
	// trace them (attach.go); `viewer serve` sets it when it listens on
	// the loopback interface only, or with --allow-attach.
	AllowAttach bool
	// DiagDir is where .NET processes put their diagnostics sockets; ""
	// means ipc.Dir().
	DiagDir string
}

// Server serves the viewer. Create it with [New], serve [Server.Handler],
// and call [Server.Close] after the HTTP server has shut down.
type Server struct {
	cfg    Config
	lib    *Library
	ix     *indexer
	log    *slog.Logger
	static *staticFiles
	hosts  map[string]bool

	ctx      context.Context // ends when the server closes
	cancel   context.CancelFunc
	shutOnce sync.Once
	shutdown chan struct{} // closed to end every websocket session
	sessions sync.WaitGroup
	// res bounds the sessions and the searches (limits.go).
	res *resources
	// uploads holds a token per upload being received (Config.MaxUploads).
	uploads chan struct{}
	// filters holds the timeline filters' evaluated masks (filter.go).
	filters *filterCache
	// live holds the live traces being recorded (live.go).
	live liveSet
	// accepted, when set (by tests), is called by a session's reader with
	// the seq of each request it has queued.
	accepted func(seq uint32)
}

// demoMarker is created in the data directory once the demo trace has been
// added, so that deleting the demo keeps it deleted.
const demoMarker = "demo-added"

// New opens the library in cfg.DataDir and returns a server for it. The
// demo trace is added on first start; traces whose index cache is missing
// are indexed in the background.
func New(cfg Config) (*Server, error) {
	if cfg.MaxUpload <= 0 {
		cfg.MaxUpload = DefaultMaxUpload
	}
	if cfg.ResidentIndexes <= 0 {
		cfg.ResidentIndexes = DefaultResidentIndexes
	}
	if cfg.MaxLive <= 0 {
		cfg.MaxLive = DefaultMaxLive
	}
	if cfg.MaxUploads <= 0 {
		cfg.MaxUploads = DefaultMaxUploads
	}
	switch {
	case cfg.MemoryBudget == 0:
		cfg.MemoryBudget = DefaultMemoryBudget()
	case cfg.MemoryBudget < 0:
		cfg.MemoryBudget = math.MaxInt64
	}
	if cfg.UploadIdle <= 0 {
		cfg.UploadIdle = DefaultUploadIdle
	}
	switch {
	case cfg.MinFreeDisk == 0:
		cfg.MinFreeDisk = DefaultMinFreeDisk
	case cfg.MinFreeDisk < 0:
		cfg.MinFreeDisk = 0
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	lib, err := OpenLibrary(cfg.DataDir, log)
	if err != nil {
		return nil, err
	}
	lib.minFree = cfg.MinFreeDisk
	static, err := newStaticFiles(cfg.Static)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:      cfg,
		lib:      lib,
		log:      log,
		static:   static,
		hosts:    map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true},
		ctx:      ctx,
		cancel:   cancel,
		shutdown: make(chan struct{}),
		res:      newResources(cfg),
		uploads:  make(chan struct{}, cfg.MaxUploads),
		filters:  newFilterCache(filterCacheBytes(cfg.MemoryBudget)),
		live:     liveSet{traces: map[uuid.UUID]*liveTrace{}},
	}
	for _, h := range cfg.AllowHosts {
		s.hosts[strings.ToLower(strings.Trim(h, "[]"))] = true
	}
	s.ix = &indexer{
		lib:      lib,
		stats:    newStatsCache(lib),
		formats:  cfg.Formats,
		symbols:  cfg.Symbols,
		derive:   cfg.Derive,
		spill:    filepath.Join(cfg.DataDir, tmpDir),
		resident: cfg.ResidentIndexes,
		budget:   cfg.MemoryBudget - filterCacheBytes(cfg.MemoryBudget), // the filter cache keeps the rest
		every:    progressEvery,
		minFree:  cfg.MinFreeDisk,
		live:     &s.live,
		log:      log,
		sem:      make(chan struct{}, 1),
		jobs:     map[uuid.UUID]*job{},
		ctx:      ctx,
	}
	if err := s.addDemo(); err != nil {
		log.Warn("could not add the demo trace", "err", err)
	}
	for _, e := range lib.List() {
		if _, ok := s.ix.stats.get(e.ID); !ok {
			s.ix.get(e)
		}
	}
	return s, nil
}

func (s *Server) addDemo() error {
	marker := filepath.Join(s.cfg.DataDir, demoMarker)
	if _, err := os.Stat(marker); err == nil || s.cfg.Demo == nil {
		return nil
	}
	name, data := s.cfg.Demo()
	if data == nil {
		return nil
	}
	if _, err := s.AddFile(name, bytes.NewReader(data)); err != nil {
		return err
	}
	return writeFileSync(marker, nil)
}

// AddFile stores a trace read from r under name (as an upload would) and
// starts indexing it. It is how `viewer FILE` opens files directly. r may
// be wrapped like an upload.
func (s *Server) AddFile(name string, r io.Reader) (Entry, error) {
	return s.AddMember(name, r, "")
}

// AddMember is AddFile for the entry member of the zip file r (`viewer
// FILE.zip:MEMBER`); "" picks the zip's one trace.
func (s *Server) AddMember(name string, r io.Reader, member string) (Entry, error) {
	e, _, err := s.lib.Add(r, name, s.checker(s.ctx, member, 0))
	if err != nil {
		return Entry{}, err
	}
	s.ix.get(e)
	return e, nil
}

// Library returns the server's trace library.
func (s *Server) Library() *Library { return s.lib }

// CloseSessions tells every websocket session to close with "going away".
// Register it with http.Server.RegisterOnShutdown: Shutdown does not wait
// for hijacked connections.
func (s *Server) CloseSessions() {
	s.shutOnce.Do(func() { close(s.shutdown) })
}

// Close ends the sessions, waits for them, stops index builds and closes
// the trace files.
func (s *Server) Close() error {
	s.CloseSessions()
	s.sessions.Wait()
	s.cancel() // stops the live sources: their recordings are stored
	s.live.wait(liveStopWait)
	s.ix.closeAll()
	return nil
}

// hostAllowed reports whether the Host header names this server.
func (s *Server) hostAllowed(hostport string) bool {
	host, ok := splitHost(hostport)
	if !ok {
		return false
	}
	if s.hosts[host] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// splitHost returns the lower-case host name of a Host header, and
// whether its port, if any, is a port number.
func splitHost(hostport string) (string, bool) {
	host := hostport
	if h, port, err := net.SplitHostPort(hostport); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 || strconv.Itoa(n) != port {
			return "", false
		}
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]")), true
}

// cspHost returns the Host header rebuilt from its vetted parts, for the
// Content-Security-Policy, or "" when it has a part that is not a host
// name, an IP address or a port number.
func cspHost(hostport string) string {
	host, ok := splitHost(hostport)
	if !ok || host == "" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
		if ip.To4() == nil {
			host = "[" + host + "]"
		}
	} else {
		for _, r := range host {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
				return ""
			}
		}
	}
	if _, port, err := net.SplitHostPort(hostport); err == nil {
		host += ":" + port
	}
	return host
}
