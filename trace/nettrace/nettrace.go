// Package nettrace reads .NET EventPipe traces: NetPerf v3 (.netperf) and
// NetTrace v4, v5 and v6 (.nettrace). NetPerf v1 and v2 are recognized and
// refused with an error wrapping [trace.ErrUnsupported].
//
// # Design
//
// A [Reader] walks the file's blocks front to back, reading one block at a
// time into a reused buffer and decoding event headers from it with a
// sticky-error cursor. Events are sorted by time only within a
// sequence-point region (the runtime guarantees that every event before a
// sequence point is no later than every event after it), so memory is
// bounded by a region (and [MaxRegionEvents]), not the file; NetPerf v3
// is ordered block by block. See order.go for the merge. Payloads stay in the file: an event records
// where its payload lies and [Reader.Details] decodes it on demand with
// the metadata's schema ([DecodePayload] does the same for schemas supplied
// from elsewhere). The current region's event blocks stay in memory (up
// to [MaxHeldBytes]), so the payloads of the events being handed out are
// read from there, and decoding puts strings and nested lists in arenas
// rather than allocating per value (details.go, arena.go): a full
// decode allocates per block, not per event.
//
// Tables grow while reading: event types (one per metadata definition;
// after a v6 metadata flush, new ones), tracks (one per OS thread, or per
// v6 thread row), stacks deduplicated by content, label lists (activity
// ids, v6 labels) interned. Lost events are computed from sequence-number
// gaps, sequence points and v6 RemoveThread blocks as TraceEvent does.
//
// Mapping to the model: Meta.Version is the trace object's version (3 or
// 4), raised to 5 when a metadata record with v5 tags is read before the
// first event is handed out, or 6. An event's Track is its thread and
// Capture the thread that wrote it when different (the sampler of
// SampleProfiler events); CPU is the processor number only when the two
// are the same, as TraceEvent exposes it. Stacks of rundown and method
// bookkeeping events are dropped, as TraceEvent does. A v6 label list
// that overrides opcode, keywords, level or version gives its events a
// derived event type.
//
// NOTES.md in this directory records how real files differ from the
// format documents and what the reader does about it; comments cite its
// sections as "NOTES.md §name".
//
// # Security
//
// The reader is meant for untrusted input: every size and count is checked
// against the bytes that remain before anything is allocated, blocks are
// capped at [MaxBlockSize], and damaged input yields the events before the
// damage followed by a [*trace.FormatError] naming the byte offset.
package nettrace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"viewer/trace"
	"viewer/trace/clr"
)

// Limits on what a file may claim.
const (
	// MaxBlockSize caps one block (v6 blocks cannot exceed 16 MiB).
	MaxBlockSize = 64 << 20
	// MaxNameLen caps a FastSerialization type name.
	MaxNameLen = 256
	// MaxStackBytes caps one stack.
	MaxStackBytes = 1 << 20
	// MaxRegionEvents caps the events held for sorting: a file without
	// sequence points (the runtime writes one per 10 MB) is ordered in
	// parts of this many events, keeping memory bounded.
	MaxRegionEvents = 1 << 22
	// MaxHeldBytes caps the blocks of a region kept in memory for their
	// payloads; the payloads of a region's later blocks are read from
	// the file.
	MaxHeldBytes = 32 << 20
)

// heldBlock is where one block of the region lies in the file and in
// Reader.held.
type heldBlock struct {
	off int64
	at  int
	n   int
}

const formatName = "nettrace"

var (
	magicNettrace = []byte("Nettrace")
	magicFastSer  = []byte("\x14\x00\x00\x00!FastSerialization.1")
)

// Format is the .NET EventPipe file format.
type Format struct{}

// Name returns "nettrace".
func (Format) Name() string { return formatName }

// Match reports whether head starts like a NetTrace or NetPerf file.
func (Format) Match(head []byte) bool {
	return bytes.HasPrefix(head, magicNettrace) || bytes.HasPrefix(head, magicFastSer)
}

// Open returns a reader for the file.
func (Format) Open(r io.ReaderAt, size int64) (trace.Reader, error) {
	return NewReader(r, size)
}

