package cpel

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"viewer/trace"
	"viewer/trace/vppfmt"
)

// Format is the CPEL [trace.Format].
type Format struct{}

// Name returns "cpel".
func (Format) Name() string { return "cpel" }

// Match reports whether head starts like a CPEL file.
func (Format) Match(head []byte) bool { return Match(head) }

// Open returns a reader for the CPEL file r of size bytes.
func (Format) Open(r io.ReaderAt, size int64) (trace.Reader, error) {
	f, err := NewFile(r, size)
	if err != nil {
		return nil, err
	}
	return NewReader(f), nil
}

// tickClock converts one event section's ticks to nanoseconds.
type tickClock struct {
	hz    uint64
	mul   uint64  // 1e9/hz when that is exact, else 0
	scale float64 // 1e9/hz, for a first guess at the quotient
}

func newTickClock(hz uint64) tickClock {
	c := tickClock{hz: hz, scale: 1e9 / float64(hz)}
	if 1e9%hz == 0 {
		c.mul = 1e9 / hz
	}
	return c
}

// time converts ticks to nanoseconds, floor(ticks·1e9/hz), saturating at
// the largest Time.
func (c tickClock) time(ticks uint64) trace.Time {
	if c.mul == 1 {
		if ticks > math.MaxInt64 {
			return math.MaxInt64
		}
		return trace.Time(ticks)
	}
	if c.mul != 0 {
		hi, lo := bits.Mul64(ticks, c.mul)
		if hi != 0 || lo > math.MaxInt64 {
			return math.MaxInt64
		}
		return trace.Time(lo)
	}
	hi, lo := bits.Mul64(ticks, 1e9)
	if hi >= c.hz {
		return math.MaxInt64
	}
	if ticks < 1<<52 {
		// A division costs ten multiplications: guess the quotient in
		// floating point (off by a few at most for these magnitudes),
		// then correct it exactly, falling back to dividing.
		q := uint64(float64(ticks) * c.scale)
		for range 4 {
			qh, ql := bits.Mul64(q, c.hz)
			if qh > hi || qh == hi && ql > lo {
				q--
				continue
			}
			rl, b := bits.Sub64(lo, ql, 0)
			rh, _ := bits.Sub64(hi, qh, b)
			if rh == 0 && rl < c.hz {
				return trace.Time(min(q, math.MaxInt64))
			}
			q++
		}
	}
	q, _ := bits.Div64(hi, lo, c.hz)
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return trace.Time(q)
}

func sortRecords(recs []sortedRecord) {
	slices.SortStableFunc(recs, func(a, b sortedRecord) int { return cmp.Compare(a.time, b.time) })
}

// idMap maps a file's 32-bit ids to dense table indexes: a slice for small
// ids, a map for the rest.
type idMap struct {
	dense  []int32
	sparse map[uint32]int32
}

const maxDenseID = 1 << 16

func (m *idMap) get(id uint32) (int32, bool) {
	if id < uint32(len(m.dense)) {
		v := m.dense[id]
		return v, v >= 0
	}
	v, ok := m.sparse[id]
	return v, ok
}

func (m *idMap) set(id uint32, v int32) {
	if id < maxDenseID {
		for uint32(len(m.dense)) <= id {
			m.dense = append(m.dense, -1)
		}
		m.dense[id] = v
		return
	}
	if m.sparse == nil {
		m.sparse = map[uint32]int32{}
	}
	m.sparse[id] = v
}

// typeInfo is what labels need about an event type.
type typeInfo struct {
	code    uint32
	name    string // rendered name
	format  string // datum format
	datum   *vppfmt.Format
	verb    byte // the datum format's first conversion
	hasText bool // the format has a non-space character (g2 shows ": datum")
}

// cursor walks one event section in time order.
type cursor struct {
	es       *eventSection
	i        int    // next record
	buf      []byte // records [bufStart, bufStart+len(buf)/recordSize)
	bufStart int
	chunk    int        // records per read
	next     trace.Time // time of record i, for merging
}

// Reader is the [trace.Reader] of a CPEL file: it merges the file's event
// sections in time order.
type Reader struct {
	f       *File
	meta    trace.Meta
	printer vppfmt.Printer
	big     bool // byte order, for the hot path

	cursors []*cursor // in file order
	heap    []*cursor // cursors with events left, a min-heap by (next, section)
	single  *cursor   // the only cursor, when there is one

	types  idMap
	tracks idMap
	// info holds a []typeInfo by TypeID. ReadEvent swaps in a longer one
	// when it meets an undefined event code; entries already there never
	// change, so AppendPayloadDetails may read it on other goroutines.
	info  atomic.Pointer[[]typeInfo]
	err   error // sticky end-of-reading error
	arena arena // for Details
	// ReadEventsByTrack's state: per TrackID its group in the batch
	// being read + 1 (0 for none), each record's group, each group's
	// next place, the events of a batch read in time order before they
	// are grouped (the merging paths only), and per track id the group
	// again (group without the lookup of the TrackID, for ids below
	// maxDenseID).
	group   []int32
	gid     []int32
	cur     []int32
	ordered []trace.Event
	idGroup []int32
	// offBase is the payload offset the last batch's offsets are
	// relative to (EventBase); held is the event the merging path read
	// but left for the next batch, when hasHeld.
	offBase int64
	held    trace.Event
	hasHeld bool
	// grouping is the scratch of ReadEventsByTrack's one pass over the
	// only section's records.
	grouping grouping
	// win maps the only section's records for ReadEventsByTrack
	// (window.go); nil where they are read with ReadAt.
	win *window
}

