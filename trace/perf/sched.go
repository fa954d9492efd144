package perf

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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
// It is a span.Split: Note keeps what it needs of an event in a batch of
// notes that Take hands over, and the slices are made from the notes on
// the Driver's other goroutines while Note fills the next batch. Note
// keeps of the events Sched wants their headers and where their payloads
// lie (notedEvent), and the derivation reads their fields from the
// reader's chunks: the reader keeps those until the batches noted from
// them are derived from (Reader.hold, Sched.inFlight, NOTES.md
// §ordering), so the payloads are not read twice, nor on the reading
// goroutine. (Reading a run's payloads again from the file on the
// deriving goroutine, as Sched once did, spares the reading goroutine
// those reads but costs a second copy of the whole file: on a loaded
// two-core machine it made the load slower and dearer.) What Note changes (the
// batch being noted, kinds, table) and what the derivation changes
// (everything from cpus on) are apart.
type Sched struct {
	rd    *Reader
	big   bool        // the recording is big-endian
	kinds []schedType // by TypeID, grown on demand
	table []string    // syscall names by number; nil for an unknown arch
	// tabled says table was looked up: at the first syscall, since pipe
	// mode gives HEADER_ARCH as a record among the events.
	tabled bool
	// hasExit says the recording has an exit tracepoint to pair
	// raw_syscalls:sys_enter with; without one enters stay instants.
	hasExit bool

	win window
	// The events noted since the last Take (span.Split), and batches
	// derived from, for Note to reuse: the latest given back first, whose
	// memory the caches are likeliest to hold (the oldest of a queue of
	// them would not be).
	batch   *noteBatch
	spentMu sync.Mutex
	spent   []*noteBatch
	// taken counts the batches taken, flights lists those not known to be
	// derived from (reading goroutine), and derived is the number of the
	// last batch derived from (set by the derivation).
	taken   int64
	flights []flight
	derived atomic.Int64
	// What Note writes and what derivations write lie in cache lines of
	// their own: the goroutines write them at once.
	_       [64]byte
	cpus    []cpuRun
	busy    int                  // CPUs running a task other than idle
	busyCtr span.TrackID         // the "busy CPUs" counter, -1 before the first switch
	threads map[int64]*threadRun // by tid
	// recent finds the threads of the latest switches without hashing:
	// recent[tid%len] is the last thread looked up with that remainder.
	recent [256]*threadRun
	sys    []sysCall // open syscall by thread track (open: ok)
	// Ids the Builder gave, kept to spare its maps on every slice; an
	// id + 1, 0 where not asked for yet.
	args      []span.ArgsID // tid and pid arguments by thread track + 1
	stateName [len(stateNames)]span.NameID
	sysTrack  []sysTrack    // by thread track + 1
	sysByID   []span.NameID // syscall names by number, below maxSysIDs
	sysNames  map[string]span.NameID
	typeNames []span.NameID         // syscall names by named syscall type
	retSmall  []span.ArgsID         // "ret" arguments by value + retBias, below 2·retBias
	retArgs   map[int64]span.ArgsID // the others, shared per value
}

// noteBatch is the events Sched noted between two Takes, and the bytes
// they hold; kinds and table are Sched's at the Take (Note may grow them
// while the batch is derived from).
type noteBatch struct {
	// events are the events noted, in order. Their payloads are in the
	// reader's chunks, which the batch lists at the Take, from its first
	// payload on (from); or, when the chunks no longer held one, a copy
	// in own, at ownBase + its offset there.
	events []notedEvent
	own    []byte
	chunks []chunk
	hint   int // the chunk of the latest payload found (payload)
	from   int64
	// tracks are the reader's tracks at the last Note: the reader copies
	// its table before it changes a track a copy may hold
	// (Reader.ownTrack), so they do not change while the batch is derived
	// from.
	tracks []trace.Track
	seq    int64 // the batch's number
	// What the derivation makes of a switch: the rest of its note, and
	// the comms.
	switches []switchNote
	text     []byte
	kinds    []schedType
	table    []string
}

