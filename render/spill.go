package render

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"viewer/trace"
)

// The spill file holds what the index does not keep resident: the part of
// every trace.Event beyond its time. Records are grouped per track in runs
// of up to runRecords events; a run is found by binary search over its
// track's runs and decoded from its start (or from a block, below), in
// place in the mapped file once Build has written it, else read with one
// ReadAt.
//
// A record holds the differences from the same fields of the record it
// is based on of Type, Seq, Capture, CPU, Stack, Labels, Payload.Off and
// Payload.Len: a mask byte whose bit k says field k differs, then the
// differences of those fields, in that order, as zigzag varints. Within
// a thread most fields repeat or step by small amounts, so a record
// takes about 2–10 bytes instead of 36 (a CPEL event, whose payload
// offset alone changes, 3–4), which is what writing 100 million of them
// costs in memory bandwidth and disk. A reader steps over a record by
// its mask and as many varint terminators as the mask has bits.
//
// A record is based on the previous record of the run in the same type
// slot: the slot of an event is its code in the resident type column
// (typeEscape for types ≥ 65535) modulo nSlots, and the base is the
// slot's last record when that record has the same code, else the zero
// Event (as for the first record of a slot in a run). So a reader that
// wants the events of one type decodes only the records of that type's
// slot and steps over the others by their masks and varint
// terminators, without summing their deltas (runReader): a field search
// of one type costs what that type's records do, not the whole run's.
//
// A run ends with its block table: the byte offsets (uint16, from the
// run's start) of its records spillBlock, 2·spillBlock, …, so that a
// reader that wants a record far ahead starts from its block rather than
// stepping over every record before it (decideRun). A search of a rare
// type then touches the bytes around its records, not the whole run.

// maxRecordSize bounds the encoding of one record.
const maxRecordSize = 1 + nFields*binary.MaxVarintLen64

// nFields is the number of fields of a record.
const nFields = 8

// recordFields are the fields of an event that its record holds, in the
// record's order.
type recordFields [nFields]int64

// spillBlock is how many records one entry of a run's block table
// stands for: a reader steps over at most spillBlock-1 records to reach
// one, and the table costs 2/spillBlock bytes per record.
const spillBlock = 16

// A block table's offsets are uint16: a run's records fit in runBuffer
// bytes (this fails to compile when they would not fit).
const _ = uint16(runBuffer - 1)

// blockTableSize returns the bytes of the block table of a run of n
// records.
func blockTableSize(n int) int { return 2 * ((n - 1) / spillBlock) }

// blockTable returns the block table of the run b of n records, and
// where its records end.
func blockTable(b []byte, n int) (table []byte, end int, err error) {
	end = len(b) - blockTableSize(n)
	if n < 1 || end < 0 {
		return nil, 0, fmt.Errorf("render: internal error: a spill run of %d bytes cannot hold %d records", len(b), n)
	}
	return b[end:], end, nil
}

// blockStart returns the byte offset of record k·spillBlock (k ≥ 1) of a
// run from its block table, checked against end, where its records end.
func blockStart(table []byte, k, end int) (int, error) {
	if k < 1 || 2*k > len(table) {
		return 0, fmt.Errorf("render: internal error: block %d of a spill run of %d blocks", k, len(table)/2+1)
	}
	off := int(binary.LittleEndian.Uint16(table[2*(k-1):]))
	if off > end {
		return 0, fmt.Errorf("render: internal error: damaged block table in the spill file")
	}
	return off, nil
}

const (
	// runRecords is how many records a track buffers before writing them
	// as one run.
	runRecords = 1024
	// runBuffer is the capacity of a full-size run buffer: enough for
	// typical records; a run also ends when its buffer is full.
	runBuffer = 16 << 10
	// maxBuffered bounds the bytes buffered over all tracks; past it every
	// buffer is written out (runs then hold fewer records).
	maxBuffered = 4 << 20
)

// putVarint writes v as binary.AppendVarint would, at b[i:], and returns
// the index after it.
func putVarint(b []byte, i int, v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b[i] = byte(u) | 0x80
		u >>= 7
		i++
	}
	b[i] = byte(u)
	return i + 1
}

// decodeRun decodes the n records of a run into dst; codes(r) is the
// type code of record r (the resident type column).
func decodeRun(dst []trace.Event, b []byte, n int, codes func(int) uint16) ([]trace.Event, error) {
	var sr slotRecords
	i := 0
	for r := range n {
		code := codes(r)
		e := sr.base(code)
		var err error
		if i, err = decodeRecord(&e, b, i); err != nil {
			return dst, err
		}
		sr.put(code, &e)
		dst = append(dst, e)
	}
	return dst, nil
}

