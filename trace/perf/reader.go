package perf

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"viewer/trace"
	"viewer/trace/perf/eventheader"
	"viewer/trace/perf/tracefs"
)

// attr is one perf_event_attr of the file with what the reader learns
// about it.
type attr struct {
	typ        uint32
	size       uint32
	config     uint64
	sampleType uint64
	readFormat uint64
	flags      uint64
	clockID    int32
	ids        []uint64
	name       string // "system:event" from EVENT_DESC or EVENT_UPDATE
	index      int    // position in Reader.attrs

	resolved bool
	tp       *tracefs.Event // nil when the attr is not a known tracepoint
	typeID   trace.TypeID   // the type of samples without better knowledge
	dotnet   bool           // a .NET runtime user_events tracepoint

	// fixed is the sample layout when no variable-size field precedes
	// RAW (no READ, no CALLCHAIN): byte offsets in the record, -1 when
	// absent. fixedOK is false for other layouts.
	fixed   fixedLayout
	fixedOK bool
	// recent EventHeader types of this attr, to skip the type map (and
	// hashing the metadata) for the few events a provider repeats.
	recent     [4]recentType
	nextRecent int
}

type recentType struct {
	meta []byte
	hdr  [7]byte
	id   trace.TypeID
}

type fixedLayout struct {
	tid, time, cpu, raw, min int
}

// typeInfo is what Details needs about an event type.
type typeInfo struct {
	attr   *attr
	schema *eventheader.Schema // non-nil for EventHeader event types
	tag    uint16
	dotnet *dotnetType
}

// sortKey orders queued events: by time, then by queue position (which
// is file order).
type sortKey struct {
	t trace.Time
	i int32
}

// Reader reads the events of one perf.data file. It implements
// [trace.Reader].
type Reader struct {
	r    io.ReaderAt
	size int64
	bo   binary.ByteOrder
	opts Options
	pipe bool
	meta trace.Meta

	attrSize uint64
	attrs    []*attr
	byID     map[uint64]*attr
	nids     int
	tracefs  map[uint32]*tracefs.Event
	longSize int

	types        []typeInfo
	ehTypes      map[string]trace.TypeID
	keyBuf       []byte
	threads      map[threadKey]trace.TrackID
	processes    map[int64]trace.TrackID
	stacks       [][]uint64
	stackIDs     map[string]trace.StackID
	frameContext map[uint64]uint8 // call-chain address → 1 + contextModules index (FrameModule)
	labels       [][]trace.Label
	tcache       [64]threadCache
	scratch      []sortKey
	lostTotal    int64       // events counted by LOST records
	lostSamples  []trace.Gap // LOST_SAMPLES gaps, applied at the end
	labelIDs     map[[33]byte]trace.LabelsID
	lastLabelKey [33]byte
	lastLabels   trace.LabelsID
	dotnetMeta   map[dotnetKey]*dotnetType
	recs         recordCounts
	comms        []string // per track: the comm it is named after ("" unknown)

	// record walk
	buf      chunkBuf
	pos, end int64
	cut      bool // the data section runs past the end of the file
	z        *zstream
	zspill   zspill
	cache    blockCache

	// ordering
	pending       []trace.Event // queued events, in file order after the last flush
	keys          []sortKey
	spare         []trace.Event
	out           []trace.Event
	outPos        int
	maxTime       trace.Time
	prevMax       trace.Time
	lastOut       trace.Time
	clamped       int
	inversions    int // deliveries earlier than the previous one, before clamping
	lastRaw       trace.Time
	unknownSample int
	done          bool
	err           error
	// Where the payloads the chunks must hold begin (chunkBuf.keep): of
	// the events in out, of those queued at the last flush, of those
	// queued since, and (once hold was called) of those handed out since
	// the last release, and where held says. noFrom where there are none.
	outFrom, restFrom, newFrom, handedFrom int64
	held                                   func() int64 // hold's; nil before

	// shared is how many tracks a copy of Meta may hold: the tracks
	// there were when an event was last handed out. Changing one of them
	// copies the table first (ownTrack), so that such a copy keeps what
	// it saw (trace.PayloadDecoder).
	shared int
	// infos is rd.types as of the last event type added: what
	// AppendPayloadDetails reads while reading goes on.
	infos atomic.Pointer[[]typeInfo]
	// lists are the eventheader.Lists decoding borrows for structs and
	// arrays (decoding may run on many goroutines at once).
	lists sync.Pool
}

// NewReader returns a reader for the perf.data file r of the given size.
func NewReader(r io.ReaderAt, size int64, opts Options) (*Reader, error) {
	rd := &Reader{
		r: r, size: size, opts: opts,
		byID:       map[uint64]*attr{},
		tracefs:    map[uint32]*tracefs.Event{},
		ehTypes:    map[string]trace.TypeID{},
		threads:    map[threadKey]trace.TrackID{},
		processes:  map[int64]trace.TrackID{},
		stacks:     [][]uint64{nil},
		stackIDs:   map[string]trace.StackID{},
		labels:     [][]trace.Label{nil},
		labelIDs:   map[[33]byte]trace.LabelsID{},
		dotnetMeta: map[dotnetKey]*dotnetType{},
		longSize:   8,
	}
	rd.meta = trace.Meta{
		Format:  "perf",
		Version: 2,
		Clock:   trace.Clock{TicksPerSecond: 1e9},
		Has:     trace.HasCPU | trace.HasProvider,
	}
	rd.buf.r = r
	rd.zspill.dir = opts.TempDir
	var head [fileHeaderSize]byte
	n, err := r.ReadAt(head[:], 0)
	if n < pipeHeaderSize {
		if err != nil && err != io.EOF {
			return nil, err
		}
		return nil, rd.truncated(int64(n), "file header")
	}
	if !(Format{}).Match(head[:8]) {
		return nil, &trace.FormatError{Format: "perf", Off: 0, Msg: "not a perf.data file (bad magic)"}
	}
	rd.bo = order(head[:8])
	hsize := rd.bo.Uint64(head[8:])
	switch hsize {
	case pipeHeaderSize:
		rd.pipe = true
		rd.pos, rd.end = pipeHeaderSize, size
	case fileHeaderSize:
		if n < fileHeaderSize {
			return nil, rd.truncated(int64(n), "file header")
		}
		if err := rd.readFileHeader(head[:]); err != nil {
			return nil, err
		}
	default:
		return nil, &trace.FormatError{Format: "perf", Off: 8, Msg: "header size " + strconv.FormatUint(hsize, 10) + " is neither 104 (file) nor 16 (pipe)", Err: trace.ErrUnsupported}
	}
	rd.buf.limit = rd.end
	rd.outFrom, rd.restFrom, rd.newFrom, rd.handedFrom = noFrom, noFrom, noFrom, noFrom
	rd.buf.keep = rd.keepFrom
	return rd, nil
}

