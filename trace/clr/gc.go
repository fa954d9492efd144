package clr

import (
	"time"

	"viewer/trace"
)

// Runtime is the provider of the runtime's own events (GC, exceptions).
const Runtime = "Microsoft-Windows-DotNETRuntime"

// GC is one garbage collection, as PerfView's GCStats lists it: one per
// GC/Start event.
type GC struct {
	PID        int64         // the process (its track's pid; -1 when unknown)
	Track      trace.TrackID // the thread that started it
	Number     int64         // GC/Start Count: the runtime's GC number
	Generation int64         // GC/Start Depth: the generation collected
	Reason     string        // GC/Start Reason, by its name in the manifest (AllocSmall, Induced, …)
	Type       string        // GC/Start Type (NonConcurrentGC, BackgroundGC, ForegroundGC); "" before version 1
	Start      trace.Time    // the GC/Start event
	End        trace.Time    // the GC/Stop event of the same number, when HasEnd
	HasEnd     bool
	// PauseStart and PauseEnd are the suspension the GC ran in: the
	// GC/SuspendEEStart still in force when the GC started (suspensions
	// are per thread: a GC/RestartEEStop ends the one its thread began;
	// the GC's own thread's suspension, else the latest of its process),
	// and the GC/RestartEEStop that ended it; HasPause when both were
	// seen.
	PauseStart, PauseEnd trace.Time
	HasPause             bool
	// HeapAfter and Promoted are the sums over the generations (0–4) of
	// GenerationSize and TotalPromotedSize in the GC/HeapStats that
	// followed it, when HasHeap. HeapBefore is PerfView's estimate where
	// the trace has no per-heap history: the heap after the process's
	// previous GC plus the bytes its GC/AllocationTick events reported
	// since.
	HeapBefore, HeapAfter, Promoted uint64
	HasHeap                         bool
}

// Pause returns how long the GC suspended the process (0 unless HasPause).
func (g *GC) Pause() time.Duration {
	if !g.HasPause {
		return 0
	}
	return g.PauseEnd.Sub(g.PauseStart)
}

// Duration returns GC/Start → GC/Stop (0 unless HasEnd).
func (g *GC) Duration() time.Duration {
	if !g.HasEnd {
		return 0
	}
	return g.End.Sub(g.Start)
}

// MaxGCs bounds the rows a [GCs] keeps; later GCs are counted in Dropped.
const MaxGCs = 1 << 20

// GCs builds the GC table of a trace from its events, fed in time order
// to Observe, which decodes only the GC events' payloads. Rows can be
// read at any point (a timeline track of GC slices reads Start, End,
// PauseStart and PauseEnd).
type GCs struct {
	rows    []GC
	orphans []GCStop
	procs   map[int64]*gcProcess
	kinds   []gcEvent // by TypeID: what each type is to GCs, gcUnseen until looked up
	Dropped int64     // GCs beyond MaxGCs
}

// gcProcess is what GCs follows per process.
type gcProcess struct {
	suspends   map[trace.TrackID]trace.Time // suspensions in force, by the thread that began them
	waiting    map[trace.TrackID][]int      // GCs that run in them
	current    int                          // the latest GC still waiting for its heap stats, or -1
	heapAfter  uint64
	allocated  uint64
	lastByNumb map[int64]int // GC number → row, for GC/Stop (the GCs still running)
}

// NewGCs returns an empty GC table.
func NewGCs() *GCs { return &GCs{procs: map[int64]*gcProcess{}} }

// gcEvent names the events GCs reads.
type gcEvent uint8

const (
	gcNone gcEvent = iota
	gcStart
	gcStop
	gcSuspend
	gcRestart
	gcHeapStats
	gcAllocTick
	gcUnseen gcEvent = 0xff // a type not looked up yet
)

var gcEvents = map[string]gcEvent{
	"GC/Start": gcStart, "GC/Stop": gcStop, "GC/SuspendEEStart": gcSuspend,
	"GC/RestartEEStop": gcRestart, "GC/HeapStats": gcHeapStats, "GC/AllocationTick": gcAllocTick,
}