// skipRecords returns the index after the n records at b[i:] without
// decoding them: past each record's mask and as many varint terminators
// (bytes below 0x80) as the mask has bits; len(b)+1 when b ends first.
func skipRecords(b []byte, i, n int) int {
	for ; n > 0; n-- {
		if i >= len(b) {
			return len(b) + 1 // damaged: decodeRecord will say so
		}
		need := bits.OnesCount8(b[i])
		i++
		for need > 0 && i+8 <= len(b) {
			m := ^binary.LittleEndian.Uint64(b[i:]) & 0x8080808080808080
			if c := bits.OnesCount64(m); c < need {
				need -= c
				i += 8
				continue
			}
			for ; need > 1; need-- {
				m &= m - 1
			}
			i += bits.TrailingZeros64(m)/8 + 1
			need = 0
		}
		for ; need > 0; i++ {
			if i >= len(b) {
				return len(b) + 1
			}
			if b[i] < 0x80 {
				need--
			}
		}
	}
	return i
}

// decodeRecord adds the deltas of the record at b[i:] to *e and returns
// the index after it.
func decodeRecord(e *trace.Event, b []byte, i int) (int, error) {
	if i >= len(b) {
		return i, errDamagedRecord
	}
	var d recordFields
	m := b[i]
	i++
	for ; m != 0; m &= m - 1 {
		k := bits.TrailingZeros8(m)
		if i < len(b) && b[i] < 0x80 {
			c := int64(b[i])
			d[k] = c>>1 ^ -(c & 1)
			i++
			continue
		}
		v, w := binary.Varint(b[min(i, len(b)):])
		if w <= 0 {
			return i, errDamagedRecord
		}
		d[k], i = v, i+w
	}
	e.Type = trace.TypeID(int64(e.Type) + d[0])
	e.Seq = uint32(int64(e.Seq) + d[1])
	e.Capture = trace.TrackID(int64(e.Capture) + d[2])
	e.CPU = int32(int64(e.CPU) + d[3])
	e.Stack = trace.StackID(int64(e.Stack) + d[4])
	e.Labels = trace.LabelsID(int64(e.Labels) + d[5])
	e.Payload.Off += d[6]
	e.Payload.Len = int32(int64(e.Payload.Len) + d[7])
	return i, nil
}

var errDamagedRecord = errors.New("render: internal error: damaged record in the spill file")

// run is a stretch of consecutive records of one track in the spill file.
type run struct {
	first int   // index in the track of the run's first record
	off   int64 // file offset of the run
	size  int32 // bytes
}

// spillTrack is one track's part of the spill file.
type spillTrack struct {
	runs    []run
	buf     []byte     // records not yet written
	k       int        // records in buf
	w       *runWriter // the writer's state (nil once the file is complete)
	n       int        // records written
	counted int        // bytes of buf counted in spill.buffered
	// pending are the runs ended but not yet placed in the file (their
	// offsets in runs not set yet): the last len(pending) runs.
	pending [][]byte
}

// runWriter is what the writer keeps of the run a track is filling.
type runWriter struct {
	// the last record of each type slot, its code and whether the slot
	// has one in this run (bit s of set)
	fields [nSlots]recordFields
	code   [nSlots]uint16
	set    uint64
	blocks [runRecords / spillBlock]uint16 // its block table, as far as it goes
	// based lists the slots (bit s) whose last record has the fields of
	// base but for its type and payload offset: base holds the fields of
	// the grouped batches' base last spilled (addBased), but for those two.
	based uint64
	base  recordFields
}

// appendRecord appends the record of e, of type code, based on its
// slot's last record, and makes it that; b must have room for
// maxRecordSize more bytes.
func (w *runWriter) appendRecord(b []byte, code uint16, e *trace.Event) []byte {
	w.based &^= 1 << (code % nSlots)
	return w.appendWith(b, code, e, int64(e.Type), e.Payload.Off)
}

// setBase makes base the base of the grouped batch's events that
// appendBasedRun encodes next.
func (w *runWriter) setBase(base *trace.Event) {
	if bf := (recordFields{1: int64(base.Seq), 2: int64(base.Capture), 3: int64(base.CPU), 4: int64(base.Stack), 5: int64(base.Labels), 7: int64(base.Payload.Len)}); bf != w.base {
		w.base, w.based = bf, 0
	}
}