func (rd *Reader) truncated(off int64, what string) error {
	return &trace.FormatError{Format: "perf", Off: off, Msg: what, Err: trace.ErrTruncated}
}

func (rd *Reader) damaged(off int64, msg string) error {
	return &trace.FormatError{Format: "perf", Off: off, Msg: msg}
}

// section is an {offset, size} pair of the file header.
type section struct{ off, size uint64 }

func (rd *Reader) sectionAt(b []byte) section {
	return section{rd.bo.Uint64(b), rd.bo.Uint64(b[8:])}
}

// check reports whether s lies inside the file.
func (rd *Reader) check(s section, at int64, what string) error {
	if s.off > uint64(rd.size) || s.size > uint64(rd.size)-s.off {
		return rd.truncated(at, what+" section ["+strconv.FormatUint(s.off, 10)+", +"+strconv.FormatUint(s.size, 10)+") runs past the end of the file")
	}
	return nil
}

func (rd *Reader) readAt(s section) ([]byte, error) {
	b := make([]byte, s.size)
	if _, err := rd.r.ReadAt(b, int64(s.off)); err != nil && !(err == io.EOF && len(b) == 0) {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, rd.truncated(int64(s.off), "section")
		}
		return nil, err
	}
	return b, nil
}

// readFileHeader reads the attrs and the feature sections of a file-mode
// file.
func (rd *Reader) readFileHeader(h []byte) error {
	rd.attrSize = rd.bo.Uint64(h[16:])
	attrs := rd.sectionAt(h[24:])
	data := rd.sectionAt(h[40:])
	if err := rd.check(attrs, 24, "attrs"); err != nil {
		return err
	}
	if data.off > uint64(rd.size) {
		return rd.check(data, 40, "data")
	}
	rd.pos, rd.end = int64(data.off), int64(data.off+data.size)
	if data.size > uint64(rd.size)-data.off {
		// A recording cut short (a copy interrupted, a full disk): read
		// the records up to the cut, as the other formats do.
		rd.end, rd.cut = rd.size, true
		rd.meta.Notices = append(rd.meta.Notices, "the file is cut short: the data section declares "+strconv.FormatUint(data.size, 10)+" bytes, the file holds "+strconv.FormatInt(rd.size-int64(data.off), 10)+"; events up to the cut are shown")
	}
	if rd.attrSize < attrSizeVer0+16 || rd.attrSize > MaxAttrSize+16 {
		return rd.damaged(16, "attr_size "+strconv.FormatUint(rd.attrSize, 10)+" out of range")
	}
	nattrs := attrs.size / rd.attrSize
	if nattrs > MaxAttrs {
		return rd.damaged(24, strconv.FormatUint(nattrs, 10)+" attrs exceed the limit")
	}
	ab, err := rd.readAt(attrs)
	if err != nil {
		return err
	}
	for i := uint64(0); i < nattrs; i++ {
		off := int64(attrs.off + i*rd.attrSize)
		e := ab[i*rd.attrSize : (i+1)*rd.attrSize]
		a := rd.parseAttr(e[:rd.attrSize-16])
		ids := rd.sectionAt(e[rd.attrSize-16:])
		if err := rd.check(ids, off+int64(rd.attrSize)-16, "attr ids"); err != nil {
			return err
		}
		if err := rd.addIDs(a, ids.size/8, off); err != nil {
			return err
		}
		idb, err := rd.readAt(section{ids.off, ids.size / 8 * 8})
		if err != nil {
			return err
		}
		for j := 0; j+8 <= len(idb); j += 8 {
			rd.bindID(a, rd.bo.Uint64(idb[j:]))
		}
		a.index = len(rd.attrs)
		rd.attrs = append(rd.attrs, a)
	}
	// Feature sections: a table of {offset, size} pairs after the data,
	// one per set bit of the bitmap.
	table := int64(data.off + data.size)
	var feats []int
	for bit := 0; bit < featureBitmapBits; bit++ {
		if rd.bo.Uint64(h[72+bit/64*8:])&(1<<(bit%64)) != 0 {
			feats = append(feats, bit)
		}
	}
	if len(feats) == 0 {
		return nil
	}
	tb, err := rd.readAt(section{uint64(table), uint64(len(feats) * 16)})
	if err != nil {
		rd.cut = true
		rd.meta.Notices = append(rd.meta.Notices, "the file is cut short: the feature section table is cut off; host facts and tracepoint formats are missing")
		return nil
	}
	for i, bit := range feats {
		s := rd.sectionAt(tb[i*16:])
		if rd.check(s, table+int64(i*16), "feature") != nil || s.size > MaxSection {
			if s.off <= uint64(rd.size) && s.size <= MaxSection && rd.cut {
				continue // said above
			}
			if s.off <= uint64(rd.size) && s.size <= MaxSection {
				rd.cut = true
				rd.meta.Notices = append(rd.meta.Notices, "the file is cut short: feature "+strconv.Itoa(bit)+" section runs past its end; skipped")
				continue
			}
			rd.meta.Notices = append(rd.meta.Notices, "feature "+strconv.Itoa(bit)+" section is out of the file; skipped")
			continue
		}
		b, err := rd.readAt(s)
		if err != nil {
			return err
		}
		rd.feature(bit, b, int64(s.off))
	}
	return nil
}