// block kinds, numbered as v6 numbers them (NOTES.md §framing-v6); ≤v5 objects are mapped to
// the same numbers by name.
const (
	blockEnd          = 0
	blockTrace        = 1
	blockEvent        = 2
	blockMetadata     = 3
	blockSeqPoint     = 4
	blockStack        = 5
	blockThread       = 6
	blockRemoveThread = 7
	blockLabelList    = 8
)

// objectKind maps a ≤v5 object type name to a block kind.
func objectKind(name string) (int, bool) {
	switch name {
	case "Trace":
		return blockTrace, true
	case "EventBlock":
		return blockEvent, true
	case "MetadataBlock":
		return blockMetadata, true
	case "SPBlock":
		return blockSeqPoint, true
	case "StackBlock":
		return blockStack, true
	}
	return 0, false
}

// FastSerialization tags (NOTES.md §framing).
const (
	tagNull       = 1
	tagBegin      = 4 // netperf
	tagBeginPriv  = 5 // nettrace
	tagEndObject  = 6
	maxObjectHead = 3 + 12 + 4 + MaxNameLen + 1 + 4 + 3
)

// Reader reads one EventPipe trace. It implements [trace.Reader].
type Reader struct {
	r    io.ReaderAt
	size int64
	meta trace.Meta

	version int   // 3, 4, 5 or 6
	tag     byte  // BeginObject tag of ≤v5 objects
	pos     int64 // file offset of the next object or block
	// stall is a block whose header was read but whose bytes had not all
	// arrived from a growing source: step handles it next (NOTES.md §live).
	stall stalledBlock
	buf   []byte
	head  []byte // scratch for object headers
	// held is the current region's blocks, back to back, kept in memory
	// (up to MaxHeldBytes) so that its events' payloads are read from
	// here rather than from the file; heldAt says where each block lies.
	held   []byte
	heldAt []heldBlock
	// heldLast is the index in heldAt of the block AppendDetails found
	// its last payload in: the next payload is nearly always there too
	heldLast int
	arenas   arenas // for decoding payloads on any goroutine (arena.go)
	// own is the arena of AppendDetails, which runs on the goroutine
	// that reads events: no pool round trip per event
	own arena
	// infos is r.types as of the last event type added: what
	// AppendPayloadDetails reads while reading goes on.
	infos atomic.Pointer[[]typeInfo]
	plans []fieldPlan // by TypeID, for ReadFields
	// blocks counts the blocks read (the benchmarks report allocations
	// per block)
	blocks int

	clock clock

	// the current sequence-point region, sorted before it is handed out
	region []trace.Event
	next   int
	err    error // io.EOF or the error that ends the events after region
	// started says an event has been handed out
	started bool
	last    trace.Time // time of the last event handed out
	clamped int        // events whose time was raised to last
	// ordering (order.go)
	runStarts []int32
	tail      trace.Time // time of the region's last event in file order
	chains    []chain
	m         *merger // merge in progress (order.go)
	left      int     // events of the region still to be merged

	types  []typeInfo     // by TypeID
	metaID []trace.TypeID // by file metadata id (small ids), TypeID+1
	metaHi map[uint32]trace.TypeID

	threads   map[uint64]trace.TrackID // ≤v5: OS thread id; v6: thread index
	trackKeys map[[2]int64]trace.TrackID
	seqs      map[uint64]*seqState // by capture thread key
	pid       int64

	stacks      [][]uint64 // by StackID; [0] is nil
	stackIdx    map[string]trace.StackID
	fileStacks  map[uint32]trace.StackID // region: file stack id ≥ maxDenseStackID
	stackTab    []trace.StackID          // region: file stack id < maxDenseStackID, StackID+1
	labels      [][]trace.Label          // by LabelsID; [0] is nil
	labelOver   []override               // by LabelsID
	labelIdx    map[string]trace.LabelsID
	activityIdx map[[32]byte]trace.LabelsID
	fileLabels  map[uint32]trace.LabelsID // region (v6): label list index
	derived     map[[2]int32]trace.TypeID

	// caches for the event loop
	cache cache

	schema      *clr.Schema  // names and fields of the runtime's own events
	processInfo trace.TypeID // the type of EventPipe's ProcessInfo event, or -1
}

