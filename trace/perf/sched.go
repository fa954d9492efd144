package perf

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"viewer/trace"
	"viewer/trace/perf/tracefs"
	"viewer/trace/span"
)

// Sched derives scheduling and syscall tracks from a perf.data
// recording's tracepoints (see NOTES.md §sched):
//
//   - sched:sched_switch: one KindCPU track per processor with the thread
//     running on it as slices, and one KindState track per thread
//     (running, runnable, sleeping, blocked … from prev_state);
//   - sched:sched_wakeup, sched:sched_wakeup_new: a sleeping thread
//     becomes runnable;
//   - a "busy CPUs" counter: how many processors run a task other than
//     the idle task, sampled at every switch that changes it;
//   - raw_syscalls:sys_enter/sys_exit pairs, and syscalls:sys_enter_NAME /
//     sys_exit_NAME pairs: syscall slices on a per-thread "syscalls"
//     track, named from the system call table of the recording's
//     architecture (the HEADER_ARCH feature: x86-64, arm64).
//
// It reads the fields it needs straight from the raw tracepoint data at
// the offsets the format files give, without decoding the other fields.
type Sched struct {
	rd    *Reader
	kinds []schedType // by TypeID, grown on demand
	table []string    // syscall names by number; nil for an unknown arch
	// tabled says table was looked up: at the first syscall, since pipe
	// mode gives HEADER_ARCH as a record among the events.
	tabled bool
	// hasExit says the recording has an exit tracepoint to pair
	// raw_syscalls:sys_enter with; without one enters stay instants.
	hasExit bool

	win     window
	cpus    []cpuRun
	busy    int                  // CPUs running a task other than idle
	busyCtr span.TrackID         // the "busy CPUs" counter, -1 before the first switch
	threads map[int64]*threadRun // by tid
	sys     []sysCall            // open syscall by thread track (open: ok)
	args    map[trace.TrackID]span.ArgsID
	// Ids the Builder gave, kept to spare its maps on every slice.
	stateName map[string]span.NameID
	sysTrack  []span.TrackID // by thread track + 1 (0: not made yet)
	sysNames  map[string]span.NameID
	retArgs   map[int64]span.ArgsID // "ret" arguments, shared per value
}

// maxRetArgs bounds the distinct return values whose argument lists are
// shared; others get lists of their own.
const maxRetArgs = 1 << 12

// NewSched returns the scheduling deriver for the recording rd reads.
func NewSched(rd *Reader) *Sched {
	s := &Sched{rd: rd, busyCtr: -1, threads: map[int64]*threadRun{}, args: map[trace.TrackID]span.ArgsID{},
		stateName: map[string]span.NameID{}, sysNames: map[string]span.NameID{}, retArgs: map[int64]span.ArgsID{}}
	return s
}

// window is Sched's own view of the file around the payloads it reads
// when the reader's chunks no longer hold them (chunkBuf.held: the
// current and the previous chunk): events arrive a round or two after the
// reader read their records, and a round may be larger than two chunks,
// so Sched then reads the file again, sequentially, in
// windows of windowSize bytes through one buffer (no allocation per
// block, one system call per window).
type window struct {
	base int64
	b    []byte
}

const windowSize = 4 << 20

// at returns the bytes of l, from the window when it holds them, after
// moving the window when it does not. Payloads in decompressed data (past
// the end of the file) and those larger than a window go through the
// reader's rawAt.
func (w *window) at(rd *Reader, l trace.Loc) ([]byte, bool) {
	end := l.Off + int64(l.Len)
	if l.Off >= w.base && end <= w.base+int64(len(w.b)) && l.Len >= 0 {
		return w.b[l.Off-w.base : end-w.base], true
	}
	if l.Off < 0 || l.Len < 0 || end > rd.size || l.Len > windowSize/2 {
		raw, err := rd.rawAt(l, nil)
		return raw, err == nil
	}
	// Start a little before the payload: the next events' payloads lie
	// mostly after it, some (other CPUs' buffers of the round) before.
	// A growing file is read no further than has arrived (NOTES.md §live).
	size := rd.size
	if g, ok := rd.r.(trace.Growing); ok {
		size = max(min(size, g.Available()), end)
	}
	base := max(0, min(l.Off-windowSize/8, size-windowSize))
	n := int(min(windowSize, size-base))
	if cap(w.b) < n {
		w.b = make([]byte, n)
	}
	m, err := rd.r.ReadAt(w.b[:n], base)
	if m < n && err != nil {
		w.b, w.base = w.b[:0], 0
		raw, err := rd.rawAt(l, nil)
		return raw, err == nil
	}
	w.b, w.base = w.b[:n], base
	return w.b[l.Off-w.base : end-w.base], true
}