// appendWith is appendRecord for the event that is e but for its type ty
// and payload offset off (e is the base of a grouped batch's events, see
// batch.expand, or the event itself). It is spill_test.go's appendRecord
// written out, in place (the copies of the fields cost as much as the
// encoding).
func (w *runWriter) appendWith(b []byte, code uint16, e *trace.Event, ty, off int64) []byte {
	s := code % nSlots
	p := &w.fields[s]
	if w.set>>s&1 == 0 || w.code[s] != code {
		*p = recordFields{}
		w.code[s] = code
		w.set |= 1 << s
	}
	n := len(b)
	b = b[:n+maxRecordSize]
	i, m := n+1, byte(0)
	if v := ty; v != p[0] {
		m, i, p[0] = m|1<<0, putVarint(b, i, v-p[0]), v
	}
	if v := int64(e.Seq); v != p[1] {
		m, i, p[1] = m|1<<1, putVarint(b, i, v-p[1]), v
	}
	if v := int64(e.Capture); v != p[2] {
		m, i, p[2] = m|1<<2, putVarint(b, i, v-p[2]), v
	}
	if v := int64(e.CPU); v != p[3] {
		m, i, p[3] = m|1<<3, putVarint(b, i, v-p[3]), v
	}
	if v := int64(e.Stack); v != p[4] {
		m, i, p[4] = m|1<<4, putVarint(b, i, v-p[4]), v
	}
	if v := int64(e.Labels); v != p[5] {
		m, i, p[5] = m|1<<5, putVarint(b, i, v-p[5]), v
	}
	if v := off; v != p[6] {
		m, i, p[6] = m|1<<6, putVarint(b, i, v-p[6]), v
	}
	if v := int64(e.Payload.Len); v != p[7] {
		m, i, p[7] = m|1<<7, putVarint(b, i, v-p[7]), v
	}
	b[n] = m
	return b[:i]
}

// nSlots is the number of type slots of a run (see the file comment).
const nSlots = 64

// slotRecords is the last record of each type slot of a run.
type slotRecords struct {
	ev   [nSlots]trace.Event
	code [nSlots]uint16
	set  uint64 // bit s: slot s has a record in this run
}

// base returns the record a record of type code is based on.
func (sr *slotRecords) base(code uint16) trace.Event {
	s := code % nSlots
	if sr.set>>s&1 != 0 && sr.code[s] == code {
		return sr.ev[s]
	}
	return trace.Event{}
}

// put records e, of type code, as its slot's last record.
func (sr *slotRecords) put(code uint16, e *trace.Event) {
	s := code % nSlots
	sr.ev[s], sr.code[s] = *e, code
	sr.set |= 1 << s
}

// typeCode is an event type's code in the resident type column.
func typeCode(t trace.TypeID) uint16 {
	if t >= 0 && t < typeEscape {
		return uint16(t)
	}
	return typeEscape
}

// spill is the temporary file of event records. Runs are copied, in
// their order in the file, into shipments of up to shipSize bytes that a
// writer goroutine writes with one call each, so that the file system's
// copy overlaps reading the trace and a system call (several
// microseconds here, as much as copying 16 KB) is paid per MB, not per
// run. The copy saves more than it costs: writing the runs' own buffers
// instead (writev, tried on the 8M-event CPEL file) held each until
// written, so that tracks took buffers gone cold from the free list, or
// new ones, and the load took more CPU, not less. Once the file is
// complete it is mapped read-only where the system allows (finish), so
// that a search reads a run's records in place, touching only the bytes
// it decodes, with no read call and no copy; snapshots read the growing
// file with pread.
type spill struct {
	f *os.File
	// mem is the records in memory, nil while they are read with pread:
	// an Index opened from a file has them in its file's mapping
	// (mapped.go), in place of f; a built Index maps its complete spill
	// file (unmap undoes that). A read of mem holds a reader (readers),
	// so that close unmaps only once the reads in progress are done and
	// reads after close fail. checked is closed once an opened Index's
	// records are checked, checkErr (set before) says whether they are
	// damaged.
	mem      atomic.Pointer[[]byte]
	unmap    func() error
	readers  readers
	checked  chan struct{}
	checkErr error
	// Tracks are spilled on several goroutines at once (build.go), each
	// track by one at a time: there a run that ends waits in its track
	// (end) until the indexing goroutine places it in the file after the
	// batch (place), in the order of the batch's tracks, so that the file
	// is the same whatever the goroutines' timing: place copies it to
	// the shipment being filled (out) and frees its buffer for the next
	// run that ends, and ship hands a shipment to the writer once it is
	// full, or when every run placed must be written (flush, finish).
	// The bytes buffered over all tracks are counted by track (account).
	off      int64        // bytes written, queued or placed
	buffered atomic.Int64 // bytes in the tracks' buffers, as last counted
	out      []byte       // runs placed, not yet shipped
	jobs     chan []byte
	shipped  chan []byte // shipments the writer is done with
	free     chan []byte // full-size run buffers, placed
	done     chan error
	// written is how many bytes the writer has written (or failed to),
	// for snapshots that must not read a run before it is in the file.
	wmu     sync.Mutex
	wcond   sync.Cond
	written int64
	// The writer's drop-behind (dropBehind): pages are kept up to keep,
	// writeback started up to started, pages dropped up to dropped, a
	// step of it at a time.
	keep, step       int64
	started, dropped int64
}