type typeInfo struct {
	name     string      // the event's name as labels show it (see Label)
	fields   []Field     // the file's own schema
	manifest []Field     // the CLR manifest's schema when the file gives none, else nil
	maps     []clr.Field // the manifest schema whose value maps apply, or nil
	keys     []string    // labelKeys of the schema decoded (manifest or fields)
	mapped   []int       // mappedFields(maps)
	flat     []flatStep  // the schema's flat plan, or nil (flat.go)
	noStack  bool        // method bookkeeping: TraceEvent drops these stacks (NOTES.md §stacks)
}

// decode decodes a payload of this type: by the manifest's schema for
// runtime events, else by the file's.
func (ti *typeInfo) decode(payload []byte, pointerSize int) []trace.Field {
	if ti.manifest == nil {
		fields, _ := DecodePayload(payload, ti.fields, pointerSize)
		return fields
	}
	fields, _ := DecodePayload(payload, ti.manifest, pointerSize)
	applyMaps(fields, ti.maps, nil)
	return fields
}

type seqState struct {
	last  uint32
	track trace.TrackID
}

// override is what a v6 label list changes in an event's type (NOTES.md §labels).
type override struct {
	set                    uint8 // bits: 1 opcode, 2 keywords, 4 level, 8 version
	opcode, level, version int
	keywords               uint64
}

type cache struct {
	thread, capture         uint64
	threadOK, captureOK     bool
	threadTrack, captureTrk trace.TrackID
	seq                     *seqState
	seqKey                  uint64
	stack                   uint32
	stackID                 trace.StackID
	stackOK                 bool
	act                     [32]byte
	actID                   trace.LabelsID
	label                   uint32
	labelID                 trace.LabelsID
	labelOK                 bool
}

// NewReader reads the file's header and trace object and returns a reader
// positioned before the first event.
func NewReader(r io.ReaderAt, size int64) (*Reader, error) {
	rd := &Reader{
		r: r, size: size,
		last:        -1 << 63, // events may precede the sync time (negative times)
		processInfo: -1,
		schema:      clr.NewSchema(),
		metaHi:      map[uint32]trace.TypeID{},
		threads:     map[uint64]trace.TrackID{},
		trackKeys:   map[[2]int64]trace.TrackID{},
		seqs:        map[uint64]*seqState{},
		stacks:      [][]uint64{nil},
		stackIdx:    map[string]trace.StackID{},
		fileStacks:  map[uint32]trace.StackID{},
		labels:      [][]trace.Label{nil},
		labelOver:   []override{{}},
		labelIdx:    map[string]trace.LabelsID{},
		activityIdx: map[[32]byte]trace.LabelsID{},
		fileLabels:  map[uint32]trace.LabelsID{},
		derived:     map[[2]int32]trace.TypeID{},
		pid:         -1,
	}
	if err := rd.readHeader(); err != nil {
		return nil, err
	}
	return rd, nil
}

func (r *Reader) errorf(off int64, format string, args ...any) error {
	return &trace.FormatError{Format: formatName, Off: off, Msg: fmt.Sprintf(format, args...)}
}

func (r *Reader) truncated(off int64, msg string) error {
	return &trace.FormatError{Format: formatName, Off: off, Msg: msg, Err: trace.ErrTruncated}
}

// readAt reads n bytes at off into r.head, returning fewer at the end of
// the file.
func (r *Reader) readAt(off int64, n int) ([]byte, error) {
	if off >= r.size {
		return nil, nil
	}
	if rem := r.size - off; int64(n) > rem {
		n = int(rem)
	}
	if cap(r.head) < n {
		r.head = make([]byte, n)
	}
	b := r.head[:n]
	got, err := r.r.ReadAt(b, off)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return b[:got], nil // short when the reader holds less than size said
}