// SyscallTable returns the system call names by number of an
// architecture as uname -m (perf's HEADER_ARCH) names it, or nil.
func SyscallTable(arch string) []string {
	switch arch {
	case "x86_64", "amd64":
		return syscallsX8664[:]
	case "aarch64", "arm64":
		return syscallsARM64[:]
	}
	return nil
}

type schedKind uint8

const (
	schedUnknown schedKind = iota // not classified yet
	schedOther
	schedSwitch
	schedWakeup
	sysEnter // raw_syscalls:sys_enter
	sysExit  // raw_syscalls:sys_exit
	sysEnterNamed
	sysExitNamed
)

// schedType is what Sched knows of one event type: its kind and the
// fields it reads.
type schedType struct {
	kind schedKind
	// switch: prev_comm, prev_pid, prev_state, next_comm, next_pid;
	// wakeup: comm, pid; sys_enter/exit: id (ret for exits).
	f    [5]tracefs.Field
	name string // the syscall of a sysEnterNamed/sysExitNamed type
}

// cpuRun is what runs on one processor since the last switch.
type cpuRun struct {
	seen  bool
	start trace.Time
	tid   int64
	comm  span.NameID
	track span.TrackID
}

// threadRun is one thread's scheduling state since a time.
type threadRun struct {
	state string
	since trace.Time
	open  bool // the state began before the trace showed it
	track span.TrackID
	of    trace.TrackID
	// tr is the thread's trace track, as the last switch away from it
	// said (known: one did).
	tr    trace.TrackID
	known bool
}

type sysCall struct {
	start trace.Time
	id    int64
	name  string
	ok    bool // a syscall is open
}

// openSys returns the open-syscall slot of a thread track, or nil for
// events on no track.
func (s *Sched) openSys(t trace.TrackID) *sysCall {
	if t < 0 || int(t) >= len(s.rd.meta.Tracks) {
		return nil
	}
	for int(t) >= len(s.sys) {
		s.sys = append(s.sys, sysCall{})
	}
	return &s.sys[t]
}

var schedFields = map[string][]string{
	"sched:sched_switch":     {"prev_comm", "prev_pid", "prev_state", "next_comm", "next_pid"},
	"sched:sched_wakeup":     {"comm", "pid"},
	"sched:sched_wakeup_new": {"comm", "pid"},
	"raw_syscalls:sys_enter": {"id"},
	"raw_syscalls:sys_exit":  {"id", "ret"},
}

var schedKinds = map[string]schedKind{
	"sched:sched_switch":     schedSwitch,
	"sched:sched_wakeup":     schedWakeup,
	"sched:sched_wakeup_new": schedWakeup,
	"raw_syscalls:sys_enter": sysEnter,
	"raw_syscalls:sys_exit":  sysExit,
}

func (s *Sched) classify(typ trace.TypeID) *schedType {
	for int(typ) >= len(s.kinds) {
		s.kinds = append(s.kinds, schedType{})
	}
	st := &s.kinds[typ]
	if st.kind != schedUnknown {
		return st
	}
	st.kind = schedOther
	if int(typ) >= len(s.rd.types) {
		return st
	}
	ti := &s.rd.types[typ]
	tp := ti.attr.tp
	if tp == nil || ti.schema != nil || ti.dotnet != nil {
		return st
	}
	full := tp.System + ":" + tp.Name
	kind, ok := schedKinds[full]
	names := schedFields[full]
	if !ok && tp.System == "syscalls" {
		if n, ok2 := strings.CutPrefix(tp.Name, "sys_enter_"); ok2 {
			st.kind, st.name = sysEnterNamed, n
		} else if n, ok2 := strings.CutPrefix(tp.Name, "sys_exit_"); ok2 {
			st.kind, st.name = sysExitNamed, n
			if f, ok := fieldOf(tp, "ret"); ok {
				st.f[1] = f
			}
		}
		return st
	}
	if !ok {
		return st
	}
	for i, n := range names {
		f, ok := fieldOf(tp, n)
		if !ok {
			return st // not the layout we know: an instant like any other
		}
		st.f[i] = f
	}
	st.kind = kind
	if kind == sysEnter {
		for _, t := range s.rd.meta.Types {
			if t.Provider == "raw_syscalls" && t.Name == "sys_exit" {
				s.hasExit = true
			}
		}
	}
	return st
}