func (rd *Reader) addIDs(a *attr, n uint64, off int64) error {
	if n > MaxIDs || uint64(rd.nids)+n > MaxIDs {
		return rd.damaged(off, "more than "+strconv.Itoa(MaxIDs)+" sample ids")
	}
	rd.nids += int(n)
	return nil
}

func (rd *Reader) bindID(a *attr, id uint64) {
	a.ids = append(a.ids, id)
	if _, ok := rd.byID[id]; !ok {
		rd.byID[id] = a
	}
}

// parseAttr decodes a perf_event_attr of any size (missing fields read as
// zero, extra bytes are ignored: NOTES.md §attrs).
func (rd *Reader) parseAttr(b []byte) *attr {
	var full [136]byte
	copy(full[:], b)
	bo := rd.bo
	a := &attr{
		typ:        bo.Uint32(full[0:]),
		size:       bo.Uint32(full[4:]),
		config:     bo.Uint64(full[8:]),
		sampleType: bo.Uint64(full[24:]),
		readFormat: bo.Uint64(full[32:]),
		flags:      bo.Uint64(full[40:]),
		typeID:     -1,
	}
	for i := range a.recent {
		a.recent[i].id = -1
	}
	a.fixed, a.fixedOK = layoutOf(a.sampleType)
	if a.flags&attrUseClockID != 0 {
		a.clockID = int32(bo.Uint32(full[92:]))
	}
	return a
}

// perfString decodes a perf_header_string {u32 len; char[len]} at b,
// returning the text (up to the first NUL) and the bytes consumed.
func (rd *Reader) perfString(b []byte) (string, int, bool) {
	if len(b) < 4 {
		return "", 0, false
	}
	n := uint64(rd.bo.Uint32(b))
	if n > uint64(len(b)-4) {
		return "", 0, false
	}
	s := b[4 : 4+n]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s), 4 + int(n), true
}

func (rd *Reader) info(key, value string) {
	for i, kv := range rd.meta.Info {
		if kv.Key == key {
			rd.meta.Info[i].Value = value
			return
		}
	}
	rd.meta.Info = append(rd.meta.Info, trace.KeyValue{Key: key, Value: value})
}

// feature applies one feature section; off is its file offset (for
// notices). Damaged sections are skipped with a notice.
func (rd *Reader) feature(bit int, b []byte, off int64) {
	bad := func() {
		rd.meta.Notices = append(rd.meta.Notices, "feature "+strconv.Itoa(bit)+" at byte "+strconv.FormatInt(off, 10)+" is damaged; skipped")
	}
	switch bit {
	case featTracingData:
		rd.tracingData(b, off)
	case featHostname, featOSRelease, featVersion, featArch, featCPUDesc:
		s, _, ok := rd.perfString(b)
		if !ok {
			bad()
			return
		}
		key := map[int]string{featHostname: "hostname", featOSRelease: "osrelease", featVersion: "perf_version", featArch: "arch", featCPUDesc: "cpudesc"}[bit]
		rd.info(key, s)
	case featNrCPUs:
		if len(b) < 8 {
			bad()
			return
		}
		rd.info("nrcpus", strconv.FormatUint(uint64(rd.bo.Uint32(b[4:])), 10)+" available, "+strconv.FormatUint(uint64(rd.bo.Uint32(b)), 10)+" online")
	case featCmdline:
		if len(b) < 4 {
			bad()
			return
		}
		n := rd.bo.Uint32(b)
		var args []string
		p := 4
		for i := uint32(0); i < n; i++ {
			s, used, ok := rd.perfString(b[p:])
			if !ok {
				bad()
				return
			}
			args = append(args, s)
			p += used
		}
		rd.info("cmdline", strings.Join(args, " "))
	case featEventDesc:
		if !rd.eventDesc(b) {
			bad()
		}
	case featClockID:
		if len(b) < 8 {
			bad()
			return
		}
		// The clock's resolution, not its id (perf's "clockid frequency").
		rd.info("clockid_res_ns", strconv.FormatUint(rd.bo.Uint64(b), 10))
	case featClockData:
		if len(b) < 24 || rd.bo.Uint32(b) < 1 {
			bad()
			return
		}
		rd.clockData(rd.bo.Uint32(b[4:]), int64(rd.bo.Uint64(b[8:])), int64(rd.bo.Uint64(b[16:])))
	case featSampleTime:
		if len(b) < 16 {
			bad()
			return
		}
		if first, last := rd.bo.Uint64(b), rd.bo.Uint64(b[8:]); first != 0 || last != 0 {
			rd.info("sample_time", strconv.FormatUint(first, 10)+" to "+strconv.FormatUint(last, 10)+" ns")
		}
	case featCompressed:
		if len(b) >= 8 && rd.bo.Uint32(b[4:]) != 1 {
			rd.meta.Notices = append(rd.meta.Notices, "COMPRESSED feature names compression type "+strconv.FormatUint(uint64(rd.bo.Uint32(b[4:])), 10)+", not zstd")
		}
	}
}