// readers counts the reads of a mapping in progress, so that the
// mapping's owner can wait for them before unmapping it (close) and
// reads that would start after are refused. Its zero value is ready.
type readers struct {
	n      atomic.Int64 // reads in progress, plus closing once closed
	mu     sync.Mutex
	cond   sync.Cond // close waits on it (L is set by close)
	closed bool
}

// closing is what close adds to readers.n: far below any count of reads.
const closing = math.MinInt64 / 2

// enter starts a read; it returns false, and starts none, once close
// has begun.
func (r *readers) enter() bool {
	if r.n.Add(1) < 0 {
		r.leave()
		return false
	}
	return true
}

// leave ends a read that enter started.
func (r *readers) leave() {
	if r.n.Add(-1) == closing {
		r.mu.Lock()
		if r.cond.L != nil {
			r.cond.Broadcast()
		}
		r.mu.Unlock()
	}
}

// close refuses every later read and waits for those in progress to end.
func (r *readers) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed, r.cond.L = true, &r.mu
	r.n.Add(closing)
	for r.n.Load() != closing {
		r.cond.Wait()
	}
}

// A spill of a few GB fills the page cache with pages written once and
// read only later, if at all (details, field searches). Past keepSpill
// the writer drops them from the cache as it goes (dropBehind): it starts
// their writeback every dropStep bytes and drops what it started a step
// before, so that the cache holds about two steps of the spill past the
// first keepSpill bytes. On this project's machines (virtual machines
// whose free memory goes back to the host) a page the system has not
// used lately costs several times its copy to fill: writing a 10 GB file
// took ~3.5 CPU-s per GB past the first 3–4 GB, against 0.5 with
// drop-behind, which recycles the same pages. A spill below keepSpill
// is never written to disk by us: a small trace's spill file, unlinked,
// usually dies in the cache.
const (
	keepSpill = 1 << 30
	dropStep  = 64 << 20
)

// dropBehind is the writer's drop-behind, once written bytes are in the
// file (see keepSpill).
func (s *spill) dropBehind(written int64) {
	from := max(s.started, s.keep)
	if !dropsPages || written-from < s.step {
		return
	}
	startWriteback(s.f, from, written)
	s.started = written
	if done := max(s.dropped, s.keep); from-done >= s.step {
		dropPages(s.f, done, from)
		s.dropped = from
	}
}

// spillQueue is how many shipments of runs may wait for the writer.
const spillQueue = 4

// shipSize is the capacity of a shipment of runs.
const shipSize = 1 << 20

// freeRuns is how many full-size run buffers the spill keeps for reuse
// (4 MB at most). Tracks with events at like rates fill their runs in the
// same batch: the 8M-event CPEL file's 100 tracks each end a run every
// dozen batches, all in one, so that with 64 kept 36 buffers were made
// and 36 dropped again every time (2800 new 16 KB buffers per load, each
// zeroed, most on fresh pages).
const freeRuns = 256

func newSpill(dir string) (*spill, error) { return newSpillKeeping(dir, keepSpill, dropStep) }