func (r *Reader) readHeader() error {
	head, err := r.readAt(0, 32)
	if err != nil {
		return err
	}
	switch {
	case bytes.HasPrefix(head, magicNettrace):
		if len(head) < 12 {
			return r.truncated(int64(len(head)), "in the file header")
		}
		if le.Uint32(head[8:]) == 0 {
			if len(head) < 20 {
				return r.truncated(int64(len(head)), "in the file header")
			}
			major := le.Uint32(head[12:])
			if major != 6 {
				return &trace.FormatError{Format: formatName, Off: 12, Msg: "NetTrace major version " + strconv.FormatUint(uint64(major), 10) + " is not supported", Err: trace.ErrUnsupported}
			}
			r.version, r.pos = 6, 20
			r.meta.Format, r.meta.Version = "nettrace", 6
			return r.readTraceV6()
		}
		if bytes.HasPrefix(magicFastSer, head[8:]) && len(head) < 32 {
			return r.truncated(int64(len(head)), "in the file header")
		}
		if !bytes.HasPrefix(head[8:], magicFastSer) {
			return r.errorf(8, "missing !FastSerialization.1 after the Nettrace magic")
		}
		r.tag, r.pos = tagBeginPriv, 32
		r.meta.Format = "nettrace"
	case bytes.HasPrefix(head, magicFastSer):
		r.tag, r.pos = tagBegin, 24
		r.meta.Format = "netperf"
	case bytes.HasPrefix(magicNettrace, head) || bytes.HasPrefix(magicFastSer, head):
		return r.truncated(int64(len(head)), "in the file header")
	default:
		return r.errorf(0, "not a NetTrace or NetPerf file")
	}
	return r.readTraceObject()
}

// object reads a FastSerialization object header at r.pos (NOTES.md §framing) and
// returns its type name and version, leaving r.pos after the type.
// end is true at the NullReference that ends the stream.
func (r *Reader) object() (name string, version int32, end bool, err error) {
	start := r.pos
	b, err := r.readAt(start, maxObjectHead)
	if err != nil {
		return "", 0, false, err
	}
	if len(b) == 0 {
		return "", 0, false, r.truncated(start, "the stream ends without its end tag")
	}
	if b[0] == tagNull {
		r.pos++
		return "", 0, true, nil
	}
	d := dec{b: b, base: start}
	if t := d.u8(); t != r.tag {
		return "", 0, false, r.errorf(start, "object tag %d, want %d", t, r.tag)
	}
	if d.u8() != r.tag || d.u8() != tagNull {
		if d.bad {
			return "", 0, false, r.truncated(start, "in an object header")
		}
		return "", 0, false, r.errorf(start+1, "malformed object type")
	}
	version = int32(d.u32())
	d.u32() // minimum reader version
	n := int(int32(d.u32()))
	if d.bad {
		return "", 0, false, r.truncated(start, "in an object header")
	}
	if n < 0 || n > MaxNameLen {
		return "", 0, false, r.errorf(d.pos()-4, "object type name length %d", n)
	}
	nb := d.bytes(n)
	endTag := d.u8()
	if d.bad {
		return "", 0, false, r.truncated(start, "in an object header")
	}
	if endTag != tagEndObject {
		return "", 0, false, r.errorf(d.pos()-1, "object type not closed (tag %d)", endTag)
	}
	r.pos = d.pos()
	return string(nb), version, false, nil
}

func (r *Reader) readTraceObject() error {
	start := r.pos
	name, version, end, err := r.object()
	if err != nil {
		return err
	}
	if end {
		return r.errorf(start, "the stream has no trace object")
	}
	if name == "Microsoft.DotNet.Runtime.EventPipeFile" {
		return &trace.FormatError{Format: formatName, Off: start, Msg: "NetPerf version " + strconv.Itoa(int(version)) + " is not supported (only 3 and NetTrace 4-6 are)", Err: trace.ErrUnsupported}
	}
	if name != "Trace" {
		return r.errorf(start, "first object is %q, want Trace", name)
	}
	want := int32(4)
	if r.tag == tagBegin {
		want = 3
	}
	if version != want {
		return &trace.FormatError{Format: formatName, Off: start, Msg: "trace object version " + strconv.Itoa(int(version)) + " is not supported", Err: trace.ErrUnsupported}
	}
	r.version = int(version)
	r.meta.Version = r.version
	b, err := r.readAt(r.pos, 49)
	if err != nil {
		return err
	}
	if len(b) < 49 {
		return r.truncated(r.pos, "in the trace object")
	}
	if b[48] != tagEndObject {
		return r.errorf(r.pos+48, "trace object not closed")
	}
	d := dec{b: b[:48], base: r.pos}
	wall := systemTime(&d)
	sync := int64(d.u64())
	freq := int64(d.u64())
	ptr := int32(d.u32())
	pid := int32(d.u32())
	nproc := int32(d.u32())
	rate := int32(d.u32())
	if err := r.setClock(r.pos+16, wall, sync, freq, ptr); err != nil {
		return err
	}
	r.pid = int64(pid)
	r.meta.Info = append(r.meta.Info,
		trace.KeyValue{Key: "ProcessId", Value: strconv.Itoa(int(pid))},
		trace.KeyValue{Key: "NumberOfProcessors", Value: strconv.Itoa(int(nproc))},
		trace.KeyValue{Key: "ExpectedCPUSamplingRate", Value: strconv.Itoa(int(rate))})
	r.pos += 49
	r.meta.Has = trace.HasVersion | trace.HasLevel | trace.HasOpcode | trace.HasKeywords | trace.HasProvider
	if r.version >= 4 {
		r.meta.Has |= trace.HasSeq | trace.HasCPU
	}
	return nil
}