// notedEvent is what Note keeps of an event: the parts of a trace.Event
// the derivation reads, 32 bytes where the event is 64. Note writes one
// per event of the busiest types and the derivation reads it back, so
// its size is memory traffic on both goroutines.
type notedEvent struct {
	time  trace.Time
	off   int64 // the payload's, in the batch's chunks
	n     int32 // the payload's length
	typ   trace.TypeID
	track trace.TrackID // NoTrack or one of the reader's
	cpu   int32
}

// ownBase is where the offsets of payloads copied into noteBatch.own
// begin: below any file offset.
const ownBase = -1 << 62

// flight is a batch taken and not yet derived from: the reader keeps the
// chunks from its first payload on (Sched.inFlight).
type flight struct{ seq, from int64 }

// spentBatches is how many batches Sched keeps for reuse: as many as a
// Driver can have waiting to be derived from, and the one being noted.
const spentBatches = 17

// maxRetArgs bounds the distinct return values whose argument lists are
// shared; others get lists of their own.
const maxRetArgs = 1 << 12

// Syscall numbers below maxSysIDs and return values in [−retBias,
// retBias) find their ids in a slice rather than a map.
const (
	maxSysIDs = 1 << 12
	retBias   = 1 << 12
)

// NewSched returns the scheduling deriver for the recording rd reads.
func NewSched(rd *Reader) *Sched {
	s := &Sched{rd: rd, busyCtr: -1, threads: map[int64]*threadRun{}, sysNames: map[string]span.NameID{}, retArgs: map[int64]span.ArgsID{},
		batch: &noteBatch{from: noFrom}}
	s.big = rd.bo == binary.ByteOrder(binary.BigEndian)
	s.derived.Store(-1)
	rd.hold(s.inFlight)
	return s
}

// window is Sched's own view of the file around the payloads it reads
// when the reader's chunks no longer hold them (chunkBuf.held: rounds
// larger than maxHeld), so Sched then reads the file again, sequentially, in
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
	// The syscall kinds, last.
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
	f    [5]rawField
	name string // the syscall of a sysEnterNamed/sysExitNamed type
}

// cpuRun is what runs on one processor since the last switch.
type cpuRun struct {
	seen  bool
	start trace.Time
	tid   int64
	comm  commName // the running task's
	idle  commName // the idle task's (pid 0, no threadRun)
	track span.TrackID
	// keys holds the span.Keys of the CPU's closed slices by the thread
	// track they are charged to (direct-mapped by track): a CPU runs a
	// few threads again and again.
	keys [cpuKeys]cpuKey
}

const cpuKeys = 32

type cpuKey struct {
	tr   trace.TrackID
	name span.NameID
	key  span.Key // the zero Key: none yet
}

// sysTrack is a thread's syscall track and the span.Keys of its closed
// slices by name and arguments (direct-mapped): a thread makes a few
// syscalls again and again.
type sysTrack struct {
	id   span.TrackID // + 1; 0 where not asked for yet
	keys [sysKeys]sysKey
}

const sysKeys = 8

type sysKey struct {
	name span.NameID
	args span.ArgsID
	key  span.Key
}

// commName remembers the NameID of a task's comm: a task keeps its comm,
// and comparing a few bytes costs less than hashing them.
type commName struct {
	b  [16]byte // TASK_COMM_LEN
	n  uint8
	ok bool
	id span.NameID
}

// name returns the NameID of comm and makes it c's comm.
func (c *commName) name(b *span.Builder, comm []byte) span.NameID {
	if c.ok && int(c.n) == len(comm) && string(c.b[:c.n]) == string(comm) {
		return c.id
	}
	c.id = b.NameBytes(comm)
	c.ok = len(comm) <= len(c.b) // a longer one is looked up every time
	if c.ok {
		c.n = uint8(copy(c.b[:], comm))
	}
	return c.id
}

// threadRun is one thread's scheduling state since a time.
type threadRun struct {
	tid   int64
	comm  commName
	state threadState // stateNone before the trace shows one
	since trace.Time
	open  bool // the state began before the trace showed it
	track span.TrackID
	of    trace.TrackID
	// tr is the thread's trace track, as the last switch away from it
	// said (known: one did).
	tr    trace.TrackID
	known bool
	// keys holds the span.Keys of the thread's closed states on track
	// of, by state (the zero Key where not asked for yet).
	keys [len(stateNames)]span.Key
}