func fieldOf(tp *tracefs.Event, name string) (tracefs.Field, bool) {
	for _, f := range tp.Fields[tp.Common:] {
		if f.Name == name {
			return f, true
		}
	}
	return tracefs.Field{}, false
}

// intField reads an integer field of raw data; 0 when it lies outside.
func (s *Sched) intField(raw []byte, f tracefs.Field) int64 {
	o := f.Offset
	if o < 0 || f.Size <= 0 || o+f.Size > len(raw) {
		return 0
	}
	b := raw[o : o+f.Size]
	switch f.Size {
	case 1:
		if f.Signed != 0 {
			return int64(int8(b[0]))
		}
		return int64(b[0])
	case 2:
		if f.Signed != 0 {
			return int64(int16(s.rd.bo.Uint16(b)))
		}
		return int64(s.rd.bo.Uint16(b))
	case 4:
		if f.Signed != 0 {
			return int64(int32(s.rd.bo.Uint32(b)))
		}
		return int64(s.rd.bo.Uint32(b))
	case 8:
		return int64(s.rd.bo.Uint64(b))
	}
	return 0
}

// strField returns a fixed char array field up to its first NUL.
func strField(raw []byte, f tracefs.Field) []byte {
	o := f.Offset
	if o < 0 || f.Size <= 0 || o+f.Size > len(raw) {
		return nil
	}
	b := raw[o : o+f.Size]
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// Observe implements span.Deriver.
func (s *Sched) Observe(r trace.Reader, e trace.Event, b *span.Builder) {
	if e.Type < 0 {
		return
	}
	var st *schedType
	if int(e.Type) < len(s.kinds) && s.kinds[e.Type].kind != schedUnknown {
		st = &s.kinds[e.Type]
	} else {
		st = s.classify(e.Type)
	}
	if st.kind == schedOther {
		return
	}
	raw, ok := s.rd.buf.held(e.Payload)
	if !ok || e.Payload.Off >= s.rd.size {
		if raw, ok = s.win.at(s.rd, e.Payload); !ok {
			return
		}
	}
	switch st.kind {
	case schedSwitch:
		s.sw(e, raw, st, b)
	case schedWakeup:
		tid := s.intField(raw, st.f[1])
		if tid == 0 {
			return
		}
		th := s.thread(tid)
		if th.state != stateRunning && th.state != statePreempt {
			s.setState(b, tid, th, stateRunnable, e.Time)
		}
	case sysEnter, sysEnterNamed:
		if st.kind == sysEnter && !s.hasExit {
			return
		}
		slot := s.openSys(e.Track)
		if slot == nil {
			return
		}
		if slot.ok {
			// An exit went missing (lost events, or a syscall that
			// never returns): the open one ends where the next begins.
			s.addSys(b, e.Track, *slot, e.Time, span.OpenEnd, span.NoArgs)
		}
		c := sysCall{start: e.Time, name: st.name, ok: true}
		if st.kind == sysEnter {
			c.id = s.intField(raw, st.f[0])
			c.name = s.sysName(c.id)
		}
		*slot = c
	case sysExit, sysExitNamed:
		ret := s.intField(raw, st.f[1])
		slot := s.openSys(e.Track)
		if slot == nil {
			return
		}
		c, ok := *slot, slot.ok
		name := st.name
		if st.kind == sysExit {
			id := s.intField(raw, st.f[0])
			name = s.sysName(id)
			if ok && c.id != id {
				s.addSys(b, e.Track, c, e.Time, span.OpenEnd, span.NoArgs)
				ok = false
			}
		} else if ok && c.name != name {
			s.addSys(b, e.Track, c, e.Time, span.OpenEnd, span.NoArgs)
			ok = false
		}
		slot.ok = false
		if !ok {
			s.addSys(b, e.Track, sysCall{start: b.First(), name: name}, e.Time, span.OpenStart, s.ret(b, ret))
			return
		}
		s.addSys(b, e.Track, c, e.Time, 0, s.ret(b, ret))
	}
}

func (s *Sched) sysName(id int64) string {
	if !s.tabled {
		for _, kv := range s.rd.meta.Info {
			if kv.Key == "arch" {
				s.table = SyscallTable(kv.Value)
			}
		}
		s.tabled = true
	}
	if id >= 0 && id < int64(len(s.table)) && s.table[id] != "" {
		return s.table[id]
	}
	return "syscall " + strconv.FormatInt(id, 10)
}

func (s *Sched) addSys(b *span.Builder, thread trace.TrackID, c sysCall, end trace.Time, fl span.Flags, args span.ArgsID) {
	for int(thread)+1 >= len(s.sysTrack) {
		s.sysTrack = append(s.sysTrack, 0)
	}
	t := s.sysTrack[thread+1] - 1
	if t < 0 {
		t = b.Track(span.Track{Kind: span.KindSlices, Name: "syscalls", Of: thread, CPU: trace.NoCPU})
		s.sysTrack[thread+1] = t + 1
	}
	b.Add(span.Slice{Start: c.start, End: end, Track: t, Name: s.name(b, s.sysNames, c.name), Args: args, Thread: thread, Flags: fl})
}

// ret returns the argument list of a syscall's return value.
func (s *Sched) ret(b *span.Builder, v int64) span.ArgsID {
	if a, ok := s.retArgs[v]; ok {
		return a
	}
	a := b.Args([]trace.Field{{Name: "ret", Value: trace.IntValue(v)}})
	if len(s.retArgs) < maxRetArgs {
		s.retArgs[v] = a
	}
	return a
}

// name returns the NameID of n through a cache.
func (s *Sched) name(b *span.Builder, cache map[string]span.NameID, n string) span.NameID {
	id, ok := cache[n]
	if !ok {
		id = b.Name(n)
		cache[n] = id
	}
	return id
}

// Thread states, named as perf sched timehist --state and ps do.
const (
	stateRunning  = "running"
	stateRunnable = "runnable"
	statePreempt  = "runnable (preempted)"
	stateSleeping = "sleeping"
	stateBlocked  = "blocked"
	stateStopped  = "stopped"
	stateIdle     = "idle"
	stateDead     = "dead"
)

// prevStates names the bits of sched_switch's prev_state
// (TASK_REPORT, include/linux/sched.h; NOTES.md §sched), lowest first.
var prevStates = [...]string{
	0: stateSleeping, // S: TASK_INTERRUPTIBLE
	1: stateBlocked,  // D: TASK_UNINTERRUPTIBLE
	2: stateStopped,  // T: __TASK_STOPPED
	3: stateStopped,  // t: __TASK_TRACED
	4: stateDead,     // X: EXIT_DEAD
	5: stateDead,     // Z: EXIT_ZOMBIE
	6: stateBlocked,  // P: TASK_PARKED
	7: stateIdle,     // I: TASK_IDLE (report bit)
}

func prevStateName(v int64) string {
	v &= 0xff // higher bits: TASK_REPORT_MAX (preempted), ignored
	if v == 0 {
		return statePreempt
	}
	for i, n := range prevStates {
		if v&(1<<i) != 0 {
			return n
		}
	}
	return "state " + strconv.FormatInt(v, 10)
}

func (s *Sched) sw(e trace.Event, raw []byte, st *schedType, b *span.Builder) {
	prevComm := strField(raw, st.f[0])
	prevTID := s.intField(raw, st.f[1])
	prevState := s.intField(raw, st.f[2])
	nextComm := strField(raw, st.f[3])
	nextTID := s.intField(raw, st.f[4])
	var prev *threadRun
	if prevTID != 0 {
		prev = s.thread(prevTID)
		if e.Track >= 0 {
			prev.tr, prev.known = e.Track, true
		}
	}
	cpu := max(e.CPU, 0)
	if int(cpu) >= 1<<16 {
		return
	}
	for int(cpu) >= len(s.cpus) {
		s.cpus = append(s.cpus, cpuRun{})
	}
	c := &s.cpus[cpu]
	if !c.seen {
		c.track = b.Track(span.Track{Kind: span.KindCPU, Name: "CPU " + strconv.Itoa(int(cpu)), Of: trace.NoTrack, CPU: cpu})
		c.start, c.tid = b.First(), prevTID
	}
	// The slice ending here is the switching thread's: the sample's
	// thread, as perf sched timehist counts it (NOTES.md §sched).
	var fl span.Flags
	if !c.seen {
		fl = span.OpenStart
	}
	b.Add(span.Slice{Start: c.start, End: e.Time, Track: c.track, Name: b.NameBytes(prevComm), Args: s.threadArgs(b, e.Track), Thread: e.Track, Flags: fl})
	// The counter: a CPU first seen is counted from its first switch,
	// where the trace first says what runs on it.
	was := c.seen && c.tid != 0
	c.seen, c.start, c.tid, c.comm = true, e.Time, nextTID, b.NameBytes(nextComm)
	if is := nextTID != 0; is != was || s.busyCtr < 0 {
		switch {
		case is && !was:
			s.busy++
		case was && !is:
			s.busy--
		}
		if s.busyCtr < 0 {
			s.busyCtr = b.Track(span.Track{Kind: span.KindCounter, Name: "busy CPUs", Of: trace.NoTrack, CPU: trace.NoCPU})
		}
		b.AddSample(span.Sample{Time: e.Time, Track: s.busyCtr, Value: float64(s.busy)})
	}
	if prev != nil {
		th := prev
		if th.state == "" {
			th.state, th.since, th.open = stateRunning, b.First(), true
		}
		s.setState(b, prevTID, th, prevStateName(prevState), e.Time)
	}
	if nextTID != 0 {
		s.setState(b, nextTID, s.thread(nextTID), stateRunning, e.Time)
	}
}

func (s *Sched) thread(tid int64) *threadRun {
	th := s.threads[tid]
	if th == nil {
		th = &threadRun{track: -1, of: trace.NoTrack}
		s.threads[tid] = th
	}
	return th
}

// setState ends a thread's current state at t and begins state.
func (s *Sched) setState(b *span.Builder, tid int64, th *threadRun, state string, t trace.Time) {
	if th.state == state {
		return
	}
	if th.state != "" {
		s.addState(b, tid, th, t, 0)
	}
	th.state, th.since, th.open = state, t, false
}

func (s *Sched) addState(b *span.Builder, tid int64, th *threadRun, end trace.Time, fl span.Flags) {
	if th.track < 0 || th.of == trace.NoTrack {
		of := trace.NoTrack
		if th.known {
			of = th.tr
		}
		if th.track < 0 || of != th.of {
			name := "state"
			if of == trace.NoTrack {
				name = "state of tid " + strconv.FormatInt(tid, 10)
			}
			th.track, th.of = b.Track(span.Track{Kind: span.KindState, Name: name, Of: of, CPU: trace.NoCPU}), of
		}
	}
	if th.open {
		fl |= span.OpenStart
	}
	b.Add(span.Slice{Start: th.since, End: end, Track: th.track, Name: s.name(b, s.stateName, th.state), Thread: th.of, Flags: fl})
}

// threadArgs returns the tid and pid arguments of a thread track.
func (s *Sched) threadArgs(b *span.Builder, t trace.TrackID) span.ArgsID {
	if a, ok := s.args[t]; ok {
		return a
	}
	var a span.ArgsID
	if t >= 0 && int(t) < len(s.rd.meta.Tracks) {
		tr := &s.rd.meta.Tracks[t]
		a = b.Args([]trace.Field{{Name: "tid", Value: trace.IntValue(tr.TID)}, {Name: "pid", Value: trace.IntValue(tr.PID)}})
	}
	s.args[t] = a
	return a
}

// Finish implements span.Deriver: what still runs, waits or is inside a
// syscall at the end of the recording becomes an OpenEnd slice.
func (s *Sched) Finish(r trace.Reader, b *span.Builder) {
	end := b.Last()
	for i := range s.cpus {
		c := &s.cpus[i]
		if !c.seen {
			continue
		}
		th := trace.NoTrack
		if t := s.threads[c.tid]; t != nil && t.known {
			th = t.tr
		}
		b.Add(span.Slice{Start: c.start, End: end, Track: c.track, Name: c.comm, Args: s.threadArgs(b, th), Thread: th, Flags: span.OpenEnd})
	}
	for _, tid := range slices.Sorted(maps.Keys(s.threads)) {
		if th := s.threads[tid]; th.state != "" {
			s.addState(b, tid, th, end, span.OpenEnd)
		}
	}
	for t, c := range s.sys {
		if c.ok {
			s.addSys(b, trace.TrackID(t), c, end, span.OpenEnd, span.NoArgs)
		}
	}
}