func (r *Reader) setClock(off int64, wall time.Time, sync, freq int64, ptr int32) error {
	if freq <= 0 {
		return r.errorf(off+8, "tick frequency %d", freq)
	}
	if ptr != 4 && ptr != 8 {
		return r.errorf(off+16, "pointer size %d", ptr)
	}
	r.meta.PointerSize = int(ptr)
	r.meta.Clock = trace.Clock{TicksPerSecond: uint64(freq), OriginTicks: sync, Wall: wall}
	r.clock = newClock(r.meta.Clock)
	return nil
}

// systemTime decodes a Windows SYSTEMTIME; an invalid one gives the zero
// time (no wall clock).
func systemTime(d *dec) time.Time {
	var v [8]int
	for i := range v {
		v[i] = int(int16(d.u16()))
	}
	y, mo, day, h, mi, s, ms := v[0], v[1], v[3], v[4], v[5], v[6], v[7]
	if y < 1601 || y > 30827 || mo < 1 || mo > 12 || day < 1 || day > 31 || h > 23 || mi > 59 || s > 59 || ms > 999 || h < 0 || mi < 0 || s < 0 || ms < 0 {
		return time.Time{}
	}
	return time.Date(y, time.Month(mo), day, h, mi, s, ms*1e6, time.UTC)
}

func (r *Reader) readTraceV6() error {
	kind, off, n, err := r.blockV6()
	if err != nil {
		return err
	}
	if kind != blockTrace {
		return r.errorf(off-4, "first block is kind %d, want a Trace block", kind)
	}
	b, err := r.load(off, n)
	if err != nil {
		return err
	}
	if len(b) < n {
		return r.truncated(off, "in the trace block")
	}
	d := dec{b: b, base: off}
	wall := systemTime(&d)
	sync := int64(d.u64())
	freq := int64(d.u64())
	ptr := int32(d.u32())
	count := int(d.u32())
	if d.bad {
		return r.errorf(off, "trace block too short")
	}
	if err := r.setClock(off+16, wall, sync, freq, ptr); err != nil {
		return err
	}
	if count > d.left()/2 {
		return r.errorf(off+36, "%d key/values in a %d-byte trace block", count, n)
	}
	for range count {
		k, v := d.str(), d.str()
		if d.bad {
			return r.errorf(d.pos(), "trace block key/values overrun the block")
		}
		r.meta.Info = append(r.meta.Info, trace.KeyValue{Key: k, Value: v})
	}
	r.meta.Has = trace.HasVersion | trace.HasLevel | trace.HasOpcode | trace.HasKeywords | trace.HasProvider | trace.HasSeq | trace.HasCPU
	return nil
}

// blockV6 reads a v6 block header at r.pos (NOTES.md §framing-v6) and advances r.pos past
// the block; off is the payload's offset and n its size.
func (r *Reader) blockV6() (kind int, off int64, n int, err error) {
	start := r.pos
	b, err := r.readAt(start, 4)
	if err != nil {
		return 0, 0, 0, err
	}
	if len(b) < 4 {
		return 0, 0, 0, r.truncated(start, "the stream ends without an end-of-stream block")
	}
	h := le.Uint32(b)
	kind, n = int(h>>24), int(h&0xffffff)
	off = start + 4
	r.pos = off + int64(n)
	return kind, off, n, nil
}