// NewReader returns a reader over f's events.
func NewReader(f *File) *Reader {
	r := &Reader{f: f, printer: vppfmt.Printer{Dialect: vppfmt.C, Symbols: f.Symbols}}
	r.info.Store(new([]typeInfo))
	r.big = f.ByteOrder.Uint16([]byte{1, 0}) == 0x100
	m := &r.meta
	m.Format = "cpel"
	m.Version = f.Version
	m.Clock = trace.Clock{TicksPerSecond: 1e9}
	bo := "big-endian"
	if !r.big {
		bo = "little-endian"
	}
	m.Info = []trace.KeyValue{
		{Key: "file_date", Value: f.DateTime().Format("2006-01-02T15:04:05Z")},
		{Key: "byte_order", Value: bo},
		{Key: "sections", Value: strconv.Itoa(len(f.Sections))},
		{Key: "symbols", Value: strconv.Itoa(f.Symbols.Len())},
	}
	for i, es := range f.events {
		m.Info = append(m.Info, trace.KeyValue{
			Key:   "event_section_" + strconv.Itoa(i),
			Value: fmt.Sprintf("%d events, %d ticks/s, string table %q, at byte %d", es.n, es.sec.TicksPerSecond, es.sec.Strtab, es.sec.Off),
		})
	}
	m.Notices = slices.Clone(f.Notices)

	defs := slices.Clone(f.TrackDefs)
	slices.SortFunc(defs, func(a, b TrackDef) int { return cmp.Compare(a.ID, b.ID) })
	for _, d := range defs {
		r.addTrack(d.ID, r.render(d.Format, d.ID))
	}
	edefs := slices.Clone(f.EventDefs)
	slices.SortFunc(edefs, func(a, b EventDef) int { return cmp.Compare(a.Code, b.Code) })
	for _, d := range edefs {
		r.addType(d.Code, r.render(d.Name, d.Code), d.Format)
	}

	budget := maxBufferedBytes / max(1, len(f.events))
	for _, es := range f.events {
		if es.n == 0 {
			continue
		}
		chunk := max(1, min(chunkBytes, budget)/recordSize)
		c := &cursor{es: es, chunk: chunk, next: es.first}
		r.cursors = append(r.cursors, c)
		m.Markers = append(m.Markers, trace.Marker{Kind: trace.MarkerSection, Time: es.first, Off: es.sec.Off})
	}
	slices.SortStableFunc(m.Markers, func(a, b trace.Marker) int { return cmp.Compare(a.Time, b.Time) })
	if len(r.cursors) == 1 {
		r.single = r.cursors[0]
		if f := mapFile(f.r); f != nil && mapsFiles && r.single.es.sortedAt == nil {
			r.win = &window{f: f, size: windowBytes}
			// A reader left before its end (a load cancelled) unmaps
			// its window when collected.
			runtime.AddCleanup(r, (*window).release, r.win)
		}
	} else {
		r.heap = slices.Clone(r.cursors)
		for i := len(r.heap)/2 - 1; i >= 0; i-- {
			r.down(i)
		}
	}
	return r
}

// render applies a name or track format to its code: "cpu %d" on track 2
// is "cpu 2", as cpeldump shows it.
func (r *Reader) render(format string, code uint32) string {
	if !strings.Contains(format, "%") {
		return format
	}
	return string(r.printer.Append(nil, format, vppfmt.Uint(uint64(code), 32)))
}

func (r *Reader) addTrack(id uint32, name string) trace.TrackID {
	t := trace.TrackID(len(r.meta.Tracks))
	r.meta.Tracks = append(r.meta.Tracks, trace.Track{
		Kind: trace.TrackOther, Name: name, PID: -1, TID: -1, CPU: trace.NoCPU, Parent: trace.NoTrack, Code: int64(id),
	})
	r.tracks.set(id, int32(t))
	return t
}

func (r *Reader) addType(code uint32, name, format string) trace.TypeID {
	t := trace.TypeID(len(r.meta.Types))
	r.meta.Types = append(r.meta.Types, trace.EventType{Name: name, ID: int64(code), Message: format,
		Fields: []trace.FieldSpec{{Name: "datum", Type: "u32"}}})
	df := r.printer.Compile(format)
	info := append(r.infos(), typeInfo{
		code: code, name: name, format: format, datum: df,
		verb:    df.FirstVerb(),
		hasText: strings.TrimLeft(format, " ") != "",
	})
	r.info.Store(&info)
	r.types.set(code, int32(t))
	return t
}

// infos returns the type table, indexed by TypeID.
func (r *Reader) infos() []typeInfo { return *r.info.Load() }

// Undefined tracks and event codes get these (NOTES.md §names):
// "track 1000", and "E77" with the datum in hex.
const (
	undefinedTrack  = "track "
	undefinedEvent  = "E"
	undefinedFormat = "0x%08x"
)

// track returns the track of a track id; the common case inlines.
func (r *Reader) track(id uint32) trace.TrackID {
	if d := r.tracks.dense; id < uint32(len(d)) {
		if v := d[id]; v >= 0 {
			return trace.TrackID(v)
		}
	}
	return r.trackSlow(id)
}

func (r *Reader) trackSlow(id uint32) trace.TrackID {
	if t, ok := r.tracks.get(id); ok {
		return trace.TrackID(t)
	}
	return r.addTrack(id, undefinedTrack+strconv.FormatUint(uint64(id), 10))
}

// typ returns the type of an event code; the common case inlines.
func (r *Reader) typ(code uint32) trace.TypeID {
	if d := r.types.dense; code < uint32(len(d)) {
		if v := d[code]; v >= 0 {
			return trace.TypeID(v)
		}
	}
	return r.typSlow(code)
}

func (r *Reader) typSlow(code uint32) trace.TypeID {
	if t, ok := r.types.get(code); ok {
		return trace.TypeID(t)
	}
	return r.addType(code, undefinedEvent+strconv.FormatUint(uint64(code), 10), undefinedFormat)
}

// File returns the parsed file.
func (r *Reader) File() *File { return r.f }

// Meta returns the reader's tables.
func (r *Reader) Meta() *trace.Meta { return &r.meta }

// Stack returns nil: CPEL events have no stacks.
func (r *Reader) Stack(trace.StackID) []uint64 { return nil }

// Labels returns nil: CPEL events have no labels.
func (r *Reader) Labels(trace.LabelsID) []trace.Label { return nil }

// less orders cursors by next time, then by file order.
func (r *Reader) less(a, b *cursor) bool {
	if a.next != b.next {
		return a.next < b.next
	}
	return a.es.index < b.es.index
}