// newSpillKeeping is newSpill with the drop-behind's keep and step (see
// keepSpill).
func newSpillKeeping(dir string, keep, step int64) (*spill, error) {
	f, err := os.CreateTemp(dir, "viewer-index-*.spill")
	if err != nil {
		return nil, fmt.Errorf("render: creating the index spill file: %w", err)
	}
	// The file lives until Close; removing the name now means a crash
	// leaves nothing behind on systems that allow it.
	os.Remove(f.Name())
	s := &spill{f: f, jobs: make(chan []byte, spillQueue), shipped: make(chan []byte, spillQueue+1), free: make(chan []byte, freeRuns), done: make(chan error, 1), keep: keep, step: step}
	s.wcond.L = &s.wmu
	go s.write(s.jobs)
	return s, nil
}

func (s *spill) write(jobs <-chan []byte) {
	var err error
	for b := range jobs {
		if err == nil {
			if _, werr := s.f.Write(b); werr != nil {
				err = fmt.Errorf("render: writing the index spill file: %w", werr)
			}
		}
		n := len(b)
		select {
		case s.shipped <- b[:0]:
		default:
		}
		if err == nil {
			s.dropBehind(s.written + int64(n)) // written is the writer's own
		}
		s.wmu.Lock()
		s.written += int64(n)
		s.wcond.Broadcast()
		s.wmu.Unlock()
	}
	s.done <- err
}

// addEvents buffers the records of evs, the next events of track st.
// Once the records buffered over all tracks, as account counts them,
// pass maxBuffered, the caller flushes every track.
func (s *spill) addEvents(st *spillTrack, evs []trace.Event) {
	w := st.writer()
	for len(evs) > 0 {
		m := s.room(st, len(evs))
		buf, k := st.buf, st.k
		for i := range evs[:m] {
			if k > 0 && k%spillBlock == 0 {
				w.blocks[k/spillBlock-1] = uint16(len(buf)) // < runBuffer
			}
			e := &evs[i]
			buf = w.appendRecord(buf, typeCode(e.Type), e)
			k++
		}
		s.added(st, buf, k)
		evs = evs[m:]
	}
}

// addBased is addEvents for the events of a grouped batch: base but for
// their types and payload offsets, those less base's (see batch.expand).
func (s *spill) addBased(st *spillTrack, types []trace.TypeID, offs []uint32, base *trace.Event) {
	w := st.writer()
	w.setBase(base)
	offs = offs[:len(types)]
	for len(types) > 0 {
		m := s.room(st, len(types))
		buf, k := w.appendBasedRun(st.buf, st.k, types[:m], offs[:m], base)
		s.added(st, buf, k)
		types, offs = types[m:], offs[m:]
	}
}

// appendBasedRun appends to buf, holding the run's first k records, the
// records of the events of a grouped batch of types and payload offsets
// base's plus offs, the other fields base's (set by setBase), noting the
// blocks they start in the block table; buf must have room for them. It
// returns buf and the run's records. Where a slot's last record has the
// same code and base's fields (the slot is ready), only the offset can
// differ, and only it is compared (appendReady); the other records are
// appendWith's, which compares every field.
func (w *runWriter) appendBasedRun(buf []byte, k int, types []trace.TypeID, offs []uint32, base *trace.Event) ([]byte, int) {
	offs = offs[:len(types)]
	off0 := base.Payload.Off
	for len(types) > 0 {
		var i int
		buf, k, i = w.appendReady(buf, k, types, offs, off0)
		if i < len(types) { // appendReady noted its block if it starts one
			k++
			ty := types[i]
			code := typeCode(ty)
			w.based |= 1 << (code % nSlots)
			buf = w.appendWith(buf, code, base, int64(ty), off0+int64(offs[i]))
			i++
		}
		types, offs = types[i:], offs[i:]
	}
	return buf, k
}