// load reads the n bytes at off into the block buffer. At the end of the
// file it returns fewer bytes (the caller reports the truncation).
func (r *Reader) load(off int64, n int) ([]byte, error) {
	if rem := r.size - off; int64(n) > rem {
		n = int(max(rem, 0))
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, n, max(n, 2*cap(r.buf)))
	}
	b := r.buf[:n]
	if n > 0 {
		got, err := r.r.ReadAt(b, off)
		if err != nil && err != io.EOF {
			return nil, err
		}
		b = b[:got]
	}
	return b, nil
}

// hold reads the n bytes at off as load does, keeping them with the
// region's other blocks while they fit in MaxHeldBytes.
func (r *Reader) hold(off int64, n int) ([]byte, error) {
	k := len(r.held)
	if k+n > MaxHeldBytes {
		return r.load(off, n)
	}
	if rem := r.size - off; int64(n) > rem {
		n = int(max(rem, 0))
	}
	if cap(r.held)-k < n {
		// Grown by doubling from a region's usual size (the runtime
		// writes a sequence point every few MB), and kept from region
		// to region: a few allocations for the whole file.
		grown := make([]byte, k, max(k+n, 2*cap(r.held), int(min(r.size, 4<<20))))
		copy(grown, r.held)
		r.held = grown
	}
	b := r.held[k : k+n]
	if n > 0 {
		got, err := r.r.ReadAt(b, off)
		if err != nil && err != io.EOF {
			return nil, err
		}
		b = b[:got]
	}
	r.held = r.held[:k+len(b)]
	r.heldAt = append(r.heldAt, heldBlock{off: off, at: k, n: len(b)})
	return b, nil
}

// heldPayload returns the bytes of loc when they are in memory.
func (r *Reader) heldPayload(loc trace.Loc) ([]byte, bool) {
	b, _, ok := r.heldPayloadAt(loc)
	return b, ok
}

// heldPayloadAt is heldPayload that also returns the index in heldAt of
// the block holding loc.
func (r *Reader) heldPayloadAt(loc trace.Loc) ([]byte, int, bool) {
	h := r.heldAt
	i, j := 0, len(h)
	for i < j { // the last block starting at or before loc.Off
		m := int(uint(i+j) >> 1)
		if h[m].off <= loc.Off {
			i = m + 1
		} else {
			j = m
		}
	}
	if i == 0 || loc.Len < 0 {
		return nil, 0, false
	}
	b, ok := r.heldIn(i-1, loc)
	return b, i - 1, ok
}

// heldIn returns the bytes of loc when they are in held block i.
func (r *Reader) heldIn(i int, loc trace.Loc) ([]byte, bool) {
	blk := r.heldAt[i]
	d := loc.Off - blk.off
	if d < 0 || d+int64(loc.Len) > int64(blk.n) {
		return nil, false
	}
	at := blk.at + int(d)
	return r.held[at : at+int(loc.Len) : at+int(loc.Len)], true
}

// Meta returns the reader's tables.
func (r *Reader) Meta() *trace.Meta { return &r.meta }

// ReadEvent returns the next event in time order.
func (r *Reader) ReadEvent() (trace.Event, error) {
	e, err := r.nextEvent()
	if err != nil {
		return trace.Event{}, err
	}
	return *e, nil // one copy: nextEvent hands out a pointer
}

// nextEvent returns the next event in time order, in the region: valid
// until the next call.
func (r *Reader) nextEvent() (*trace.Event, error) {
	if i := r.next; i < len(r.region) { // a region in order, clamped by fill
		r.next = i + 1
		return &r.region[i], nil
	}
	return r.readMerged()
}

// readMerged returns the next event of a merge, reading the next region
// when the current one is done.
func (r *Reader) readMerged() (*trace.Event, error) {
	for r.left == 0 {
		if r.next < len(r.region) {
			r.next++
			return &r.region[r.next-1], nil
		}
		if r.err != nil {
			return nil, r.err
		}
		r.fill()
	}
	e := &r.region[r.pop()]
	r.clamp(e)
	return e, nil
}