// clockData applies CLOCK_DATA: the time of day (wall, gettimeofday's
// microseconds) and the sample clock clk read one after the other when
// recording began (NOTES.md §time). Time 0 is the clock's 0, so the wall
// time of Time 0 is wall − clk, as `perf script -F+tod` computes it. The
// clock and host name the trace's clock domain: recordings of the same
// boot share it, and align on it exactly (trace/align).
func (rd *Reader) clockData(id uint32, wall, clk int64) {
	rd.meta.Clock.Wall = time.Unix(0, wall-clk).UTC()
	if rd.meta.Clock.Wall.IsZero() { // the zero time means "no wall clock"
		rd.meta.Clock.Wall = time.Unix(0, 1).UTC()
	}
	name := clockNames[id]
	if name == "" {
		name = "clock " + strconv.FormatUint(uint64(id), 10)
	}
	rd.info("clockid", name+" ("+strconv.FormatUint(uint64(id), 10)+")")
	host := ""
	for _, kv := range rd.meta.Info {
		if kv.Key == "hostname" {
			host = kv.Value
		}
	}
	rd.info("clock_domain", name+" on "+strconv.Quote(host))
}

// clockNames are the Linux clock ids perf record -k accepts, as perf
// names them.
var clockNames = map[uint32]string{0: "realtime", 1: "monotonic", 4: "monotonic_raw", 7: "boottime", 11: "tai"}

// eventDesc applies an EVENT_DESC section: event names per sample id
// (NOTES.md §event-names).
func (rd *Reader) eventDesc(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	n, asz := rd.bo.Uint32(b), uint64(rd.bo.Uint32(b[4:]))
	p := uint64(8)
	for i := uint32(0); i < n; i++ {
		if asz > uint64(len(b))-p || uint64(len(b))-p-asz < 8 {
			return false
		}
		ab := b[p : p+asz]
		p += asz
		nids := uint64(rd.bo.Uint32(b[p:]))
		slen := uint64(rd.bo.Uint32(b[p+4:]))
		p += 8
		if slen > uint64(len(b))-p {
			return false
		}
		name := b[p : p+slen]
		if j := bytes.IndexByte(name, 0); j >= 0 {
			name = name[:j]
		}
		p += slen
		if nids > (uint64(len(b))-p)/8 {
			return false
		}
		var owner *attr
		for j := uint64(0); j < nids; j++ {
			id := rd.bo.Uint64(b[p+8*j:])
			if a := rd.byID[id]; a != nil {
				owner = a
				a.name = string(name)
			}
		}
		if owner == nil && rd.pipe && len(ab) >= attrSizeVer0 {
			// An attr known only from EVENT_DESC.
			if len(rd.attrs) < MaxAttrs && rd.addIDs(nil, nids, 0) == nil {
				a := rd.parseAttr(ab)
				a.name = string(name)
				for j := uint64(0); j < nids; j++ {
					rd.bindID(a, rd.bo.Uint64(b[p+8*j:]))
				}
				a.index = len(rd.attrs)
				rd.attrs = append(rd.attrs, a)
			}
		}
		p += 8 * nids
	}
	return true
}

// tracingData applies a TRACING_DATA blob.
func (rd *Reader) tracingData(b []byte, off int64) {
	td, err := tracefs.ParseTracingData(b)
	if td == nil {
		rd.meta.Notices = append(rd.meta.Notices, "tracing data at byte "+strconv.FormatInt(off, 10)+" unreadable: "+err.Error())
		return
	}
	if err != nil {
		rd.meta.Notices = append(rd.meta.Notices, "tracing data at byte "+strconv.FormatInt(off, 10)+" damaged after "+strconv.Itoa(len(td.Events))+" formats: "+err.Error())
	}
	if td.Skipped > 0 {
		rd.meta.Notices = append(rd.meta.Notices, strconv.Itoa(td.Skipped)+" tracepoint format files did not parse")
	}
	if td.LongSize == 4 || td.LongSize == 8 {
		rd.longSize = td.LongSize
		rd.meta.PointerSize = td.LongSize
	}
	for _, e := range td.Events {
		rd.tracefs[e.ID] = e
	}
}

// Close removes the temporary file of decompressed samples. Details
// cannot decode their payloads afterwards.
func (rd *Reader) Close() error { return rd.zspill.close() }

// Stackless reports whether no event of the file can have a stack: it
// is a file (a pipe's attrs come with its records), and none of its
// attrs samples call chains. A symbol source then has nothing to name
// (`viewer dump` reads such a file once only).
func (rd *Reader) Stackless() bool {
	if rd.pipe {
		return false
	}
	for _, a := range rd.attrs {
		if a.sampleType&sampleCallchain != 0 {
			return false
		}
	}
	return true
}

// Meta returns the reader's tables.
func (rd *Reader) Meta() *trace.Meta { return &rd.meta }

// Stack returns the addresses of a stack, leaf first.
func (rd *Reader) Stack(id trace.StackID) []uint64 {
	if id <= 0 || int(id) >= len(rd.stacks) {
		return nil
	}
	return rd.stacks[id]
}

// Labels returns a label list.
func (rd *Reader) Labels(id trace.LabelsID) []trace.Label {
	if id <= 0 || int(id) >= len(rd.labels) {
		return nil
	}
	return rd.labels[id]
}

// Tag returns the EventHeader tag of an event type (0 when none).
func (rd *Reader) Tag(t trace.TypeID) uint16 {
	if t < 0 || int(t) >= len(rd.types) {
		return 0
	}
	return rd.types[t].tag
}