// Observe reads one event of r.
func (g *GCs) Observe(r trace.Reader, e trace.Event) {
	m := r.Meta()
	if e.Type < 0 || int(e.Type) >= len(m.Types) {
		return
	}
	for int(e.Type) >= len(g.kinds) {
		g.kinds = append(g.kinds, gcUnseen)
	}
	kind := g.kinds[e.Type]
	if kind == gcUnseen { // once per type, not per event
		kind = gcNone
		if et := &m.Types[e.Type]; et.Provider == Runtime {
			kind = gcEvents[et.Name]
		}
		g.kinds[e.Type] = kind
	}
	if kind == gcNone {
		return
	}
	pid := int64(-1)
	if e.Track >= 0 && int(e.Track) < len(m.Tracks) {
		pid = m.Tracks[e.Track].PID
	}
	p := g.procs[pid]
	if p == nil {
		p = &gcProcess{current: -1, lastByNumb: map[int64]int{}, suspends: map[trace.TrackID]trace.Time{}, waiting: map[trace.TrackID][]int{}}
		g.procs[pid] = p
	}
	switch kind {
	case gcSuspend:
		p.suspends[e.Track] = e.Time
		return
	case gcRestart:
		for _, i := range p.waiting[e.Track] {
			g.rows[i].PauseEnd, g.rows[i].HasPause = e.Time, true
		}
		delete(p.waiting, e.Track)
		delete(p.suspends, e.Track)
		return
	}
	d, err := r.Details(e)
	if err != nil {
		return
	}
	switch kind {
	case gcStart:
		if len(g.rows) >= MaxGCs {
			g.Dropped++
			return
		}
		row := GC{PID: pid, Track: e.Track, Start: e.Time,
			Number: fieldInt(d.Fields, "Count"), Generation: fieldInt(d.Fields, "Depth"),
			Reason: fieldText(d.Fields, "Reason"), Type: fieldText(d.Fields, "Type")}
		i := len(g.rows)
		g.rows = append(g.rows, row)
		if k, ok := p.suspension(e.Track); ok {
			g.rows[i].PauseStart = p.suspends[k]
			p.waiting[k] = append(p.waiting[k], i)
		}
		p.current = i
		if len(p.lastByNumb) < 1024 { // a GC whose Stop never comes must not grow it forever
			p.lastByNumb[row.Number] = i
		}
	case gcStop:
		n := fieldInt(d.Fields, "Count")
		if i, ok := p.lastByNumb[n]; ok {
			g.rows[i].End, g.rows[i].HasEnd = e.Time, true
			delete(p.lastByNumb, n)
		} else if len(g.orphans) < MaxGCs {
			g.orphans = append(g.orphans, GCStop{PID: pid, Track: e.Track, Number: n, Time: e.Time})
		}
	case gcHeapStats:
		var after, promoted uint64
		for _, k := range []string{"0", "1", "2", "3", "4"} {
			after += fieldUint(d.Fields, "GenerationSize"+k)
			promoted += fieldUint(d.Fields, "TotalPromotedSize"+k)
		}
		if i := p.current; i >= 0 {
			row := &g.rows[i]
			row.HeapAfter, row.Promoted, row.HasHeap = after, promoted, true
			row.HeapBefore = p.heapAfter + p.allocated
			p.current = -1
		}
		p.heapAfter, p.allocated = after, 0
	case gcAllocTick:
		if n := fieldUint(d.Fields, "AllocationAmount64"); n > 0 {
			p.allocated += n
		} else {
			p.allocated += fieldUint(d.Fields, "AllocationAmount")
		}
	}
}

// suspension returns the thread whose suspension a GC started on
// thread t runs in: t's own, else the latest in force in the process.
func (p *gcProcess) suspension(t trace.TrackID) (trace.TrackID, bool) {
	if _, ok := p.suspends[t]; ok {
		return t, true
	}
	best, found := trace.NoTrack, false
	for k, at := range p.suspends {
		if !found || at > p.suspends[best] || at == p.suspends[best] && k < best {
			best, found = k, true
		}
	}
	return best, found
}

// GCStop is a GC/Stop event whose GC/Start the trace does not hold (the
// GC began before the trace did).
type GCStop struct {
	PID    int64
	Track  trace.TrackID
	Number int64
	Time   trace.Time
}

// Orphans returns the GC/Stop events that matched no GC/Start, in time
// order. The slice is the table's own.
func (g *GCs) Orphans() []GCStop { return g.orphans }

// Rows returns the GCs in the order they started. The slice is the
// table's own: read it, do not keep it across Observe calls.
func (g *GCs) Rows() []GC { return g.rows }

func field(fields []trace.Field, name string) (trace.Value, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return trace.Value{}, false
}

func fieldInt(fields []trace.Field, name string) int64 {
	v, _ := field(fields, name)
	switch v.Kind() {
	case trace.KindInt:
		return v.Int()
	case trace.KindUint, trace.KindHex:
		return int64(v.Uint())
	}
	return 0
}

func fieldUint(fields []trace.Field, name string) uint64 {
	v, _ := field(fields, name)
	switch v.Kind() {
	case trace.KindInt:
		return uint64(max(v.Int(), 0))
	case trace.KindUint, trace.KindHex:
		return v.Uint()
	}
	return 0
}

// fieldText returns a field as text: a value-mapped number by its name.
func fieldText(fields []trace.Field, name string) string {
	v, ok := field(fields, name)
	if !ok {
		return ""
	}
	return v.String()
}