// clamp raises an event's time to the last one handed out. Only damaged
// files need it: a region earlier than the sequence point before it, or
// unsorted NetPerf blocks.
func (r *Reader) clamp(e *trace.Event) {
	if e.Time < r.last {
		if r.clamped == 0 {
			r.notice("events earlier than the events before them (across a sequence point or block) were moved later to keep time order")
		}
		r.clamped++
		e.Time = r.last
	}
	r.last = e.Time
}

// fill reads blocks until a region of events is complete: up to a sequence
// point or the end (nettrace), or one event block (netperf, written
// sorted).
func (r *Reader) fill() {
	r.region, r.next, r.left = r.region[:0], 0, 0
	r.held, r.heldAt = r.held[:0], r.heldAt[:0]
	r.runStarts = r.runStarts[:0]
	for r.err == nil {
		done, err := r.step()
		if err != nil {
			r.err = err
		}
		if done && len(r.region) > 0 || len(r.region) > 0 && r.stalled(r.pos+r.headLen()) {
			break
		}
		if len(r.region) >= MaxRegionEvents {
			r.notice("more than " + strconv.Itoa(MaxRegionEvents) + " events without a sequence point: ordered in parts")
			break
		}
	}
	r.order()
	if len(r.region) == 0 {
		return
	}
	r.started = true // an event is about to be handed out
	if r.left == 0 { // in order: only a prefix can be earlier than r.last
		for i := range r.region {
			if r.region[i].Time >= r.last {
				break
			}
			r.clamp(&r.region[i])
		}
		r.last = r.region[len(r.region)-1].Time
	}
}

// stalled reports whether the bytes up to end have not arrived yet from
// a source still being written (a trace.Growing): the reader then hands
// out the region read so far rather than wait for its sequence point
// (NOTES.md §live).
func (r *Reader) stalled(end int64) bool {
	g, ok := r.r.(trace.Growing)
	return ok && g.Available() < end
}

// headLen is how many bytes a block's header takes at most.
func (r *Reader) headLen() int64 {
	if r.version == 6 {
		return 4
	}
	return maxObjectHead
}

func byTime(a, b trace.Event) int {
	switch {
	case a.Time < b.Time:
		return -1
	case a.Time > b.Time:
		return 1
	}
	return 0
}

// stalledBlock is the header of a block step has not read yet.
type stalledBlock struct {
	set  bool
	kind int
	off  int64
	n    int
}

// step reads and handles one block. done says the region may be handed
// out: at a sequence point, at the end, or when the next block has not
// arrived yet from a growing source.
func (r *Reader) step() (done bool, err error) {
	kind, off, n := r.stall.kind, r.stall.off, r.stall.n
	if r.stall.set {
		r.stall = stalledBlock{}
		return r.block(kind, off, n)
	}
	if r.version == 6 {
		if kind, off, n, err = r.blockV6(); err != nil {
			return true, err
		}
		if kind == blockEnd {
			if n != 0 {
				return true, r.errorf(off-4, "end-of-stream block of %d bytes", n)
			}
			return true, io.EOF
		}
	} else {
		start := r.pos
		name, _, end, err := r.object()
		if err != nil {
			return true, err
		}
		if end {
			return true, io.EOF
		}
		k, ok := objectKind(name)
		if !ok || k == blockTrace {
			return true, r.errorf(start, "unexpected object %q", name)
		}
		kind = k
		b, err := r.readAt(r.pos, 4)
		if err != nil {
			return true, err
		}
		if len(b) < 4 {
			return true, r.truncated(start, "in the "+name+" header")
		}
		n = int(int32(le.Uint32(b)))
		off = r.pos + 4
		off += (4 - off%4) % 4 // aligned to the absolute offset (NOTES.md §framing)
		if n < 0 {
			return true, r.errorf(r.pos, "%s size %d", name, n)
		}
		r.pos = off + int64(n) + 1 // then EndObject
	}
	if len(r.region) > 0 && r.stalled(off+int64(n)+1) {
		r.stall = stalledBlock{set: true, kind: kind, off: off, n: n}
		return true, nil
	}
	return r.block(kind, off, n)
}