// ReadEvent returns the next event in time order.
func (rd *Reader) ReadEvent() (trace.Event, error) {
	for {
		if rd.outPos < len(rd.out) {
			e := rd.out[rd.outPos]
			rd.outPos++
			rd.shared = len(rd.meta.Tracks)
			return e, nil
		}
		if rd.done {
			return trace.Event{}, rd.err
		}
		rd.out, rd.outPos = rd.out[:0], 0
		if rd.held != nil {
			rd.handedFrom = min(rd.handedFrom, rd.outFrom)
		}
		rd.outFrom = noFrom
		if err := rd.step(); err != nil {
			rd.done = true
			rd.err = err
			rd.zspill.finish()
			if rd.zspill.err != nil && err == io.EOF {
				rd.err = rd.zspill.err
			}
			rd.flush(trace.Time(1<<63 - 1))
			rd.applyLostSamples()
			if rd.unknownSample > 0 {
				rd.meta.Notices = append(rd.meta.Notices, strconv.Itoa(rd.unknownSample)+" samples name no known attr (sample id) and were skipped")
			}
			rd.meta.Notices = append(rd.meta.Notices, rd.recs.notices()...)
			if c := rd.recs.census(); c != "" {
				rd.info("records", c)
			}
			if rd.clamped > 0 {
				rd.meta.Notices = append(rd.meta.Notices, strconv.Itoa(rd.clamped)+" events arrived after later events had been delivered; they are placed at the previous event's time")
			}
		}
	}
}

// noFrom is a payload offset past any file's.
const noFrom = int64(1<<63 - 1)

// payloadFrom returns where the payload of l begins in the file, or
// noFrom when it is empty or not in the file (decompressed data).
func (rd *Reader) payloadFrom(l trace.Loc) int64 {
	if l.Len <= 0 || l.Off >= rd.size {
		return noFrom
	}
	return l.Off
}

// keepFrom returns where the payloads the chunks must hold begin.
func (rd *Reader) keepFrom() int64 {
	from := min(rd.outFrom, rd.restFrom, rd.newFrom)
	if rd.held != nil {
		from = min(from, rd.held(), rd.handedFrom)
	}
	return from
}

// hold makes the chunks hold the payloads of the events handed out too,
// until release, and those from where held says on (it is asked before
// each chunk is read): a reader of payloads after ReadEvent
// (Sched.NoteEvents, and the derivations of the batches it noted) then
// finds them held. Without it, only the chunks holding events not yet
// handed out are kept.
func (rd *Reader) hold(held func() int64) { rd.held = held }

// release says the payloads of the events handed out so far are no
// longer wanted (see hold): their chunks are dropped at the next read.
func (rd *Reader) release() {
	rd.handedFrom = noFrom
}

// applyLostSamples adds the LOST_SAMPLES gaps beyond what LOST records
// counted: with no LOST record all of them, else one gap with the excess
// (NOTES.md §lost-events).
func (rd *Reader) applyLostSamples() {
	var total int64
	for _, g := range rd.lostSamples {
		total += g.Count
	}
	switch {
	case total == 0:
	case rd.lostTotal == 0:
		rd.meta.Lost = append(rd.meta.Lost, rd.lostSamples...)
	case total > rd.lostTotal:
		g := rd.lostSamples[len(rd.lostSamples)-1]
		g.Count = total - rd.lostTotal
		rd.meta.Lost = append(rd.meta.Lost, g)
		fallthrough
	default:
		rd.meta.Notices = append(rd.meta.Notices, "LOST_SAMPLES records count "+strconv.FormatInt(total, 10)+" lost samples, of which LOST records already counted "+strconv.FormatInt(min(total, rd.lostTotal), 10))
	}
	rd.lostSamples = nil
}

// enqueue adds an event to the time-ordering queue.
func (rd *Reader) enqueue(ev trace.Event) {
	rd.keys = append(rd.keys, sortKey{ev.Time, int32(len(rd.pending))})
	rd.pending = append(rd.pending, ev)
	rd.newFrom = min(rd.newFrom, rd.payloadFrom(ev.Payload))
	if ev.Time > rd.maxTime {
		rd.maxTime = ev.Time
	}
}

// round handles a FINISHED_ROUND (or FINISHED_INIT) record at off
// (NOTES.md §ordering).
func (rd *Reader) round(off int64) {
	rd.meta.Markers = append(rd.meta.Markers, trace.Marker{Kind: trace.MarkerRound, Time: rd.maxTime, Off: off})
	switch rd.opts.Order {
	case OrderRounds:
		limit := rd.prevMax
		rd.prevMax = rd.maxTime
		rd.flush(limit)
	case OrderPerRound:
		rd.flush(trace.Time(1<<63 - 1))
	}
}

// flush moves the queued events not later than limit to the output, in
// time order (file order among equal times). The events left queued are
// kept in that order, so later sorts stay stable.
func (rd *Reader) flush(limit trace.Time) {
	if len(rd.pending) == 0 {
		return
	}
	keys := rd.keys
	rd.scratch = sortKeys(keys, rd.scratch)
	n, _ := slices.BinarySearchFunc(keys, limit, func(k sortKey, t trace.Time) int {
		if k.t <= t {
			return -1
		}
		return 1
	})
	for _, k := range keys[:n] {
		ev := rd.pending[k.i]
		if ev.Time < rd.lastRaw {
			rd.inversions++
		}
		rd.lastRaw = ev.Time
		if ev.Time < rd.lastOut {
			ev.Time = rd.lastOut
			rd.clamped++
		}
		rd.lastOut = ev.Time
		rd.out = append(rd.out, ev)
		rd.outFrom = min(rd.outFrom, rd.payloadFrom(ev.Payload))
	}
	rest := rd.spare[:0]
	rd.restFrom, rd.newFrom = noFrom, noFrom
	for j, k := range keys[n:] {
		ev := rd.pending[k.i]
		rest = append(rest, ev)
		keys[j] = sortKey{k.t, int32(j)}
		rd.restFrom = min(rd.restFrom, rd.payloadFrom(ev.Payload))
	}
	rd.spare, rd.pending = rd.pending[:0], rest
	rd.keys = keys[:len(rest)]
}

