package web

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Bounds on what the clients of one server can make it hold and do at once
// (issue 17; PROTOCOL.md §3 search, §4 websocket). The viewport limits are
// render's (render.MaxWidth, MaxTracks, MaxCells).
const (
	// DefaultMaxSessions is the default Config.MaxSessions: websocket
	// sessions open at once, all traces together.
	DefaultMaxSessions = 64
	// DefaultMaxTraceSessions is the default Config.MaxTraceSessions:
	// websocket sessions open at once on one trace.
	DefaultMaxTraceSessions = 16
	// DefaultQueryTimeout is the default Config.QueryTimeout: how long one
	// search or viewport query may run (waiting for its turn included)
	// before it is cut off, so that every answer comes within 2 s.
	DefaultQueryTimeout = 1500 * time.Millisecond

	// keepReplyBytes is the largest reply buffer a session keeps between
	// replies; a larger reply's buffers are let go once it is sent, so
	// that idle sessions do not each hold their largest reply.
	keepReplyBytes = 1 << 20
)

// Websocket close codes the server sends besides the standard ones (the
// reason text says the same for people; the page shows it).
const (
	// CloseTryAgainLater (1013, standard): too many sessions are open.
	CloseTryAgainLater = 1013
	// CloseTraceDeleted: the trace the session shows was deleted.
	CloseTraceDeleted = 4404
)

// resources counts the websocket sessions per trace and bounds the
// searches running at once.
type resources struct {
	maxSessions, maxTrace int
	timeout               time.Duration
	// searchSlots bounds the searches running at once to half the
	// processors (at least one), so that searches, which can scan a whole
	// trace, leave the other half to the sessions' viewport queries.
	searchSlots chan struct{}

	mu      sync.Mutex
	total   int
	byTrace map[uuid.UUID]map[*session]struct{}
}

func newResources(cfg Config) *resources {
	r := &resources{
		maxSessions: cfg.MaxSessions,
		maxTrace:    cfg.MaxTraceSessions,
		timeout:     cfg.QueryTimeout,
		searchSlots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)),
		byTrace:     map[uuid.UUID]map[*session]struct{}{},
	}
	if r.maxSessions <= 0 {
		r.maxSessions = DefaultMaxSessions
	}
	if r.maxTrace <= 0 {
		r.maxTrace = DefaultMaxTraceSessions
	}
	if r.timeout <= 0 {
		r.timeout = DefaultQueryTimeout
	}
	return r
}

// join registers a session, or says why it may not open.
func (r *resources) join(ss *session) (ok bool, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.byTrace[ss.e.ID]
	switch {
	case r.total >= r.maxSessions:
		return false, fmt.Sprintf("the server has %d viewer sessions open, its limit; close another tab and reload", r.maxSessions)
	case len(set) >= r.maxTrace:
		return false, fmt.Sprintf("this trace is open in %d tabs, the limit; close one and reload", r.maxTrace)
	}
	if set == nil {
		set = map[*session]struct{}{}
		r.byTrace[ss.e.ID] = set
	}
	set[ss] = struct{}{}
	r.total++
	return true, ""
}

// leave forgets a session that join registered.
func (r *resources) leave(ss *session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.byTrace[ss.e.ID]
	if _, ok := set[ss]; !ok {
		return
	}
	delete(set, ss)
	if len(set) == 0 {
		delete(r.byTrace, ss.e.ID)
	}
	r.total--
}

// closeTrace closes every session of a trace with a code and reason.
func (r *resources) closeTrace(id uuid.UUID, code int, reason string) {
	r.mu.Lock()
	var list []*session
	for ss := range r.byTrace[id] {
		list = append(list, ss)
	}
	r.mu.Unlock()
	for _, ss := range list {
		ss.closeWith(code, reason)
	}
}

// sessions returns the number of open sessions.
func (r *resources) sessions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}