// appendReady is appendBasedRun for the leading events whose slots are
// ready and whose types are not escaped (a slot's last record of the
// same code then has the same type): it returns how many it appended.
// It calls nothing: with appendWith's call in its loop, the compiler kept
// the loop's state on the stack, reloading it at every record.
func (w *runWriter) appendReady(buf []byte, k int, types []trace.TypeID, offs []uint32, off0 int64) ([]byte, int, int) {
	offs = offs[:len(types)]
	ready := w.set & w.based
	n := len(buf)
	for i := 0; i < len(types); {
		// The records up to the next block's start, with one check of
		// buf's room for them. A block's offset is noted before its
		// first record is looked at: appendBasedRun relies on it for the
		// records it hands to appendWith.
		if k > 0 && k%spillBlock == 0 {
			w.blocks[k/spillBlock-1] = uint16(n) // < runBuffer
		}
		c := min(len(types)-i, spillBlock-k%spillBlock)
		b := buf[:n+c*maxRecordSize]
		tys := types[i : i+c]
		ofs := offs[i : i+c]
		ofs = ofs[:len(tys)]
		for j, t := range tys {
			ty := uint32(t)
			s := ty % nSlots
			if ty >= typeEscape || ready>>s&1 == 0 || w.code[s] != uint16(ty) {
				return b[:n], k + j, i + j
			}
			p := &w.fields[s][6]
			if v := off0 + int64(ofs[j]); v != *p {
				b[n] = 1 << 6
				n = putVarint(b, n+1, v-*p)
				*p = v
			} else {
				b[n] = 0
				n++
			}
		}
		buf = b[:n]
		i, k = i+c, k+c
	}
	return buf, k, len(types)
}

// writer returns the track's run writer.
func (st *spillTrack) writer() *runWriter {
	if st.w == nil {
		st.w = &runWriter{}
	}
	return st.w
}

// room returns how many of the next n records (n > 0) the track's
// buffer has room for with its block table, and its run too: at least
// one, for which it ends the run or grows the buffer when it must. A
// record goes to the buffer while it has room for one more and its
// block table, so it counts maxRecordSize bytes a record and the block
// table of a full run; when that leaves room for none, it checks the
// one record exactly.
func (s *spill) room(st *spillTrack, n int) int {
	for {
		free := cap(st.buf) - len(st.buf)
		m := (free - blockTableSize(runRecords)) / maxRecordSize
		if m <= 0 && free >= maxRecordSize+blockTableSize(st.k+1) {
			m = 1
		}
		if m = min(m, n, runRecords-st.k); m > 0 {
			return m
		}
		if cap(st.buf) == runBuffer {
			s.end(st) // leaves an empty full-size buffer
		} else {
			st.buf = s.grow(st.buf)
		}
	}
}

// added keeps buf, with k records, as the track's buffer, and ends the
// run once it has runRecords.
func (s *spill) added(st *spillTrack, buf []byte, k int) {
	st.buf, st.k = buf, k
	if k == runRecords {
		s.end(st)
	}
}

// account counts st's buffered bytes in s.buffered.
func (s *spill) account(st *spillTrack) {
	if d := len(st.buf) - st.counted; d != 0 {
		s.buffered.Add(int64(d))
		st.counted = len(st.buf)
	}
}

// grow returns b with room for more records: small buffers double, so a
// track with few events holds little; a track that fills one takes a
// full-size buffer.
func (s *spill) grow(b []byte) []byte {
	if c := 2 * cap(b); c < runBuffer/4 {
		return append(make([]byte, 0, max(c, 4*maxRecordSize)), b...)
	}
	return append(s.full(), b...)
}

// full returns an empty full-size buffer, recycled from a run placed
// when possible.
func (s *spill) full() []byte {
	select {
	case b := <-s.free:
		return b
	default:
		return make([]byte, 0, runBuffer)
	}
}

// flush places the track's buffered records as one run, after its runs
// that wait to be placed; ship(true) hands them to the writer.
func (s *spill) flush(st *spillTrack) {
	s.end(st)
	s.place(st)
}

// end ends the track's run: its buffered records wait in st.pending for
// place.
func (s *spill) end(st *spillTrack) {
	if st.k == 0 {
		return
	}
	if st.counted != 0 {
		s.buffered.Add(-int64(st.counted))
		st.counted = 0
	}
	for _, off := range st.w.blocks[:(st.k-1)/spillBlock] { // add kept room for them
		st.buf = binary.LittleEndian.AppendUint16(st.buf, off)
	}
	st.runs = append(st.runs, run{first: st.n, off: -1, size: int32(len(st.buf))})
	st.pending = append(st.pending, st.buf)
	st.n += st.k
	st.k = 0
	st.w.set = 0
	full := cap(st.buf) == runBuffer
	st.buf = nil
	if full {
		st.buf = s.full() // the track fills runs: give it a full-size buffer at once
	}
}