// maxRuns is how many sorted runs sortKeys merges before it falls back to
// a general sort. perf writes a round as one run per CPU buffer.
const maxRuns = 64

// sortKeys sorts keys by (time, position). Rounds are a few sorted runs
// (one per CPU buffer), which a merge sorts in linear time per run level;
// scratch is reused between calls and returned.
func sortKeys(keys, scratch []sortKey) []sortKey {
	var runs [maxRuns + 1]int
	n := 0
	for i := 1; i < len(keys); i++ {
		if cmpKey(keys[i-1], keys[i]) > 0 {
			if n == maxRuns {
				slices.SortFunc(keys, cmpKey)
				return scratch
			}
			runs[n] = i
			n++
		}
	}
	if n == 0 {
		return scratch
	}
	bounds := append([]int{0}, runs[:n]...)
	bounds = append(bounds, len(keys))
	if cap(scratch) < len(keys) {
		scratch = make([]sortKey, len(keys))
	}
	scratch = scratch[:len(keys)]
	src, dst := keys, scratch
	for len(bounds) > 2 {
		next := bounds[:1]
		for i := 0; i+1 < len(bounds); i += 2 {
			lo, mid := bounds[i], bounds[i+1]
			hi := mid
			if i+2 < len(bounds) {
				hi = bounds[i+2]
			}
			a, b, k := lo, mid, lo
			for a < mid && b < hi {
				if cmpKey(src[b], src[a]) < 0 {
					dst[k] = src[b]
					b++
				} else {
					dst[k] = src[a]
					a++
				}
				k++
			}
			k += copy(dst[k:], src[a:mid])
			copy(dst[k:], src[b:hi])
			next = append(next, hi)
		}
		bounds = next
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
	return scratch
}

func cmpKey(a, b sortKey) int {
	switch {
	case a.t < b.t:
		return -1
	case a.t > b.t:
		return 1
	}
	return int(a.i - b.i)
}

// step reads one record of the data and applies it. It returns io.EOF at
// the end of the data.
func (rd *Reader) step() error {
	if rd.z != nil && rd.z.active {
		more, err := rd.stepCompressed()
		if more || err != nil {
			return err
		}
	}
	if rd.pos >= rd.end {
		if rd.cut {
			return rd.truncated(rd.end, "data section cut short")
		}
		return io.EOF
	}
	off := rd.pos
	hdr, err := rd.buf.at(off, recordHeaderSize)
	if err != nil {
		if g, ok := rd.r.(trace.Growing); ok && rd.pipe && g.Available() == off {
			return io.EOF // a stream that ended at a record boundary (NOTES.md §live)
		}
		return rd.readErr(off, err, "record header")
	}
	typ := rd.bo.Uint32(hdr)
	size := int64(rd.bo.Uint16(hdr[6:]))
	if size < recordHeaderSize {
		return rd.damaged(off, "record type "+strconv.FormatUint(uint64(typ), 10)+" of size "+strconv.FormatInt(size, 10))
	}
	rec, err := rd.buf.at(off, int(size))
	if err != nil {
		return rd.readErr(off, err, "record type "+strconv.FormatUint(uint64(typ), 10))
	}
	next := off + size
	rd.recs.add(typ)
	switch typ {
	case recTracingData:
		// The blob follows the record; its length is the u32 at offset 8.
		// The record's size is 12 or 16 by perf version (NOTES.md
		// §tracing-data-record).
		if size < 12 {
			return rd.damaged(off, "HEADER_TRACING_DATA record of size "+strconv.FormatInt(size, 10))
		}
		n := int64(rd.bo.Uint32(rec[8:]))
		if n > MaxSection || n > rd.end-next {
			return rd.truncated(off, "tracing data of "+strconv.FormatInt(n, 10)+" bytes")
		}
		b, err := rd.readAt(section{uint64(next), uint64(n)})
		if err != nil {
			return err
		}
		rd.tracingData(b, next)
		next += n
	case recAuxtrace:
		if size < 16 {
			return rd.damaged(off, "AUXTRACE record of size "+strconv.FormatInt(size, 10))
		}
		n := rd.bo.Uint64(rec[8:])
		if n > uint64(rd.end-next) {
			return rd.truncated(off, "AUXTRACE data")
		}
		next += int64(n)
	case recCompressed, recCompressed2:
		if _, err := rd.compressedPayload(rec, off); err != nil {
			return err
		}
		rd.pos = next
		return rd.startCompressed(off)
	}
	rd.pos = next
	return rd.record(rec, off, false)
}

// compressedPayload returns the zstd data of a COMPRESSED or COMPRESSED2
// record (tools/perf/util/tool.c, perf_session__process_compressed_event):
// all of a COMPRESSED record's body; for COMPRESSED2 the data_size bytes
// after the u64 data_size, the rest of header.size being padding.
func (rd *Reader) compressedPayload(rec []byte, off int64) ([]byte, error) {
	if rd.bo.Uint32(rec) == recCompressed {
		return rec[recordHeaderSize:], nil
	}
	if len(rec) < recordHeaderSize+8 {
		return nil, rd.damaged(off, "COMPRESSED2 record of size "+strconv.Itoa(len(rec)))
	}
	n := rd.bo.Uint64(rec[recordHeaderSize:])
	if n > uint64(len(rec)-recordHeaderSize-8) {
		return nil, rd.damaged(off, "COMPRESSED2 data_size "+strconv.FormatUint(n, 10)+" exceeds its record of size "+strconv.Itoa(len(rec)))
	}
	return rec[recordHeaderSize+8 : recordHeaderSize+8+int(n)], nil
}

func (rd *Reader) readErr(off int64, err error, what string) error {
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return rd.truncated(off, what)
	}
	return err
}