type sysCall struct {
	start trace.Time
	id    int64
	name  span.NameID
	ok    bool // a syscall is open
}

// openSys returns the open-syscall slot of a thread track, or nil for
// events on no track.
func (s *Sched) openSys(t trace.TrackID) *sysCall {
	if t < 0 { // else one of the reader's (Note checked)
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

// rawField is where a field lies in a tracepoint's raw data, as Sched
// reads it on every event: a few bytes rather than a tracefs.Field.
type rawField struct {
	off, size int32 // size 0: the field is never there (reads give zero values)
	signed    bool
}

func fieldOf(tp *tracefs.Event, name string) (rawField, bool) {
	for _, f := range tp.Fields[tp.Common:] {
		if f.Name == name {
			if f.Offset < 0 || f.Size <= 0 || f.Offset > math.MaxInt32-f.Size {
				return rawField{}, true // outside any event's data
			}
			return rawField{off: int32(f.Offset), size: int32(f.Size), signed: f.Signed != 0}, true
		}
	}
	return rawField{}, false
}

// intField reads an integer field of raw data; 0 when it lies outside.
func (s *Sched) intField(raw []byte, f rawField) int64 {
	o, size := int(f.off), int(f.size)
	if size == 0 || o+size > len(raw) {
		return 0
	}
	b := raw[o : o+size]
	var u uint64
	switch {
	case size == 8 && !s.big:
		return int64(binary.LittleEndian.Uint64(b))
	case size == 4 && !s.big:
		u = uint64(binary.LittleEndian.Uint32(b))
	case size == 1:
		u = uint64(b[0])
	case size == 2 && s.big:
		u = uint64(binary.BigEndian.Uint16(b))
	case size == 2:
		u = uint64(binary.LittleEndian.Uint16(b))
	case size == 4:
		u = uint64(binary.BigEndian.Uint32(b))
	case size == 8:
		return int64(binary.BigEndian.Uint64(b))
	default:
		return 0
	}
	if f.signed { // sign-extend from the field's width
		sh := 64 - 8*size
		return int64(u<<sh) >> sh
	}
	return int64(u)
}

// strField returns a fixed char array field up to its first NUL.
func strField(raw []byte, f rawField) []byte {
	o, size := int(f.off), int(f.size)
	if size == 0 || o+size > len(raw) {
		return nil
	}
	b := raw[o : o+size]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// Wants implements span.Selective: Sched reads sched_switch,
// sched_wakeup and the syscall tracepoints.
func (s *Sched) Wants(_ trace.Reader, t trace.TypeID) bool {
	return t >= 0 && s.classify(t).kind != schedOther
}

// schedNote is what Sched reads of an event it derives from: the
// fields it needs, taken from the payload by the derivation (noteOf).
type schedNote struct {
	time  trace.Time
	track trace.TrackID // of the event: NoTrack or one of the reader's
	kind  schedKind
	// a: a switch's switchNote in noteBatch.switches; a wakeup's pid;
	// sys_enter's and sys_exit's id; the type of a sys_enter_NAME or
	// sys_exit_NAME event. b: sys_exit's and sys_exit_NAME's ret.
	a, b int64
}

// switchNote is the rest of a switch's note (notes of other events are
// smaller: 32 bytes to write per event).
type switchNote struct {
	prev, state, next int64 // prev_pid, prev_state, next_pid
	// the thread and process ids of the event's track, and prev_comm and
	// next_comm in noteBatch.text.
	tid, pid int64
	comm     [2]textRef
	cpu      int32 // of the event
}

// textRef is bytes in Sched.text.
type textRef struct{ off, n uint32 }

// Note implements span.Split: on the reading goroutine, it keeps the
// event when Sched derives from it.
func (s *Sched) Note(_ trace.Reader, e trace.Event) {
	s.note(&e)
	s.noted()
}

// NoteEvents implements span.BatchSplit: Note for each of evs Sched
// wants, in one call.
func (s *Sched) NoteEvents(_ trace.Reader, evs []trace.Event) {
	for i := range evs {
		e := &evs[i]
		// The kinds of the types seen before, without a call.
		if uint(e.Type) < uint(len(s.kinds)) && s.kinds[e.Type].kind == schedOther {
			continue
		}
		s.note(e)
	}
	s.noted()
}

// noted ends a Note: the batch holds the tracks the events name, and the
// reader keeps their payloads until the batch is derived from
// (inFlight), not until it is noted.
func (s *Sched) noted() {
	s.batch.tracks = s.rd.meta.Tracks
	s.rd.release()
}

func (s *Sched) note(e *trace.Event) {
	if e.Type < 0 {
		return
	}
	var st *schedType
	if int(e.Type) < len(s.kinds) && s.kinds[e.Type].kind != schedUnknown {
		st = &s.kinds[e.Type]
	} else {
		st = s.classify(e.Type)
	}
	if st.kind == schedOther || st.kind == sysEnter && !s.hasExit {
		return
	}
	if st.kind >= sysEnter && !s.tabled { // a syscall (their kinds come last): the arch, which pipe mode has among the events
		for _, kv := range s.rd.meta.Info {
			if kv.Key == "arch" {
				s.table = SyscallTable(kv.Value)
			}
		}
		s.tabled = true
	}
	nb := s.batch
	ev := notedEvent{time: e.Time, off: e.Payload.Off, n: e.Payload.Len, typ: e.Type, track: e.Track, cpu: e.CPU}
	if ev.track < 0 || int(ev.track) >= len(s.rd.meta.Tracks) {
		ev.track = trace.NoTrack
	}
	// A payload of the file at or after the first chunk kept lies in a
	// chunk kept (records are read in order, each into one chunk).
	if l := e.Payload; l.Off >= s.rd.buf.first() && l.Off < s.rd.size && l.Len >= 0 {
		nb.from = min(nb.from, l.Off)
	} else {
		raw, ok := s.rd.buf.held(l)
		if !ok || l.Off >= s.rd.size {
			if raw, ok = s.win.at(s.rd, l); !ok {
				return
			}
		}
		ev.off = ownBase + int64(len(nb.own))
		nb.own = append(nb.own, raw...)
	}
	nb.events = append(nb.events, ev)
}

// noteOf makes the note of a noted event, on the deriving goroutine,
// reading its fields from its payload; false when the batch does not
// hold the payload.
func (s *Sched) noteOf(nb *noteBatch, e *notedEvent, n *schedNote) bool {
	raw, ok := nb.payload(e)
	if !ok || int(e.typ) >= len(nb.kinds) {
		return false
	}
	st := &nb.kinds[e.typ] // classified by Note
	*n = schedNote{time: e.time, track: e.track, kind: st.kind}
	if st.kind == schedSwitch {
		x := switchNote{cpu: e.cpu}
		if n.track >= 0 {
			x.tid, x.pid = nb.tracks[n.track].TID, nb.tracks[n.track].PID
		}
		n.a = int64(len(nb.switches))
		nb.switches = append(nb.switches, x)
	}
	s.fields(nb, st, e.typ, raw, n)
	return true
}

// payload returns the payload of a noted event from the batch's chunks:
// from the chunk that held the one before it, mostly, else from the one
// heldIn finds (the chunks hold disjoint parts of the file, and own its
// copies apart from them).
func (nb *noteBatch) payload(e *notedEvent) ([]byte, bool) {
	if k := nb.hint; k < len(nb.chunks) {
		if raw, ok := heldIn(nb.chunks[k:k+1], e.off, int64(e.n)); ok {
			return raw, true
		}
	}
	for k := len(nb.chunks) - 1; k >= 0; k-- {
		if raw, ok := heldIn(nb.chunks[k:k+1], e.off, int64(e.n)); ok {
			nb.hint = k
			return raw, true
		}
	}
	return nil, false
}

// fields reads the fields of a note's event from its payload.
func (s *Sched) fields(nb *noteBatch, st *schedType, typ trace.TypeID, raw []byte, n *schedNote) {
	switch st.kind {
	case schedSwitch:
		x := &nb.switches[n.a]
		x.comm[0] = nb.keep(strField(raw, st.f[0]))
		x.prev, x.state = s.intField(raw, st.f[1]), s.intField(raw, st.f[2])
		x.comm[1] = nb.keep(strField(raw, st.f[3]))
		x.next = s.intField(raw, st.f[4])
	case schedWakeup:
		n.a = s.intField(raw, st.f[1])
	default: // syscalls
		if st.kind == sysEnter || st.kind == sysExit {
			n.a = s.intField(raw, st.f[0])
		} else {
			n.a = int64(typ)
		}
		if st.kind == sysExit || st.kind == sysExitNamed {
			n.b = s.intField(raw, st.f[1])
		}
	}
}

// inFlight returns the first payload of the batches noted and not yet
// derived from: the reader keeps the chunks from there on (Reader.hold).
// It runs on the reading goroutine.
func (s *Sched) inFlight() int64 {
	done := s.derived.Load()
	k := 0
	for k < len(s.flights) && s.flights[k].seq <= done {
		k++
	}
	s.flights = append(s.flights[:0], s.flights[k:]...)
	from := s.batch.from
	for _, f := range s.flights {
		from = min(from, f.from)
	}
	return from
}

// keep copies b into nb.text.
func (nb *noteBatch) keep(b []byte) textRef {
	r := textRef{uint32(len(nb.text)), uint32(len(b))}
	nb.text = append(nb.text, b...)
	return r
}

var _ span.BatchSplit = (*Sched)(nil)

// Take implements span.Split: the function derives from the batch noted
// so far, which Note no longer touches, and gives it back for reuse.
func (s *Sched) Take() func(b *span.Builder) {
	nb := s.batch
	nb.kinds, nb.table = s.kinds, s.table
	nb.seq = s.taken
	s.taken++
	if nb.from != noFrom {
		nb.chunks = s.rd.buf.appendChunks(nb.chunks[:0])
		s.flights = append(s.flights, flight{nb.seq, nb.from})
	}
	if len(nb.own) > 0 {
		nb.chunks = append(nb.chunks, chunk{ownBase, nb.own})
	}
	s.spentMu.Lock()
	if k := len(s.spent) - 1; k >= 0 {
		s.batch, s.spent = s.spent[k], s.spent[:k]
	} else {
		s.batch = &noteBatch{}
	}
	s.batch.from = noFrom
	s.spentMu.Unlock()
	return func(b *span.Builder) {
		s.derive(nb, b)
		s.derived.Store(nb.seq) // the batches are derived from in order
		clear(nb.chunks)
		nb.events, nb.own, nb.chunks, nb.tracks = nb.events[:0], nb.own[:0], nb.chunks[:0], nil
		nb.switches, nb.text = nb.switches[:0], nb.text[:0]
		s.spentMu.Lock()
		if len(s.spent) < spentBatches {
			s.spent = append(s.spent, nb)
		}
		s.spentMu.Unlock()
	}
}

// Observe implements span.Deriver.
func (s *Sched) Observe(r trace.Reader, e trace.Event, b *span.Builder) {
	s.Note(r, e)
	s.Take()(b)
}

// derive derives from a batch of notes (without the reader: it may run
// while the reader reads on).
//
// It reads the fields of a block of events before it applies them: the
// payloads are mostly out of the caches by now, and the reads of a block,
// independent of each other, wait for memory together rather than one
// after another between the applications.
func (s *Sched) derive(nb *noteBatch, b *span.Builder) {
	var ns [deriveBlock]schedNote
	for i := 0; i < len(nb.events); {
		k := 0
		for ; k < len(ns) && i < len(nb.events); i++ {
			if s.noteOf(nb, &nb.events[i], &ns[k]) {
				k++
			}
		}
		for j := range ns[:k] {
			s.apply(nb, &ns[j], b)
		}
	}
}

// deriveBlock is how many events derive reads the fields of at a time.
const deriveBlock = 64

func (s *Sched) apply(nb *noteBatch, n *schedNote, b *span.Builder) {
	switch n.kind {
	case schedSwitch:
		s.sw(nb, n, b)
	case schedWakeup:
		tid := n.a
		if tid == 0 {
			return
		}
		th := s.thread(tid)
		if th.state != stateRunning && th.state != statePreempt {
			s.setState(b, th, stateRunnable, n.time)
		}
	case sysEnter, sysEnterNamed:
		slot := s.openSys(n.track)
		if slot == nil {
			return
		}
		if slot.ok {
			// An exit went missing (lost events, or a syscall that
			// never returns): the open one ends where the next begins.
			s.addSys(b, n.track, *slot, n.time, span.OpenEnd, span.NoArgs)
		}
		c := sysCall{start: n.time, ok: true}
		if n.kind == sysEnter {
			c.id = n.a
			c.name = s.sysName(nb, b, c.id)
		} else {
			c.name = s.typeName(nb, b, n)
		}
		*slot = c
	case sysExit, sysExitNamed:
		ret := n.b
		slot := s.openSys(n.track)
		if slot == nil {
			return
		}
		c, ok := *slot, slot.ok
		var name span.NameID
		if n.kind == sysExit {
			id := n.a
			name = s.sysName(nb, b, id)
			if ok && c.id != id {
				s.addSys(b, n.track, c, n.time, span.OpenEnd, span.NoArgs)
				ok = false
			}
		} else if name = s.typeName(nb, b, n); ok && c.name != name {
			s.addSys(b, n.track, c, n.time, span.OpenEnd, span.NoArgs)
			ok = false
		}
		slot.ok = false
		if !ok {
			s.addSys(b, n.track, sysCall{start: b.First(), name: name}, n.time, span.OpenStart, s.ret(b, ret))
			return
		}
		s.addSys(b, n.track, c, n.time, 0, s.ret(b, ret))
	}
}

// sysName returns the NameID of syscall number id.
func (s *Sched) sysName(nb *noteBatch, b *span.Builder, id int64) span.NameID {
	if id >= 0 && id < int64(len(s.sysByID)) && s.sysByID[id] > 0 {
		return s.sysByID[id] - 1
	}
	var n string
	if id >= 0 && id < int64(len(nb.table)) && nb.table[id] != "" {
		n = nb.table[id]
	} else {
		n = "syscall " + strconv.FormatInt(id, 10)
	}
	nid := s.name(b, s.sysNames, n)
	if id >= 0 && id < maxSysIDs {
		if int(id) >= len(s.sysByID) {
			s.sysByID = append(s.sysByID, make([]span.NameID, int(id)+1-len(s.sysByID))...)
		}
		s.sysByID[id] = nid + 1
	}
	return nid
}

// typeName returns the NameID of the syscall of a syscalls:sys_enter_NAME
// or sys_exit_NAME event.
func (s *Sched) typeName(nb *noteBatch, b *span.Builder, n *schedNote) span.NameID {
	t := trace.TypeID(n.a)
	if int(t) < len(s.typeNames) && s.typeNames[t] > 0 {
		return s.typeNames[t] - 1
	}
	id := s.name(b, s.sysNames, nb.kinds[t].name) // classified by Note
	for int(t) >= len(s.typeNames) {
		s.typeNames = append(s.typeNames, 0)
	}
	s.typeNames[t] = id + 1
	return id
}

func (s *Sched) addSys(b *span.Builder, thread trace.TrackID, c sysCall, end trace.Time, fl span.Flags, args span.ArgsID) {
	for int(thread)+1 >= len(s.sysTrack) {
		s.sysTrack = append(s.sysTrack, sysTrack{})
	}
	st := &s.sysTrack[thread+1]
	t := st.id - 1
	if t < 0 {
		t = b.Track(span.Track{Kind: span.KindSlices, Name: "syscalls", Of: thread, CPU: trace.NoCPU})
		st.id = t + 1
	}
	sl := span.Slice{Start: c.start, End: end, Track: t, Name: c.name, Args: args, Thread: thread, Flags: fl}
	if fl != 0 {
		b.Add(sl)
		return
	}
	k := &st.keys[(uint32(c.name)^uint32(args)*0x9e3779b1>>29)%sysKeys]
	if k.key == (span.Key{}) || k.name != c.name || k.args != args {
		*k = sysKey{name: c.name, args: args, key: b.Key(sl)}
	}
	b.AddKeyed(k.key, c.start, end)
}

// ret returns the argument list of a syscall's return value.
func (s *Sched) ret(b *span.Builder, v int64) span.ArgsID {
	small := v >= -retBias && v < retBias
	if small && s.retSmall != nil && s.retSmall[v+retBias] > 0 {
		return s.retSmall[v+retBias] - 1
	}
	if a, ok := s.retArgs[v]; ok {
		return a
	}
	a := b.Args([]trace.Field{{Name: "ret", Value: trace.IntValue(v)}})
	switch {
	case small:
		if s.retSmall == nil {
			s.retSmall = make([]span.ArgsID, 2*retBias)
		}
		s.retSmall[v+retBias] = a + 1
	case len(s.retArgs) < maxRetArgs:
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

// threadState is a thread's scheduling state.
type threadState uint8

const (
	stateNone threadState = iota
	stateRunning
	stateRunnable
	statePreempt
	stateSleeping
	stateBlocked
	stateStopped
	stateIdle
	stateDead
)

// stateNames names the states as perf sched timehist --state and ps do.
var stateNames = [...]string{
	stateNone:     "",
	stateRunning:  "running",
	stateRunnable: "runnable",
	statePreempt:  "runnable (preempted)",
	stateSleeping: "sleeping",
	stateBlocked:  "blocked",
	stateStopped:  "stopped",
	stateIdle:     "idle",
	stateDead:     "dead",
}

// prevStates names the bits of sched_switch's prev_state
// (TASK_REPORT, include/linux/sched.h; NOTES.md §sched), lowest first.
var prevStates = [...]threadState{
	0: stateSleeping, // S: TASK_INTERRUPTIBLE
	1: stateBlocked,  // D: TASK_UNINTERRUPTIBLE
	2: stateStopped,  // T: __TASK_STOPPED
	3: stateStopped,  // t: __TASK_TRACED
	4: stateDead,     // X: EXIT_DEAD
	5: stateDead,     // Z: EXIT_ZOMBIE
	6: stateBlocked,  // P: TASK_PARKED
	7: stateIdle,     // I: TASK_IDLE (report bit)
}

func prevState(v int64) threadState {
	v &= 0xff // higher bits: TASK_REPORT_MAX (preempted), ignored
	if v == 0 {
		return statePreempt
	}
	// v has one of the 8 bits prevStates names.
	return prevStates[bits.TrailingZeros8(uint8(v))]
}

func (s *Sched) sw(nb *noteBatch, n *schedNote, b *span.Builder) {
	x := &nb.switches[n.a]
	prevComm, prevTID, prevSt := nb.textOf(x.comm[0]), x.prev, x.state
	nextComm, nextTID := nb.textOf(x.comm[1]), x.next
	var prev *threadRun
	if prevTID != 0 {
		prev = s.thread(prevTID)
		if n.track >= 0 {
			prev.tr, prev.known = n.track, true
		}
	}
	cpu := max(x.cpu, 0)
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
	// thread, as perf sched timehist counts it (NOTES.md §sched). Its
	// comm is mostly the one the CPU's previous switch named.
	var fl span.Flags
	if !c.seen {
		fl = span.OpenStart
	}
	if name := c.comm.name(b, prevComm); fl == 0 {
		k := &c.keys[uint32(n.track)%cpuKeys]
		if k.key == (span.Key{}) || k.tr != n.track || k.name != name {
			sl := span.Slice{Track: c.track, Name: name, Args: s.threadArgs(b, n.track, x.tid, x.pid), Thread: n.track}
			*k = cpuKey{tr: n.track, name: name, key: b.Key(sl)}
		}
		b.AddKeyed(k.key, c.start, n.time)
	} else {
		b.Add(span.Slice{Start: c.start, End: n.time, Track: c.track, Name: name, Args: s.threadArgs(b, n.track, x.tid, x.pid), Thread: n.track, Flags: fl})
	}
	// The counter: a CPU first seen is counted from its first switch,
	// where the trace first says what runs on it.
	was := c.seen && c.tid != 0
	var next *threadRun
	if nextTID != 0 {
		next = s.thread(nextTID)
		c.comm = next.comm
	} else {
		c.comm = c.idle
	}
	c.comm.name(b, nextComm)
	if next != nil {
		next.comm = c.comm
	} else {
		c.idle = c.comm
	}
	c.seen, c.start, c.tid = true, n.time, nextTID
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
		b.AddSample(span.Sample{Time: n.time, Track: s.busyCtr, Value: float64(s.busy)})
	}
	if prev != nil {
		th := prev
		if th.state == stateNone {
			th.state, th.since, th.open = stateRunning, b.First(), true
		}
		s.setState(b, th, prevState(prevSt), n.time)
	}
	if next != nil {
		s.setState(b, next, stateRunning, n.time)
	}
}

func (s *Sched) thread(tid int64) *threadRun {
	r := &s.recent[uint64(tid)%uint64(len(s.recent))]
	if th := *r; th != nil && th.tid == tid {
		return th
	}
	th := s.threads[tid]
	if th == nil {
		th = &threadRun{tid: tid, track: -1, of: trace.NoTrack}
		s.threads[tid] = th
	}
	*r = th
	return th
}

// setState ends a thread's current state at t and begins state.
func (s *Sched) setState(b *span.Builder, th *threadRun, state threadState, t trace.Time) {
	if th.state == state {
		return
	}
	if th.state != stateNone {
		s.addState(b, th, t, 0)
	}
	th.state, th.since, th.open = state, t, false
}

func (s *Sched) addState(b *span.Builder, th *threadRun, end trace.Time, fl span.Flags) {
	if th.track < 0 || th.of == trace.NoTrack {
		of := trace.NoTrack
		if th.known {
			of = th.tr
		}
		if th.track < 0 || of != th.of {
			name := "state"
			if of == trace.NoTrack {
				name = "state of tid " + strconv.FormatInt(th.tid, 10)
			}
			th.track, th.of = b.Track(span.Track{Kind: span.KindState, Name: name, Of: of, CPU: trace.NoCPU}), of
			th.keys = [len(stateNames)]span.Key{}
		}
	}
	if th.open {
		fl |= span.OpenStart
	}
	k := &th.keys[th.state]
	if fl == 0 && *k != (span.Key{}) {
		b.AddKeyed(*k, th.since, end)
		return
	}
	id := &s.stateName[th.state]
	if *id == 0 {
		*id = b.Name(stateNames[th.state]) + 1
	}
	sl := span.Slice{Start: th.since, End: end, Track: th.track, Name: *id - 1, Thread: th.of, Flags: fl}
	if fl != 0 {
		b.Add(sl)
		return
	}
	*k = b.Key(sl)
	b.AddKeyed(*k, th.since, end)
}

// textOf returns bytes Note kept.
func (nb *noteBatch) textOf(r textRef) []byte { return nb.text[r.off : r.off+r.n : r.off+r.n] }

// threadArgs returns the tid and pid arguments of a thread track (NoTrack
// or one of the reader's), whose ids are tid and pid.
func (s *Sched) threadArgs(b *span.Builder, t trace.TrackID, tid, pid int64) span.ArgsID {
	if t < 0 {
		return span.NoArgs
	}
	if int(t) < len(s.args) && s.args[t] > 0 {
		return s.args[t] - 1
	}
	for int(t) >= len(s.args) {
		s.args = append(s.args, 0)
	}
	a := b.Args([]trace.Field{{Name: "tid", Value: trace.IntValue(tid)}, {Name: "pid", Value: trace.IntValue(pid)}})
	s.args[t] = a + 1
	return a
}

// Finish implements span.Deriver: what still runs, waits or is inside a
// syscall at the end of the recording becomes an OpenEnd slice.
func (s *Sched) Finish(r trace.Reader, b *span.Builder) {
	s.Take()(b) // notes not taken (none, from a Driver)
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
		var tid, pid int64
		if th >= 0 && int(th) < len(s.rd.meta.Tracks) {
			tid, pid = s.rd.meta.Tracks[th].TID, s.rd.meta.Tracks[th].PID
		} else {
			th = trace.NoTrack
		}
		b.Add(span.Slice{Start: c.start, End: end, Track: c.track, Name: c.comm.id, Args: s.threadArgs(b, th, tid, pid), Thread: th, Flags: span.OpenEnd})
	}
	for _, tid := range slices.Sorted(maps.Keys(s.threads)) {
		if th := s.threads[tid]; th.state != stateNone {
			s.addState(b, th, end, span.OpenEnd)
		}
	}
	for t, c := range s.sys {
		if c.ok {
			s.addSys(b, trace.TrackID(t), c, end, span.OpenEnd, span.NoArgs)
		}
	}
}