// place gives the track's ended runs their places in the file: copies
// them to the shipment being filled, shipping it first when full, and
// frees their buffers.
func (s *spill) place(st *spillTrack) {
	runs := st.runs[len(st.runs)-len(st.pending):]
	for i, b := range st.pending {
		runs[i].off = s.off
		s.off += int64(len(b))
		if len(s.out)+len(b) > cap(s.out) {
			s.ship(true)
			if cap(s.out) < len(b) {
				s.out = make([]byte, 0, max(shipSize, len(b)))
			}
		}
		s.out = append(s.out, b...)
		if cap(b) == runBuffer {
			select {
			case s.free <- b[:0]:
			default:
			}
		}
		st.pending[i] = nil
	}
	st.pending = st.pending[:0]
}

// ship hands the shipment being filled to the writer once it is nearly
// full, or, with all, whenever it holds runs.
func (s *spill) ship(all bool) {
	if len(s.out) == 0 || !all && len(s.out) < cap(s.out)-runBuffer {
		return
	}
	s.jobs <- s.out
	select {
	case s.out = <-s.shipped:
	default:
		s.out = make([]byte, 0, shipSize)
	}
}

// finish writes every buffer, waits for the writer and makes the file
// readable: mapped, where the system can map files, else with pread.
func (s *spill) finish(tracks []*spillTrack) error {
	for _, st := range tracks {
		s.flush(st)
		st.buf, st.w = nil, nil
		st.runs = slices.Clip(st.runs)
	}
	s.ship(true)
	if err := s.stop(); err != nil {
		return err
	}
	if mapsFiles && s.off > 0 {
		if b, unmap, err := mapFile(s.f, s.off); err == nil {
			s.unmap = unmap
			s.mem.Store(&b)
		} // else the file is read with pread, as while it was written
	}
	return nil
}

// stop ends the writer goroutine and returns its error.
func (s *spill) stop() error {
	if s.jobs == nil {
		return nil
	}
	close(s.jobs)
	s.jobs = nil
	return <-s.done
}

// waitWritten waits until the writer has written the first n bytes
// queued.
func (s *spill) waitWritten(n int64) {
	s.wmu.Lock()
	for s.written < n {
		s.wcond.Wait()
	}
	s.wmu.Unlock()
}

// close waits for the reads of the mapped records in progress, refuses
// later ones, and releases the mapping and the file. An opened Index's
// mapping is its file's, which Index.Close unmaps after this.
func (s *spill) close() error {
	s.stop()
	s.readers.close()
	var err error
	if s.unmap != nil {
		err = s.unmap()
		s.unmap = nil
	}
	if s.f != nil {
		err = errors.Join(err, s.f.Close())
	}
	return err
}

// view returns the records in memory, holding a reader that the caller
// must end with s.readers.leave once done with them; or nil, holding
// nothing, when the records are read with pread. It fails with
// ErrClosed once close has begun.
func (s *spill) view() ([]byte, error) {
	if err := s.verified(); err != nil {
		return nil, err
	}
	p := s.mem.Load()
	if p == nil {
		return nil, nil
	}
	if !s.readers.enter() {
		return nil, ErrClosed
	}
	return *p, nil
}

// runBytes returns the bytes of run r within the records m.
func runBytes(m []byte, r run) ([]byte, error) {
	if r.off < 0 || r.off > int64(len(m)) || int64(r.size) > int64(len(m))-r.off || r.size < 0 {
		return nil, fmt.Errorf("render: internal error: spill run at %d+%d beyond %d bytes", r.off, r.size, len(m))
	}
	return m[r.off : r.off+int64(r.size)], nil
}

// verified waits until the mapped records are checked and returns the
// check's error (nil for a spill file).
func (s *spill) verified() error {
	if s.checked == nil {
		return nil
	}
	<-s.checked
	return s.checkErr
}

// size returns the bytes of records the spill holds once complete.
func (s *spill) size() int64 {
	if s.f == nil {
		return int64(len(*s.mem.Load()))
	}
	return s.off
}

// readAt reads the records at off into dst.
func (s *spill) readAt(dst []byte, off int64) error {
	m, err := s.view()
	if err != nil {
		return err
	}
	if m == nil {
		_, err := s.f.ReadAt(dst, off)
		return err
	}
	defer s.readers.leave()
	if off < 0 || off > int64(len(m)) || int64(len(dst)) > int64(len(m))-off {
		return fmt.Errorf("render: internal error: spill read at %d+%d beyond %d bytes", off, len(dst), len(m))
	}
	copy(dst, m[off:])
	return nil
}