func (r *Reader) down(i int) {
	h := r.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if l+1 < len(h) && r.less(h[l+1], h[l]) {
			m = l + 1
		}
		if !r.less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// fill reads the chunk that holds record c.i.
func (r *Reader) fill(c *cursor) error {
	k := min(c.chunk, c.es.n-c.i)
	if cap(c.buf) < k*recordSize {
		c.buf = make([]byte, k*recordSize)
	}
	c.buf = c.buf[:k*recordSize]
	off := c.es.dataOff + int64(c.i)*recordSize
	if _, err := r.f.r.ReadAt(c.buf, off); err != nil {
		c.buf = c.buf[:0]
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return formatErr(off, "event records", trace.ErrTruncated)
		}
		return err
	}
	c.bufStart = c.i
	return nil
}

func (r *Reader) u32(b []byte) uint32 {
	if r.big {
		return uint32(b[3]) | uint32(b[2])<<8 | uint32(b[1])<<16 | uint32(b[0])<<24
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// ReadEvent returns the next event in time order.
func (r *Reader) ReadEvent() (trace.Event, error) {
	// Fast path: the only section, records left in its buffer.
	if c := r.single; c != nil {
		if j := (c.i - c.bufStart) * recordSize; j >= 0 && j+recordSize <= len(c.buf) {
			// decode, by hand: building the result in place avoids copying
			// it, which costs more than the decoding.
			es := c.es
			ticks, id, code := eventRecord(c.buf[j:j+recordSize], r.big)
			t := trace.Time(ticks)
			if es.clock.mul != 1 || ticks > math.MaxInt64 {
				t = es.clock.time(ticks)
			}
			i := c.i
			c.i++
			// track and typ, inlined by hand.
			tr, ty := trace.TrackID(-1), trace.TypeID(-1)
			if d := r.tracks.dense; id < uint32(len(d)) {
				tr = trace.TrackID(d[id])
			}
			if tr < 0 {
				tr = r.trackSlow(id)
			}
			if d := r.types.dense; code < uint32(len(d)) {
				ty = trace.TypeID(d[code])
			}
			if ty < 0 {
				ty = r.typSlow(code)
			}
			return trace.Event{
				Time: t, Track: tr, Type: ty, Capture: trace.NoTrack, CPU: trace.NoCPU,
				Payload: trace.Loc{Off: es.dataOff + int64(i)*recordSize + datumOffInRecord, Len: 4},
			}, nil
		}
	}
	return r.readSlow()
}

// eventRecord decodes the header of an event record (b holds at least
// recordSize bytes): its time in ticks, track id and event code. Small
// enough to be inlined on the reading paths.
func eventRecord(b []byte, big bool) (ticks uint64, id, code uint32) {
	if big {
		return binary.BigEndian.Uint64(b), binary.BigEndian.Uint32(b[8:]), binary.BigEndian.Uint32(b[12:])
	}
	return uint64(binary.LittleEndian.Uint32(b))<<32 | uint64(binary.LittleEndian.Uint32(b[4:])), binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[12:])
}

// ReadEvents fills dst with the next events, as ReadEvent would return
// them one by one, and returns how many: err is nil while events remain,
// else what ended reading after them (io.EOF at the end). Records are
// decoded straight into dst (`viewer stats` reads so; the index reads
// ReadEventsByTrack).
func (r *Reader) ReadEvents(dst []trace.Event) (int, error) {
	n := 0
	for n < len(dst) {
		if c := r.single; c != nil {
			es := c.es
			dense, types := r.tracks.dense, r.types.dense
			for ; n < len(dst); n++ {
				j := (c.i - c.bufStart) * recordSize
				if j < 0 || j+recordSize > len(c.buf) {
					break
				}
				ticks, id, code := eventRecord(c.buf[j:j+recordSize], r.big)
				t := trace.Time(ticks)
				if es.clock.mul != 1 || ticks > math.MaxInt64 {
					t = es.clock.time(ticks)
				}
				tr, ty := trace.TrackID(-1), trace.TypeID(-1)
				if id < uint32(len(dense)) {
					tr = trace.TrackID(dense[id])
				}
				if tr < 0 {
					tr = r.trackSlow(id)
					dense = r.tracks.dense
				}
				if code < uint32(len(types)) {
					ty = trace.TypeID(types[code])
				}
				if ty < 0 {
					ty = r.typSlow(code)
					types = r.types.dense
				}
				e := &dst[n]
				*e = trace.Event{
					Time: t, Track: tr, Type: ty, Capture: trace.NoTrack, CPU: trace.NoCPU,
					Payload: trace.Loc{Off: es.dataOff + int64(c.i)*recordSize + datumOffInRecord, Len: 4},
				}
				c.i++
			}
			if n == len(dst) {
				break
			}
		}
		e, err := r.readSlow()
		if err != nil {
			return n, err
		}
		dst[n] = e
		n++
	}
	return n, nil
}

// ReadEventsByTrack reads the next events as ReadEvents does, grouped by
// track, and stores of each only what differs from EventBase: its time,
// type and payload offset, in times, types and offs (of one length), the
// offset less EventBase's (the batch's payloads lie within 4 GB: 4 bytes
// an event fewer to hand over took ~7 % off an 8M-event file's load). It
// appends to tracks and counts the batch's tracks, in the order of their
// first events, and how many events each has, so that the first
// counts[0] entries are the events of tracks[0], the next counts[1]
// those of tracks[1], and so on, each group in time order. It may
// return fewer events than there is room for while events remain: it
// reads at most the records of one chunk of the file (or of the window
// that maps them, see window.go), grouping them as it decodes them,
// without making their events (readRecords; the index reads CPEL files
// so, see render's build.go).
func (r *Reader) ReadEventsByTrack(times []trace.Time, types []trace.TypeID, offs []uint32, tracks []trace.TrackID, counts []int32) (int, []trace.TrackID, []int32, error) {
	room := min(len(times), len(types), len(offs), maxBatch)
	c := r.single
	if c == nil || c.es.sortedAt != nil || r.err != nil || room == 0 {
		return r.readGrouping(times[:room], types[:room], offs[:room], tracks, counts)
	}
	if c.i >= c.es.n {
		_, err := r.end()
		return 0, tracks, counts, err
	}
	if recs := r.win.records(c.es, c.i); recs != nil {
		return r.readMapped(c, recs, times[:room], types[:room], offs[:room], tracks, counts)
	}
	if c.i-c.bufStart >= len(c.buf)/recordSize || c.i < c.bufStart {
		if err := r.fill(c); err != nil {
			r.err = err
			return 0, tracks, counts, err
		}
	}
	return r.readRecords(c, c.buf[(c.i-c.bufStart)*recordSize:], times[:room], types[:room], offs[:room], tracks, counts)
}

// readRecords is ReadEventsByTrack for the records recs of the only section,
// from record c.i on: it reads as many as times has room for.
//
// It groups them in one pass over the records where it can: each record
// is decoded once, in reading order (so that the tracks and types not
// met before are added in that order, as ReadEvent adds them), and
// stored at its group's next place in the scratch (grouping), whose
// spans the groups take as they fill them, the first sized from the
// track's share of the batch that last had it (a file's tracks keep
// their rates from batch to batch); then each group's spans are copied
// into times, types and offs after the previous group's. The copy is of
// a batch in the cache, and costs less than the pass that counted each
// group before the records were decoded (two passes over the records,
// and each record's group stored and loaded between them). Where the
// scratch runs out (tracks appearing, rates shifting), the batch's other
// records are grouped in those two passes: counted, then stored after
// what the scratch holds of their groups; and a batch after one of many
// small groups (see manySpans) is grouped in two passes from the start.
//
// Grouping alone (BenchmarkGrouping, 100 tracks): 7.6 ns an event in two
// passes, 3.4 in one.
func (r *Reader) readRecords(c *cursor, recs []byte, times []trace.Time, types []trace.TypeID, offs []uint32, tracks []trace.TrackID, counts []int32) (int, []trace.TrackID, []int32, error) {
	room := min(len(times), len(types), len(offs))
	n := min(room, len(recs)/recordSize)
	recs = recs[:n*recordSize]
	big := r.big
	es := c.es
	r.offBase = es.dataOff + int64(c.i)*recordSize + datumOffInRecord
	k0 := len(tracks)
	gr := &r.grouping
	gr.reset(n)
	gr.raw = es.clock.mul != 1
	m := 0
	if gr.groups*manySpans <= len(gr.times) {
		m, tracks, counts = r.onePass(es, recs, tracks, counts, k0)
	}
	idg := r.idGroup
	tdense := r.types.dense
	exact := es.clock.mul == 1
	stimes, stypes, soffs := gr.times, gr.types, gr.offs
	// What the scratch holds of each group.
	for k := range gr.places {
		pl, a := &gr.places[k], gr.cursor(k)
		gr.spans[pl.last].hi = a.cur
		counts[k0+k] = pl.got - (a.lim - a.cur)
		*a = at{}
	}
	// The scratch ran out at record m: the rest counted (pass 1).
	var gid []int32
	if m < n {
		gid = slices.Grow(r.gid[:0], n-m)[:n-m]
		for i := range gid {
			id := rec32(recs[(m+i)*recordSize+8:], big)
			g := int32(0)
			if id < uint32(len(idg)) {
				g = idg[id]
			}
			if g == 0 {
				g, tracks, counts = r.newGroup(id, tracks, counts, k0)
				idg = r.idGroup
			}
			counts[k0+int(g)-1]++
			gid[i] = g - 1
		}
		r.gid = gid
	}
	for k, tr := range tracks[k0:] {
		for int(tr) >= len(gr.shares) {
			gr.shares = append(gr.shares, share{})
		}
		gr.shares[tr] = share{counts[k0+k], int32(n)}
	}
	gr.groups = len(tracks) - k0
	cur := r.starts(tracks[k0:], counts[k0:])
	for k := range gr.places {
		at := cur[k]
		for s := gr.places[k].first; s >= 0; s = gr.spans[s].next {
			sp := gr.spans[s]
			if gr.raw {
				for i, t := range stimes[sp.lo:sp.hi] {
					times[at+int32(i)] = es.clock.time(uint64(t))
				}
			} else {
				copy(times[at:], stimes[sp.lo:sp.hi])
			}
			copy(types[at:], stypes[sp.lo:sp.hi])
			copy(offs[at:], soffs[sp.lo:sp.hi])
			at += sp.hi - sp.lo
		}
		cur[k] = at
	}
	// Pass 2 over the rest, in reading order again.
	for i, g := range gid {
		j := m + i
		ticks, _, code := eventRecord(recs[j*recordSize:j*recordSize+recordSize], big)
		t := trace.Time(ticks)
		if !exact || ticks > math.MaxInt64 {
			t = es.clock.time(ticks)
		}
		ty := trace.TypeID(-1)
		if code < uint32(len(tdense)) {
			ty = trace.TypeID(tdense[code])
		}
		if ty < 0 {
			ty = r.typSlow(code)
			tdense = r.types.dense
		}
		p := cur[g]
		cur[g] = p + 1
		times[p], types[p], offs[p] = t, ty, uint32(j*recordSize) // < maxBatch·recordSize
	}
	c.i += n
	return n, tracks, counts, nil
}

// onePass stores the events of records recs, in reading order, in the
// scratch at their groups' places (readRecords), and returns how many
// it stored: fewer than recs holds when the scratch ran out. The groups
// it makes are appended to tracks and counts, the batch's from k0 on.
// Its times are the records' ticks where the section's clock is not in
// nanoseconds (converted as they are copied out, see raw).
//
// The loop calls nothing, so that what it needs stays in registers: it
// leaves the record of a group not met yet in the batch, a full span,
// a type not met yet and a time past the largest to slowStep, which
// stores it as the loop would, and goes on after it.
func (r *Reader) onePass(es *eventSection, recs []byte, tracks []trace.TrackID, counts []int32, k0 int) (int, []trace.TrackID, []int32) {
	gr := &r.grouping
	gr.tracks, gr.counts, gr.k0, gr.n = tracks, counts, k0, len(recs)/recordSize
	stimes := gr.times
	stypes, soffs := gr.types[:len(stimes)], gr.offs[:len(stimes)]
	big := r.big
	rest := recs
	off := uint32(0) // < maxBatch·recordSize
	for len(rest) >= recordSize {
		byID, tdense := gr.byID, r.types.dense
		for ; len(rest) >= recordSize; rest = rest[recordSize:] {
			ticks, id, code := eventRecord(rest[:recordSize], big)
			if int(id) >= len(byID) || int(code) >= len(tdense) || int64(ticks) < 0 {
				break
			}
			ty := tdense[code]
			if ty < 0 {
				break
			}
			// The place of a track without a group is full.
			a := &byID[id]
			p := int(a.cur)
			if p == int(a.lim) || uint(p) >= uint(len(stimes)) {
				break
			}
			a.cur = int32(p + 1)
			stimes[p], stypes[p], soffs[p] = trace.Time(ticks), trace.TypeID(ty), off
			off += recordSize
		}
		if len(rest) < recordSize || !r.slowStep(es, rest[:recordSize], off) {
			break
		}
		rest = rest[recordSize:]
		off += recordSize
	}
	tracks, counts = gr.tracks, gr.counts
	gr.tracks, gr.counts = nil, nil
	return int(off / recordSize), tracks, counts
}

// slowStep is onePass for the record rec at offset off; false when the
// scratch ran out (the record not stored).
func (r *Reader) slowStep(es *eventSection, rec []byte, off uint32) bool {
	gr := &r.grouping
	ticks, id, code := eventRecord(rec, r.big)
	g := int32(0)
	if int(id) < len(r.idGroup) {
		g = r.idGroup[id]
	}
	if g == 0 {
		if g = r.enter(id); g == 0 {
			return false
		}
	}
	a := gr.cursor(int(g - 1))
	if a.cur == a.lim && !gr.grow(int(g-1)) {
		return false
	}
	t := trace.Time(ticks)
	if !gr.raw && ticks > math.MaxInt64 {
		t = es.clock.time(ticks)
	}
	p := a.cur
	a.cur = p + 1
	gr.times[p], gr.types[p], gr.offs[p] = t, r.typ(code), off
	return true
}

// enter returns the group of the record of track id that onePass meets
// when id has no group in idGroup (a track not met yet in the batch, or
// an id too large for idGroup), making it when it is new, and giving it
// its first span; 0 when there is no room left for that.
func (r *Reader) enter(id uint32) int32 {
	gr := &r.grouping
	var g int32
	g, gr.tracks, gr.counts = r.newGroup(id, gr.tracks, gr.counts, gr.k0)
	if int(g) > len(gr.places) && !gr.open(gr.tracks[len(gr.tracks)-1], id, gr.n) {
		return 0
	}
	return g
}

// grouping is readRecords' scratch: the events of a batch, decoded in
// reading order, stored at their groups' places. A group's places are
// spans of the scratch, one after another, the first sized from the
// share of the batch its track had in the last batch that had it, each
// next from what the group took before.
type grouping struct {
	times  []trace.Time
	types  []trace.TypeID
	offs   []uint32
	top    int32   // the scratch's first place no span holds
	spans  []span  // in the order they were taken
	places []place // per group of the batch: its spans
	// Where each group's next event goes (see cursor): per track id
	// below maxDenseID, for the loop (zero, full, for none); per group
	// for the others.
	byID []at
	at   []at
	// raw says that times holds ticks, not yet in nanoseconds.
	raw bool
	// The batch's groups while onePass reads, and its size.
	tracks []trace.TrackID
	counts []int32
	k0, n  int
	// groups is how many groups the last batch had.
	groups int
	// shares holds per TrackID its events in the last batch that had
	// it, and that batch's size (0 for none).
	shares []share
}

// span is the stretch [lo, hi) of the scratch, and the index in spans
// of its group's next (-1 for none).
type span struct{ lo, hi, next int32 }

// at is where a group's next event goes in the scratch: cur, in its
// last span, which ends at lim.
type at struct{ cur, lim int32 }

// place is what a group's spans hold: got places, the first and the
// last indexed in spans; and the group's track id, which indexes its at
// in byID when dense.
type place struct {
	got, first, last int32
	id               uint32
	dense            bool
}

// cursor returns where group k's next event goes.
func (g *grouping) cursor(k int) *at {
	if pl := &g.places[k]; pl.dense {
		return &g.byID[pl.id]
	}
	return &g.at[k]
}

// share is a track's events in a batch of of events.
type share struct{ events, of int32 }

// manySpans is what a group costs in the scratch, in places, for the
// one pass to pay: where the last batch's groups would fill the scratch
// with that many each, they are small (a few events each in a batch
// spread over thousands of tracks), and the copies of their spans cost
// more than the pass saves; readRecords groups the batch in two passes.
const manySpans = 2 * minSpan

// minSpan is the fewest places a span holds (unless the scratch is out
// of fewer).
const minSpan = 16

// reset empties the scratch for a batch of n events: room for twice n,
// so that spans sized from estimates seldom run out (only the places
// spans take are touched).
func (g *grouping) reset(n int) {
	size := 2*n + 4*minSpan
	if len(g.times) < size {
		g.times, g.types, g.offs = make([]trace.Time, size), make([]trace.TypeID, size), make([]uint32, size)
	}
	g.top, g.spans, g.at, g.places = 0, g.spans[:0], g.at[:0], g.places[:0]
}

// open gives the batch's next group, of track tr with id id, its first
// span: its estimated events in a batch of n and an eighth more; false
// (no span) when the scratch is full.
func (g *grouping) open(tr trace.TrackID, id uint32, n int) bool {
	want := int64(minSpan)
	if int(tr) < len(g.shares) {
		if s := g.shares[tr]; s.of > 0 {
			e := int64(s.events) * int64(n) / int64(s.of)
			want += e + e/8
		}
	}
	s, ok := g.take(want)
	if !ok {
		return false
	}
	k := int32(len(g.spans) - 1)
	dense := id < maxDenseID
	g.places = append(g.places, place{got: s.hi - s.lo, first: k, last: k, id: id, dense: dense})
	g.at = append(g.at, at{s.lo, s.hi})
	if dense {
		for uint32(len(g.byID)) <= id {
			g.byID = append(g.byID, at{})
		}
		g.byID[id] = at{s.lo, s.hi}
	}
	return true
}

// grow gives group k, whose last span is full, the next: a quarter of
// what it took before; false when the scratch is full.
func (g *grouping) grow(k int) bool {
	pl := &g.places[k]
	s, ok := g.take(int64(max(minSpan, pl.got/4)))
	if !ok {
		return false
	}
	j := int32(len(g.spans) - 1)
	g.spans[pl.last].next = j
	*g.cursor(k) = at{s.lo, s.hi}
	pl.got, pl.last = pl.got+s.hi-s.lo, j
	return true
}

// take appends to spans a span of want places, or of those left when
// fewer, and returns it; false when none are left.
func (g *grouping) take(want int64) (span, bool) {
	left := int64(len(g.times)) - int64(g.top)
	if left <= 0 {
		return span{}, false
	}
	s := span{lo: g.top, hi: g.top + int32(min(want, left)), next: -1}
	g.top = s.hi
	g.spans = append(g.spans, s)
	return s, true
}

// newGroup returns the group of track id in the batch being read, whose
// groups are tracks[k0:] and counts[k0:], making one when the track has
// none yet (and the track, when it is new).
func (r *Reader) newGroup(id uint32, tracks []trace.TrackID, counts []int32, k0 int) (int32, []trace.TrackID, []int32) {
	g, tracks, counts := r.groupOf(r.track(id), tracks, counts, k0)
	if id < maxDenseID {
		for uint32(len(r.idGroup)) <= id {
			r.idGroup = append(r.idGroup, 0)
		}
		r.idGroup[id] = g
	}
	return g, tracks, counts
}

// groupOf returns the group of track tr in the batch being read, whose
// groups are tracks[k0:] and counts[k0:], making one when it has none.
func (r *Reader) groupOf(tr trace.TrackID, tracks []trace.TrackID, counts []int32, k0 int) (int32, []trace.TrackID, []int32) {
	for int(tr) >= len(r.group) {
		r.group = append(r.group, 0)
	}
	g := r.group[tr]
	if g == 0 {
		tracks, counts = append(tracks, tr), append(counts, 0)
		g = int32(len(tracks) - k0)
		r.group[tr] = g
	}
	return g, tracks, counts
}

// rec32 decodes a 32-bit field of a record.
func rec32(b []byte, big bool) uint32 {
	if big {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

// starts ends the grouping of a batch whose groups are tracks and
// counts: it clears the tracks' entries in r.group for the next batch
// and returns each group's first place in the batch.
func (r *Reader) starts(tracks []trace.TrackID, counts []int32) []int32 {
	cur, at := r.cur[:0], int32(0)
	for k, tr := range tracks {
		r.group[tr] = 0
		if id := r.meta.Tracks[tr].Code; id < int64(len(r.idGroup)) {
			r.idGroup[id] = 0
		}
		cur = append(cur, at)
		at += counts[k]
	}
	r.cur = cur
	return cur
}

// EventBase returns the fields every event has but its time, track, type
// and payload offset (see ReadEventsByTrack).
func (r *Reader) EventBase() trace.Event {
	return trace.Event{Capture: trace.NoTrack, CPU: trace.NoCPU, Payload: trace.Loc{Off: r.offBase, Len: 4}}
}

// maxBatch is the most events ReadEventsByTrack reads at once: their
// records' offsets from the first fit in 32 bits.
const maxBatch = math.MaxUint32 / recordSize

// readGrouping is ReadEventsByTrack where events do not come from one
// section's buffer (sections merged, or sorted at open): it reads them
// one by one and groups them after. The batch ends before an event whose
// payload lies 4 GB or more from another's (sections of a large file
// merged), which waits for the next.
func (r *Reader) readGrouping(times []trace.Time, types []trace.TypeID, offs []uint32, tracks []trace.TrackID, counts []int32) (int, []trace.TrackID, []int32, error) {
	if cap(r.ordered) < len(times) {
		r.ordered = make([]trace.Event, len(times))
	}
	evs := r.ordered[:len(times)]
	n := 0
	var err error
	lo, hi := int64(0), int64(0)
	for n < len(evs) {
		var e trace.Event
		if r.hasHeld {
			e, r.hasHeld = r.held, false
		} else if e, err = r.ReadEvent(); err != nil {
			break
		}
		if o := e.Payload.Off; n == 0 {
			lo, hi = o, o
		} else if max(hi, o)-min(lo, o) > math.MaxUint32 {
			r.held, r.hasHeld = e, true
			break
		} else {
			lo, hi = min(lo, o), max(hi, o)
		}
		evs[n] = e
		n++
	}
	evs = evs[:n]
	r.offBase = lo
	k0 := len(tracks)
	gid := slices.Grow(r.gid[:0], n)[:n]
	for i := range evs {
		var g int32
		g, tracks, counts = r.groupOf(evs[i].Track, tracks, counts, k0)
		counts[k0+int(g)-1]++
		gid[i] = g - 1
	}
	r.gid = gid
	cur := r.starts(tracks[k0:], counts[k0:])
	for i, g := range gid {
		e := &evs[i]
		p := cur[g]
		times[p], types[p], offs[p] = e.Time, e.Type, uint32(e.Payload.Off-lo)
		cur[g]++
	}
	return n, tracks, counts, err
}

func (r *Reader) readSlow() (trace.Event, error) {
	if r.err != nil {
		return trace.Event{}, r.err
	}
	c := r.single
	if c == nil {
		if len(r.heap) == 0 {
			return r.end()
		}
		c = r.heap[0]
	} else if c.i >= c.es.n {
		return r.end()
	}
	es := c.es
	var e trace.Event
	if es.sortedAt != nil {
		s := &es.sortedAt[c.i]
		e = trace.Event{
			Time: s.time, Track: r.track(s.track), Type: r.typ(s.code), Capture: trace.NoTrack, CPU: trace.NoCPU,
			Payload: trace.Loc{Off: es.dataOff + int64(s.index)*recordSize + datumOffInRecord, Len: 4},
		}
	} else {
		j := c.i - c.bufStart
		if j < 0 || (j+1)*recordSize > len(c.buf) {
			if err := r.fill(c); err != nil {
				r.err = err
				return trace.Event{}, err
			}
			j = 0
		}
		e = r.decode(es, c.buf[j*recordSize:(j+1)*recordSize], c.i)
	}
	c.i++
	if r.single == nil {
		if err := r.advance(c); err != nil {
			r.err = err // the event read is complete; the error comes next
		}
	}
	return e, nil
}

// decode makes the event of record i of es, stored in b.
func (r *Reader) decode(es *eventSection, b []byte, i int) trace.Event {
	var ticks uint64
	var id, code uint32
	if r.big {
		ticks, id, code = binary.BigEndian.Uint64(b), binary.BigEndian.Uint32(b[8:]), binary.BigEndian.Uint32(b[12:])
	} else {
		ticks = uint64(binary.LittleEndian.Uint32(b))<<32 | uint64(binary.LittleEndian.Uint32(b[4:]))
		id, code = binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[12:])
	}
	t := trace.Time(ticks)
	if es.clock.mul != 1 || ticks > math.MaxInt64 {
		t = es.clock.time(ticks)
	}
	return trace.Event{
		Time: t, Track: r.track(id), Type: r.typ(code), Capture: trace.NoTrack, CPU: trace.NoCPU,
		Payload: trace.Loc{Off: es.dataOff + int64(i)*recordSize + datumOffInRecord, Len: 4},
	}
}

// advance sets a merged cursor's next time and restores the heap.
func (r *Reader) advance(c *cursor) error {
	if c.i >= c.es.n {
		h := r.heap
		h[0] = h[len(h)-1]
		r.heap = h[:len(h)-1]
		if len(r.heap) > 0 {
			r.down(0)
		}
		return nil
	}
	if c.es.sortedAt != nil {
		c.next = c.es.sortedAt[c.i].time
	} else {
		j := c.i - c.bufStart
		if (j+1)*recordSize > len(c.buf) {
			if err := r.fill(c); err != nil {
				return err
			}
			j = 0
		}
		b := c.buf[j*recordSize:]
		c.next = c.es.clock.time(uint64(r.u32(b))<<32 | uint64(r.u32(b[4:])))
	}
	r.down(0)
	return nil
}

func (r *Reader) end() (trace.Event, error) {
	r.win.release()
	r.err = io.EOF
	if r.f.damage != nil {
		r.err = r.f.damage
	}
	return trace.Event{}, r.err
}

// section returns the event section holding the file offset off.
func (r *Reader) section(off int64) *eventSection {
	ev := r.f.events
	if len(ev) == 1 { // the common case
		if es := ev[0]; off >= es.dataOff && off < es.dataOff+int64(es.n)*recordSize {
			return es
		}
		return nil
	}
	i, _ := slices.BinarySearchFunc(ev, off, func(es *eventSection, off int64) int {
		return cmp.Compare(es.dataOff, off)
	})
	// ev[i-1] is the last section starting at or before off.
	if i > 0 && (i == len(ev) || ev[i].dataOff > off) {
		i--
	}
	if i < len(ev) && off >= ev[i].dataOff && off < ev[i].dataOff+int64(ev[i].n)*recordSize {
		return ev[i]
	}
	return nil
}

// datum returns the datum at off, from a cursor's buffer when it holds it.
func (r *Reader) datum(es *eventSection, off int64) (uint32, error) {
	if c := r.single; c != nil && len(c.buf) > 0 {
		if start := es.dataOff + int64(c.bufStart)*recordSize; off >= start && off+4 <= start+int64(len(c.buf)) {
			return r.u32(c.buf[off-start:]), nil
		}
	}
	for _, c := range r.cursors {
		if c.es != es || len(c.buf) == 0 {
			continue
		}
		start := es.dataOff + int64(c.bufStart)*recordSize
		if off >= start && off+4 <= start+int64(len(c.buf)) {
			return r.u32(c.buf[off-start:]), nil
		}
	}
	var b [4]byte
	if _, err := r.f.r.ReadAt(b[:], off); err != nil {
		return 0, err
	}
	return r.u32(b[:]), nil
}

// Details decodes an event's datum and its label: the event name, then,
// when the datum format has more than spaces, ": " and the datum rendered
// with it (what g2 shows in its popup box). The one field is "datum", the
// number as stored (for %s, the string's offset).
func (r *Reader) Details(e trace.Event) (trace.Details, error) {
	ti, es, d, err := r.locate(e)
	if err != nil {
		return trace.Details{}, err
	}
	a := &r.arena
	a.mu.Lock()
	defer a.mu.Unlock()
	label := ti.name
	if ti.hasText {
		a.scratch = r.appendLabel(a.scratch[:0], ti, es, d)
		label = a.string(a.scratch)
	}
	if len(a.fields) == cap(a.fields) {
		a.fields = make([]trace.Field, 0, arenaFields)
	}
	n := len(a.fields)
	a.fields = append(a.fields, datumField(d))
	return trace.Details{Fields: a.fields[n : n+1 : n+1], Label: label}, nil
}

func datumField(d uint32) trace.Field {
	return trace.Field{Name: "datum", Value: trace.UintValue(uint64(d))}
}

// AppendDetails appends the datum field and the label Details would return
// to fields and label, without allocating once they have room.
func (r *Reader) AppendDetails(fields []trace.Field, label []byte, e trace.Event) ([]trace.Field, []byte, error) {
	ti, es, d, err := r.locate(e)
	if err != nil {
		return fields, label, err
	}
	f, l := r.appendDetails(fields, label, ti, es, d)
	return f, l, nil
}

func (r *Reader) appendDetails(fields []trace.Field, label []byte, ti *typeInfo, es *eventSection, d uint32) ([]trace.Field, []byte) {
	fields = append(fields, datumField(d))
	if !ti.hasText {
		return fields, append(label, ti.name...)
	}
	return fields, r.appendLabel(label, ti, es, d)
}

// ReadEventPayload reads the next event into *e, as ReadEvent returns it,
// and appends its datum as stored in the file (4 bytes in the file's byte
// order) to dst.
func (r *Reader) ReadEventPayload(e *trace.Event, dst []byte) ([]byte, error) {
	ev, err := r.ReadEvent()
	if err != nil {
		return dst, err
	}
	*e = ev
	if c := r.single; c != nil { // the record just read is still in the buffer
		if j := (c.i - 1 - c.bufStart) * recordSize; j >= 0 && j+recordSize <= len(c.buf) {
			return append(dst, c.buf[j+datumOffInRecord:j+datumOffInRecord+4]...), nil
		}
	}
	d, err := r.datum(r.section(ev.Payload.Off), ev.Payload.Off)
	if err != nil {
		return dst, err
	}
	if r.big {
		return binary.BigEndian.AppendUint32(dst, d), nil
	}
	return binary.LittleEndian.AppendUint32(dst, d), nil
}

// AppendPayloadDetails is AppendDetails for an event from ReadEventPayload
// with its datum bytes. It reads only what Open fixed and the type table,
// so it is safe for concurrent use with itself and with ReadEventPayload.
func (r *Reader) AppendPayloadDetails(fields []trace.Field, label []byte, e trace.Event, payload []byte) ([]trace.Field, []byte, error) {
	info := r.infos()
	if e.Type < 0 || int(e.Type) >= len(info) || len(payload) != 4 {
		return fields, label, fmt.Errorf("cpel: event %+v with a %d-byte payload is not from this reader", e, len(payload))
	}
	es := r.section(e.Payload.Off)
	if es == nil {
		return fields, label, fmt.Errorf("cpel: payload offset %d is in no event section", e.Payload.Off)
	}
	f, l := r.appendDetails(fields, label, &info[e.Type], es, r.u32(payload))
	return f, l, nil
}

// DecodeFields stores the datum, every CPEL event's one field (its type's
// Fields[0]), in vals[i] where idx[i] is 0 (trace.FieldsDecoder): a query
// on the datum then skips formatting the label.
func (r *Reader) DecodeFields(e trace.Event, idx []int, vals []trace.Value) error {
	_, _, d, err := r.locate(e)
	if err != nil {
		return err
	}
	for i, f := range idx {
		vals[i] = trace.Value{}
		if f == 0 {
			vals[i] = trace.UintValue(uint64(d))
		}
	}
	return nil
}

// AppendLabel appends the label Details would return to dst, without
// allocating: for renderers and dumps that format many events.
func (r *Reader) AppendLabel(dst []byte, e trace.Event) ([]byte, error) {
	ti, es, d, err := r.locate(e)
	if err != nil {
		return dst, err
	}
	if !ti.hasText {
		return append(dst, ti.name...), nil
	}
	return r.appendLabel(dst, ti, es, d), nil
}

// locate returns an event's type, section and datum.
func (r *Reader) locate(e trace.Event) (*typeInfo, *eventSection, uint32, error) {
	info := r.infos()
	if e.Type < 0 || int(e.Type) >= len(info) || e.Payload.Len != 4 {
		return nil, nil, 0, fmt.Errorf("cpel: event %+v is not from this reader", e)
	}
	es := r.section(e.Payload.Off)
	if es == nil {
		return nil, nil, 0, fmt.Errorf("cpel: payload offset %d is in no event section", e.Payload.Off)
	}
	d, err := r.datum(es, e.Payload.Off)
	if err != nil {
		return nil, nil, 0, err
	}
	return &info[e.Type], es, d, nil
}

// appendLabel appends "name: datum" for a type whose format has text.
func (r *Reader) appendLabel(b []byte, ti *typeInfo, es *eventSection, d uint32) []byte {
	start := len(b)
	b = append(b, ti.name...)
	b = append(b, ": "...)
	b = r.appendDatum(b, ti, es, d)
	if len(b)-start > MaxLabel {
		n := start + MaxLabel
		for n > start && !utf8.RuneStart(b[n]) {
			n--
		}
		b = append(b[:n], "…"...)
	}
	return b
}

// arena hands out labels and fields carved from large blocks, so that
// Details allocates once per thousand events rather than twice per event.
// Labels are substrings of a strings.Builder's text: what it has handed
// out is never written again, and a full builder is replaced, not reused.
type arena struct {
	mu      sync.Mutex
	text    strings.Builder
	scratch []byte
	fields  []trace.Field
}

const (
	arenaBytes  = 64 << 10
	arenaSlack  = 1 << 10 // a block with less room left is replaced
	arenaFields = 1 << 10
)

// string returns b as a string carved from the arena's text.
func (a *arena) string(b []byte) string {
	if a.text.Cap()-a.text.Len() < max(arenaSlack, len(b)) {
		a.text = strings.Builder{}
		a.text.Grow(max(arenaBytes, len(b)))
	}
	start := a.text.Len()
	a.text.Write(b)
	return a.text.String()[start:]
}

// appendDatum renders a datum with its type's format: %s reads the event
// section's string table; every other conversion gets the number.
func (r *Reader) appendDatum(b []byte, ti *typeInfo, es *eventSection, d uint32) []byte {
	arg := vppfmt.Uint(uint64(d), 32)
	if ti.verb == 's' && es.hasTab {
		// Search at most MaxLabel+1 bytes for the string's NUL: no more
		// can show, and a table without NULs must not make every event
		// scan megabytes.
		tab := es.strtab[:min(len(es.strtab), int(min(d, math.MaxInt32))+MaxLabel+1)]
		if s, ok := lookup(tab, d); ok {
			arg = vppfmt.String(s)
		}
	}
	return ti.datum.Append(b, arg)
}