// record applies one record. off is its file offset for records in the
// file; for records from COMPRESSED data off is the offset of the
// COMPRESSED record and compressed is true.
func (rd *Reader) record(rec []byte, off int64, compressed bool) error {
	typ := rd.bo.Uint32(rec)
	body := rec[recordHeaderSize:]
	switch typ {
	case recSample:
		return rd.sample(rec, off, compressed)
	case recComm:
		if len(body) < 8 {
			return rd.damaged(off, "COMM record too short")
		}
		pid, tid := int64(int32(rd.bo.Uint32(body))), int64(int32(rd.bo.Uint32(body[4:])))
		name := body[8:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if len(name) > MaxCommLen {
			name = name[:MaxCommLen]
		}
		rd.setComm(rd.thread(pid, tid), string(name))
	case recFork, recExit:
		if len(body) < 16 {
			return rd.damaged(off, "FORK/EXIT record too short")
		}
		pid := int64(int32(rd.bo.Uint32(body)))
		ppid := int64(int32(rd.bo.Uint32(body[4:])))
		tid := int64(int32(rd.bo.Uint32(body[8:])))
		ptid := int64(int32(rd.bo.Uint32(body[12:])))
		if typ == recFork {
			// A new thread takes its parent's name until its own COMM.
			// Its track may exist already without a name: perf writes
			// each CPU's buffer in turn, so a sample of the child on one
			// CPU can precede, in the file, the FORK written on another.
			t := rd.thread(pid, tid)
			if pt, ok := rd.threads[tidKey(ppid, ptid)]; ok && rd.comms[t] == "" {
				rd.setComm(t, rd.comms[pt])
			}
		}
	case recLost, recLostSamples:
		var n uint64
		switch {
		case typ == recLost && len(body) >= 16:
			n = rd.bo.Uint64(body[8:])
		case typ == recLostSamples && len(body) >= 8:
			n = rd.bo.Uint64(body)
		default:
			return rd.damaged(off, "LOST record too short")
		}
		g := trace.Gap{Time: rd.maxTime, Track: trace.NoTrack, Count: int64(min(n, 1<<50))}
		if id, ok := rd.trailer(rec); ok {
			if id.hasTime && id.time != 0 {
				g.Time = trace.Time(id.time)
			}
			if id.hasTID && id.tid >= 0 {
				g.Track = rd.thread(id.pid, id.tid)
			}
		}
		if typ == recLostSamples {
			// perf also reports, per event at the end of the recording,
			// the samples that LOST records already counted: these gaps
			// are applied at the end, net of the LOST records.
			rd.lostSamples = append(rd.lostSamples, g)
			break
		}
		rd.lostTotal += g.Count
		rd.meta.Lost = append(rd.meta.Lost, g)
	case recFinishedRound:
		rd.round(off)
	case recFinishedInit:
		// Pipe mode: the header records are complete.
	case recHeaderAttr:
		if !rd.pipe {
			break
		}
		if len(body) < attrSizeVer0 {
			return rd.damaged(off, "HEADER_ATTR record too short")
		}
		asz := uint64(rd.bo.Uint32(body[4:]))
		if asz < attrSizeVer0 || asz > uint64(len(body)) {
			asz = min(max(asz, attrSizeVer0), uint64(len(body)))
		}
		if len(rd.attrs) >= MaxAttrs {
			return rd.damaged(off, "more than "+strconv.Itoa(MaxAttrs)+" attrs")
		}
		a := rd.parseAttr(body[:asz])
		ids := body[asz:]
		if err := rd.addIDs(a, uint64(len(ids)/8), off); err != nil {
			return err
		}
		for j := 0; j+8 <= len(ids); j += 8 {
			rd.bindID(a, rd.bo.Uint64(ids[j:]))
		}
		a.index = len(rd.attrs)
		rd.attrs = append(rd.attrs, a)
	case recEventUpdate:
		// {u64 type; u64 id; …}; type 2 = NAME.
		if len(body) >= 16 && rd.bo.Uint64(body) == 2 {
			if a := rd.byID[rd.bo.Uint64(body[8:])]; a != nil {
				name := body[16:]
				if i := bytes.IndexByte(name, 0); i >= 0 {
					name = name[:i]
				}
				a.name = string(name)
			}
		}
	case recHeaderFeature:
		if len(body) >= 8 {
			rd.feature(int(min(rd.bo.Uint64(body), 1<<16)), body[8:], off+16)
		}
	}
	return nil
}

// thread returns the track of a thread, creating it (and its process
// track) on first sight.
func (rd *Reader) thread(pid, tid int64) trace.TrackID {
	c := &rd.tcache[uint64(tid)%uint64(len(rd.tcache))]
	if c.ok && c.pid == pid && c.tid == tid {
		return c.id
	}
	t := rd.threadSlow(pid, tid)
	*c = threadCache{pid: pid, tid: tid, id: t, ok: true}
	return t
}

func (rd *Reader) threadSlow(pid, tid int64) trace.TrackID {
	k := tidKey(pid, tid)
	if t, ok := rd.threads[k]; ok {
		if tr := &rd.meta.Tracks[t]; tr.PID != pid && pid >= 0 {
			// A thread seen first without its process (or pid reuse).
			// The process track is added first: adding it may move the
			// table, and tr must point into the table that stays.
			parent := rd.process(pid)
			tr = rd.ownTrack(t)
			tr.PID = pid
			tr.Parent = parent
		}
		return t
	}
	parent := trace.NoTrack
	if pid >= 0 {
		parent = rd.process(pid)
	}
	t := trace.TrackID(len(rd.meta.Tracks))
	rd.meta.Tracks = append(rd.meta.Tracks, trace.Track{Kind: trace.TrackThread, PID: pid, TID: tid, CPU: -1, Parent: parent, Code: tid})
	rd.comms = append(rd.comms, "")
	rd.threads[k] = t
	comm := ""
	if tid == 0 {
		comm = "swapper" // the idle task has no COMM record
	}
	rd.meta.Tracks[t].Name = trackName(&rd.meta.Tracks[t], comm)
	rd.comms[t] = comm
	return t
}

func (rd *Reader) process(pid int64) trace.TrackID {
	if p, ok := rd.processes[pid]; ok {
		return p
	}
	p := trace.TrackID(len(rd.meta.Tracks))
	rd.meta.Tracks = append(rd.meta.Tracks, trace.Track{Kind: trace.TrackProcess, PID: pid, TID: -1, CPU: -1, Parent: trace.NoTrack, Code: pid})
	rd.comms = append(rd.comms, "")
	rd.processes[pid] = p
	comm := ""
	if t, ok := rd.threads[tidKey(pid, pid)]; ok {
		comm = rd.comms[t]
	}
	rd.meta.Tracks[p].Name = trackName(&rd.meta.Tracks[p], comm)
	rd.comms[p] = comm
	return p
}

// ownTrack returns track t to change it, copying the table first when a
// copy of Meta taken since may hold it.
func (rd *Reader) ownTrack(t trace.TrackID) *trace.Track {
	if int(t) < rd.shared {
		rd.meta.Tracks = slices.Clone(rd.meta.Tracks)
		rd.shared = 0
	}
	return &rd.meta.Tracks[t]
}

// MaxNames bounds the earlier names a track keeps ([trace.Track].Names).
const MaxNames = 32

// setComm names track t after a thread's new comm; a process's main
// thread names the process too. The previous name goes to the track's
// Names unless no comm was known.
func (rd *Reader) setComm(t trace.TrackID, comm string) {
	old := rd.comms[t]
	if old == comm {
		return
	}
	tr := rd.ownTrack(t)
	if old != "" && len(tr.Names) < MaxNames {
		tr.Names = append(tr.Names, tr.Name)
	}
	rd.comms[t] = comm
	tr.Name = trackName(tr, comm)
	if tr.Kind == trace.TrackThread && tr.TID == tr.PID && tr.TID >= 0 {
		if p, ok := rd.processes[tr.PID]; ok {
			rd.setComm(p, comm)
		}
	}
}

// trackName is the visible name of a thread or process track: threads
// with the same comm (six "compile" threads) must stay apart, so a thread
// is "comm tid" ("tid N" when no COMM named it) and a process
// "comm (pid N)" ("pid N").
func trackName(tr *trace.Track, comm string) string {
	if tr.Kind == trace.TrackProcess {
		if comm == "" {
			return "pid " + strconv.FormatInt(tr.PID, 10)
		}
		return comm + " (pid " + strconv.FormatInt(tr.PID, 10) + ")"
	}
	if tr.TID < 0 { // a thread known only by its process
		return "tid ? (pid " + strconv.FormatInt(tr.PID, 10) + ")"
	}
	if comm == "" {
		return "tid " + strconv.FormatInt(tr.TID, 10)
	}
	return comm + " " + strconv.FormatInt(tr.TID, 10)
}

// threadCache remembers the track of a recently seen (pid, tid).
type threadCache struct {
	pid, tid int64
	id       trace.TrackID
	ok       bool
}

// threadKey identifies a thread track: by tid, or by pid for samples
// whose tid is unknown (-1).
type threadKey struct{ pid, tid int64 }

func tidKey(pid, tid int64) threadKey {
	if tid >= 0 {
		pid = 0
	}
	return threadKey{pid, tid}
}

// sampleIDTrailer is the sample-id trailer of a non-sample record.
type sampleIDTrailer struct {
	hasTID, hasTime bool
	pid, tid        int64
	time            uint64
}

// trailer decodes the sample-id trailer of a non-sample record.
func (rd *Reader) trailer(rec []byte) (sampleIDTrailer, bool) {
	var id sampleIDTrailer
	if len(rd.attrs) == 0 {
		return id, false
	}
	a := rd.attrs[0]
	if a.sampleType&sampleIdentifier != 0 && len(rec) >= 16 {
		if b := rd.byID[rd.bo.Uint64(rec[len(rec)-8:])]; b != nil {
			a = b
		}
	}
	if a.flags&attrSampleIDAll == 0 {
		return id, false
	}
	st := a.sampleType
	n := 0
	for _, bit := range []uint64{sampleTID, sampleTime, sampleID, sampleStreamID, sampleCPU, sampleIdentifier} {
		if st&bit != 0 {
			n += 8
		}
	}
	if n == 0 || len(rec) < recordHeaderSize+n {
		return id, false
	}
	p := len(rec) - n
	if st&sampleTID != 0 {
		id.hasTID = true
		id.pid, id.tid = int64(int32(rd.bo.Uint32(rec[p:]))), int64(int32(rd.bo.Uint32(rec[p+4:])))
		p += 8
	}
	if st&sampleTime != 0 {
		id.hasTime = true
		id.time = rd.bo.Uint64(rec[p:])
	}
	return id, true
}