// runOf returns the run that holds record i of a track.
func (st *spillTrack) runOf(i int) (k int, ok bool) {
	k = sort.Search(len(st.runs), func(k int) bool { return st.runs[k].first > i }) - 1
	return k, k >= 0 && i < st.n
}

// runReader decodes runs of the spill file, keeping the last one read. A
// reader that moves forward through a run (a search checking candidates
// in order) decodes it lazily: it steps over the records it passes,
// noting where they start, and decodes a record and the records of its
// slot before it (see the file comment) only when asked for one. A
// reader that moves backward decodes the whole run once into evs. It is
// not safe for concurrent use; each caller has its own.
type runReader struct {
	s     *spill
	st    *spillTrack
	k     int
	data  []byte
	codes []uint16 // the type codes of the run's records
	// forward decoding: the next record not stepped over and where it
	// starts; where each record stepped over starts; per slot its last
	// decoded record and the first record not looked at for it
	next     int
	pos      int
	offs     []int32
	slots    slotRecords
	slotNext [nSlots]int32
	lastJ    int // the record returned last, or -1
	last     trace.Event
	// evs is the whole run, decoded, once a reader went backward (all)
	evs []trace.Event
	all bool
}

// event returns record i of track t (Time and Track are left zero).
func (rr *runReader) event(t *track, i int) (trace.Event, error) {
	st := &t.spill
	k := rr.k
	if rr.st != st || rr.data == nil || i < st.runs[k].first || i >= st.runs[k].first+len(rr.codes) { // not the run at hand
		var ok bool
		if k, ok = st.runOf(i); !ok {
			return trace.Event{}, fmt.Errorf("render: internal error: record %d of %d not in the spill file", i, st.n)
		}
	}
	first := st.runs[k].first
	if rr.st != st || rr.k != k || rr.data == nil {
		r := st.runs[k]
		n := runRecords
		if k+1 < len(st.runs) {
			n = st.runs[k+1].first - r.first
		} else {
			n = st.n - r.first
		}
		rr.data = slices.Grow(rr.data[:0], int(r.size))[:r.size]
		if err := rr.readAt(rr.data, r.off); err != nil {
			rr.data = nil
			return trace.Event{}, fmt.Errorf("render: reading the index spill file: %w", err)
		}
		rr.codes = rr.codes[:0]
		for at := first; at < first+n; {
			ch := t.types.chunk(at >> chunkBits)[at&chunkMask:]
			ch = ch[:min(len(ch), first+n-at)]
			rr.codes = append(rr.codes, ch...)
			at += len(ch)
		}
		rr.offs = slices.Grow(rr.offs[:0], n)[:n]
		rr.st, rr.k = st, k
		rr.next, rr.pos, rr.slots.set, rr.lastJ, rr.all = 0, 0, 0, -1, false
		clear(rr.slotNext[:])
	}
	j := i - first
	switch {
	case rr.all:
		return rr.evs[j], nil
	case j == rr.lastJ:
		return rr.last, nil
	case j < rr.next: // backward, or a record stepped over: decode the whole run
		codes := rr.codes
		evs, err := decodeRun(rr.evs[:0], rr.data, len(codes), func(r int) uint16 { return codes[r] })
		if err != nil {
			rr.data = nil
			return trace.Event{}, err
		}
		rr.evs, rr.all = evs, true
		return rr.evs[j], nil
	}
	for pos := rr.pos; rr.next < j; rr.next++ {
		rr.offs[rr.next] = int32(pos)
		pos = skipRecords(rr.data, pos, 1)
		rr.pos = pos
	}
	code := rr.codes[j]
	s := code % nSlots
	for r := int(rr.slotNext[s]); r < j; r++ { // the slot's records stepped over
		if c := rr.codes[r]; c%nSlots == s {
			e := rr.slots.base(c)
			if _, err := decodeRecord(&e, rr.data, int(rr.offs[r])); err != nil {
				rr.data = nil
				return trace.Event{}, err
			}
			rr.slots.put(c, &e)
		}
	}
	e := rr.slots.base(code)
	var err error
	if rr.pos, err = decodeRecord(&e, rr.data, rr.pos); err != nil {
		rr.data = nil
		return trace.Event{}, err
	}
	rr.slots.put(code, &e)
	rr.next, rr.slotNext[s] = j+1, int32(j+1)
	rr.lastJ, rr.last = j, e
	return e, nil
}

// readAt reads the file at off into dst.
func (rr *runReader) readAt(dst []byte, off int64) error { return rr.s.readAt(dst, off) }
