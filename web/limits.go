package web

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"viewer/render"
)

// Bounds on what the clients of one server can make it hold and do at once
// (issue 17; PROTOCOL.md §3 search, §4 websocket). The viewport limits are
// render's (render.MaxWidth, MaxTracks, MaxCells).
const (
	// DefaultMaxSessions is the default Config.MaxSessions: websocket
	// sessions open at once, all traces together.
	DefaultMaxSessions = 128
	// DefaultMaxTraceSessions is the default Config.MaxTraceSessions:
	// websocket sessions open at once on one trace.
	DefaultMaxTraceSessions = 64
	// DefaultQueryTimeout is the default Config.QueryTimeout: how long one
	// search or viewport query may run (waiting for its turn included)
	// before it is cut off, so that every answer comes within 2 s.
	DefaultQueryTimeout = 1500 * time.Millisecond

	// keepReplyBytes is the largest reply buffer a query slot keeps while
	// no query needs it; larger ones are let go after shrinkAfter.
	keepReplyBytes = 1 << 20
	shrinkAfter    = 2 * time.Second

	// bigCells is the size (tracks × (width+1)) from which a viewport
	// query is "big": big queries run one at a time, so that the reply
	// buffers of at most one of them (up to about 100 MB) exist at once.
	bigCells = 1 << 18
)

// DefaultMemoryBudget is the default Config.MemoryBudget: a quarter of
// the machine's physical memory (2 GiB when it cannot be read).
func DefaultMemoryBudget() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err == nil {
		for line := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err == nil && kb > 0 {
					return kb << 10 / 4
				}
			}
		}
	}
	return 2 << 30
}

// replyBuffers are the buffers a viewport query and its reply frame are
// built in. They belong to a query slot, not to a session: however many
// sessions are open, at most one set per slot exists, and sets grown by a
// large reply are let go when the slots are idle.
type replyBuffers struct {
	slice render.Slice
	frame []byte
}

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
	// slots bounds the viewport queries running at once to the
	// processors: more would only share them, and every waiting session
	// keeps collecting newer requests meanwhile. Each slot carries its
	// reply buffers.
	slots chan *replyBuffers
	// shrink lets go of the slots' large buffers once no query has used
	// them for shrinkAfter.
	// big holds the buffers of the one big viewport query that may run
	// (the slots' own buffers stay small).
	big         chan *replyBuffers
	shrink      *time.Timer
	shrinkAfter time.Duration
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
		slots:       make(chan *replyBuffers, runtime.GOMAXPROCS(0)),
		shrinkAfter: shrinkAfter,
		big:         make(chan *replyBuffers, 1),
	}
	r.big <- &replyBuffers{}
	for range cap(r.slots) {
		r.slots <- &replyBuffers{}
	}
	r.shrink = time.AfterFunc(time.Hour, r.shrinkIdle)
	r.shrink.Stop()
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

// putSlot gives back a query slot taken from slots; a slot whose buffers
// grew past keepReplyBytes has them let go once the slots are idle.
func (r *resources) putSlot(b *replyBuffers) { r.put(r.slots, b) }

// putBig gives back the big query's buffers taken from big.
func (r *resources) putBig(b *replyBuffers) { r.put(r.big, b) }

func (r *resources) put(c chan *replyBuffers, b *replyBuffers) {
	if cap(b.frame) > keepReplyBytes {
		r.shrink.Reset(r.shrinkAfter)
	}
	c <- b
}

// shrinkIdle lets go of the large buffers of the slots not in use and
// returns the memory to the system: it runs after a burst of large
// replies, when they have stopped.
func (r *resources) shrinkIdle() {
	freed := 0
	for _, c := range []chan *replyBuffers{r.slots, r.big} {
		var held []*replyBuffers
		for range cap(c) {
			select {
			case b := <-c:
				if cap(b.frame) > keepReplyBytes {
					freed += cap(b.frame)
					*b = replyBuffers{}
				}
				held = append(held, b)
			default:
			}
		}
		for _, b := range held {
			c <- b
		}
	}
	if freed > 0 {
		debug.FreeOSMemory()
	}
}