// block reads and handles the block of the given kind whose n bytes are
// at off.
func (r *Reader) block(kind int, off int64, n int) (done bool, err error) {
	if n > MaxBlockSize {
		return true, r.errorf(off-4, "block size %d exceeds the maximum %d", n, MaxBlockSize)
	}
	var b []byte
	if kind == blockEvent {
		b, err = r.hold(off, n)
	} else {
		b, err = r.load(off, n)
	}
	if err != nil {
		return true, err
	}
	cut := len(b) < n
	if !cut && r.version < 6 {
		end, err := r.readAt(off+int64(n), 1)
		if err != nil {
			return true, err
		}
		if len(end) == 0 {
			cut = true
		} else if end[0] != tagEndObject {
			return true, r.errorf(off+int64(n), "block not closed (tag %d)", end[0])
		}
	}
	r.blocks++
	d := dec{b: b, base: off}
	switch kind {
	case blockEvent:
		if r.version == 3 {
			err = r.eventsV3(&d)
			done = true
		} else {
			err = r.events(&d, false)
		}
	case blockMetadata:
		if r.version == 6 {
			err = r.metadataV6(&d)
		} else {
			err = r.events(&d, true)
		}
	case blockStack:
		err = r.stackBlock(&d)
	case blockSeqPoint:
		err = r.seqPoint(&d)
		done = true
	case blockThread:
		err = r.threadBlock(&d)
	case blockRemoveThread:
		err = r.removeThreads(&d)
	case blockLabelList:
		err = r.labelBlock(&d)
	case blockTrace:
		err = r.errorf(off-4, "a second trace block")
	default:
		r.notice("skipped a block of unknown kind " + strconv.Itoa(kind) + " at byte " + strconv.FormatInt(off-4, 10))
	}
	if err == nil && cut {
		err = r.truncated(off+int64(len(b)), "in a block that claims "+strconv.Itoa(n)+" bytes")
	}
	if err != nil {
		return true, err
	}
	return done, nil
}

func (r *Reader) notice(s string) {
	if len(r.meta.Notices) < 100 {
		r.meta.Notices = append(r.meta.Notices, s)
	}
}

// Stack returns the addresses of a stack, leaf first. The slice belongs to
// the reader.
func (r *Reader) Stack(id trace.StackID) []uint64 {
	if id <= 0 || int(id) >= len(r.stacks) {
		return nil
	}
	return r.stacks[id]
}

// Labels returns a label list. The slice belongs to the reader.
func (r *Reader) Labels(id trace.LabelsID) []trace.Label {
	if id <= 0 || int(id) >= len(r.labels) {
		return nil
	}
	return r.labels[id]
}

// Fields returns the payload schema of an event type as the file's
// metadata describes it; nil when the metadata has no fields.
func (r *Reader) Fields(t trace.TypeID) []Field {
	if t < 0 || int(t) >= len(r.types) {
		return nil
	}
	return r.types[t].fields
}

// Payload reads an event's payload bytes from the file.
func (r *Reader) Payload(e trace.Event) ([]byte, error) {
	if e.Payload.Len <= 0 {
		return nil, nil
	}
	if e.Payload.Off < 0 || e.Payload.Off+int64(e.Payload.Len) > r.size {
		return nil, errors.New("nettrace: payload outside the file")
	}
	b := make([]byte, e.Payload.Len)
	if h, ok := r.heldPayload(e.Payload); ok {
		copy(b, h)
		return b, nil
	}
	n, err := r.r.ReadAt(b, e.Payload.Off)
	if n == len(b) {
		return b, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}

// Label returns the one-line text of an event: its name (or
// provider/id when unnamed) then name=value pairs, capped at [MaxLabel]
// bytes.
func Label(et trace.EventType, fields []trace.Field) string {
	var buf [MaxLabel + 64]byte
	return string(appendLabel(buf[:0], labelName(et), fields, nil))
}

// labelName is the name an event's label starts with.
func labelName(et trace.EventType) string {
	if et.Name == "" {
		return et.Provider + "/" + strconv.FormatInt(et.ID, 10)
	}
	return et.Name
}
