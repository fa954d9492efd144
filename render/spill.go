package render

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sort"

	"viewer/trace"
)

// The spill file holds what the index does not keep resident: the part of
// every trace.Event beyond its time. Records are grouped per track in runs
// of up to runRecords events; a run is found by binary search over its
// track's runs, read with one ReadAt and decoded from its start.
//
// A record is eight zigzag varints, each the difference from the same
// field of the previous record of the run (zero before the first):
// Type, Seq, Capture, CPU, Stack, Labels, Payload.Off, Payload.Len.
// Within a thread most fields repeat or step by small amounts, so a
// record takes about 8–12 bytes instead of 36, which is what writing 100
// million of them costs in memory bandwidth and disk.

// maxRecordSize bounds the encoding of one record.
const maxRecordSize = 8 * binary.MaxVarintLen64

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

// appendRecord appends e's record; b must have room for maxRecordSize
// more bytes.
func appendRecord(b []byte, prev, e *trace.Event) []byte {
	n := len(b)
	b = b[:n+maxRecordSize]
	n = putVarint(b, n, int64(e.Type)-int64(prev.Type))
	n = putVarint(b, n, int64(e.Seq)-int64(prev.Seq))
	n = putVarint(b, n, int64(e.Capture)-int64(prev.Capture))
	n = putVarint(b, n, int64(e.CPU)-int64(prev.CPU))
	n = putVarint(b, n, int64(e.Stack)-int64(prev.Stack))
	n = putVarint(b, n, int64(e.Labels)-int64(prev.Labels))
	n = putVarint(b, n, e.Payload.Off-prev.Payload.Off)
	n = putVarint(b, n, int64(e.Payload.Len)-int64(prev.Payload.Len))
	return b[:n]
}

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

// decodeRun decodes the records of a run into dst. Most deltas take one
// byte, which it decodes inline; longer ones go through binary.Varint.
func decodeRun(dst []trace.Event, b []byte, n int) ([]trace.Event, error) {
	var prev trace.Event
	var d [8]int64
	i := 0
	for range n {
		for k := range d {
			if i < len(b) && b[i] < 0x80 {
				c := int64(b[i])
				d[k] = c>>1 ^ -(c & 1)
				i++
				continue
			}
			v, m := binary.Varint(b[min(i, len(b)):])
			if m <= 0 {
				return dst, fmt.Errorf("render: internal error: damaged record in the spill file")
			}
			d[k], i = v, i+m
		}
		e := trace.Event{
			Type:    trace.TypeID(int64(prev.Type) + d[0]),
			Seq:     uint32(int64(prev.Seq) + d[1]),
			Capture: trace.TrackID(int64(prev.Capture) + d[2]),
			CPU:     int32(int64(prev.CPU) + d[3]),
			Stack:   trace.StackID(int64(prev.Stack) + d[4]),
			Labels:  trace.LabelsID(int64(prev.Labels) + d[5]),
			Payload: trace.Loc{Off: prev.Payload.Off + d[6], Len: int32(int64(prev.Payload.Len) + d[7])},
		}
		dst = append(dst, e)
		prev = e
	}
	return dst, nil
}

// decodeRecord adds the deltas of the record at b[i:] to *e and returns
// the index after it.
func decodeRecord(e *trace.Event, b []byte, i int) (int, error) {
	var d [8]int64
	for k := range d {
		if i < len(b) && b[i] < 0x80 {
			c := int64(b[i])
			d[k] = c>>1 ^ -(c & 1)
			i++
			continue
		}
		v, m := binary.Varint(b[min(i, len(b)):])
		if m <= 0 {
			return i, fmt.Errorf("render: internal error: damaged record in the spill file")
		}
		d[k], i = v, i+m
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

// run is a stretch of consecutive records of one track in the spill file.
type run struct {
	first int   // index in the track of the run's first record
	off   int64 // file offset of the run
	size  int32 // bytes
}

// spillTrack is one track's part of the spill file.
type spillTrack struct {
	runs []run
	buf  []byte      // records not yet written
	k    int         // records in buf
	prev trace.Event // the last record in buf
	n    int         // records written
}

// spill is the temporary file of event records. Full runs are handed to
// a writer goroutine, so the file system's copy overlaps reading the
// trace.
type spill struct {
	f        *os.File
	off      int64 // bytes written or queued
	buffered int   // bytes in the tracks' buffers
	jobs     chan []byte
	free     chan []byte // full-size buffers the writer is done with
	done     chan error
}

// spillQueue is how many runs may wait for the writer.
const spillQueue = 16

func newSpill(dir string) (*spill, error) {
	f, err := os.CreateTemp(dir, "viewer-index-*.spill")
	if err != nil {
		return nil, fmt.Errorf("render: creating the index spill file: %w", err)
	}
	// The file lives until Close; removing the name now means a crash
	// leaves nothing behind on systems that allow it.
	os.Remove(f.Name())
	s := &spill{f: f, jobs: make(chan []byte, spillQueue), free: make(chan []byte, spillQueue+2), done: make(chan error, 1)}
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
		if cap(b) == runBuffer {
			select {
			case s.free <- b[:0]:
			default:
			}
		}
	}
	s.done <- err
}

// add buffers e's record for track st; all reports whether the caller must
// flush every track's buffer.
func (s *spill) add(st *spillTrack, e *trace.Event) (all bool) {
	if len(st.buf)+maxRecordSize > cap(st.buf) {
		if cap(st.buf) == runBuffer {
			s.flush(st) // leaves an empty full-size buffer
		} else {
			st.buf = s.grow(st.buf)
		}
	}
	n := len(st.buf)
	st.buf = appendRecord(st.buf, &st.prev, e)
	st.prev = *e
	st.k++
	s.buffered += len(st.buf) - n
	if st.k == runRecords {
		s.flush(st)
		return false
	}
	return s.buffered >= maxBuffered
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

// full returns an empty full-size buffer, recycled from the writer when
// possible.
func (s *spill) full() []byte {
	select {
	case b := <-s.free:
		return b
	default:
		return make([]byte, 0, runBuffer)
	}
}

// flush queues the track's buffered records as one run.
func (s *spill) flush(st *spillTrack) {
	if st.k == 0 {
		return
	}
	st.runs = append(st.runs, run{first: st.n, off: s.off, size: int32(len(st.buf))})
	st.n += st.k
	st.k = 0
	st.prev = trace.Event{}
	s.off += int64(len(st.buf))
	s.buffered -= len(st.buf)
	full := cap(st.buf) == runBuffer
	s.jobs <- st.buf
	st.buf = nil
	if full {
		st.buf = s.full() // the track fills runs: give it a full-size buffer at once
	}
}

// finish writes every buffer, waits for the writer and makes the file
// readable.
func (s *spill) finish(tracks []*spillTrack) error {
	for _, st := range tracks {
		s.flush(st)
		st.buf = nil
		st.runs = slices.Clip(st.runs)
	}
	return s.stop()
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

func (s *spill) close() error {
	s.stop()
	return s.f.Close()
}

// runOf returns the run that holds record i of a track.
func (st *spillTrack) runOf(i int) (k int, ok bool) {
	k = sort.Search(len(st.runs), func(k int) bool { return st.runs[k].first > i }) - 1
	return k, k >= 0 && i < st.n
}

// runReader decodes runs of the spill file, keeping the last one read. A
// reader that moves forward through a run (a search checking candidates
// in order) decodes it incrementally: the records it passes are summed,
// not stored, and decoding stops at the record asked for. A reader that
// moves backward decodes the whole run once into evs. It is not safe for
// concurrent use; each caller has its own.
type runReader struct {
	s    *spill
	st   *spillTrack
	k    int
	data []byte
	n    int // records in the run
	// forward decoding: the next record's byte offset and index in the
	// run, and the record before it
	pos  int
	next int
	prev trace.Event
	// evs is the whole run, decoded, once a reader went backward (nil
	// until then)
	evs []trace.Event
	all bool
}

// event returns record i of track st (Time and Track are left zero).
func (rr *runReader) event(st *spillTrack, i int) (trace.Event, error) {
	k, ok := st.runOf(i)
	if !ok {
		return trace.Event{}, fmt.Errorf("render: internal error: record %d of %d not in the spill file", i, st.n)
	}
	if rr.st != st || rr.k != k || rr.data == nil {
		r := st.runs[k]
		n := runRecords
		if k+1 < len(st.runs) {
			n = st.runs[k+1].first - r.first
		} else {
			n = st.n - r.first
		}
		rr.data = slices.Grow(rr.data[:0], int(r.size))[:r.size]
		if _, err := rr.s.f.ReadAt(rr.data, r.off); err != nil {
			rr.data = nil
			return trace.Event{}, fmt.Errorf("render: reading the index spill file: %w", err)
		}
		rr.st, rr.k, rr.n = st, k, n
		rr.pos, rr.next, rr.prev, rr.all = 0, 0, trace.Event{}, false
	}
	j := i - st.runs[k].first
	if rr.all {
		return rr.evs[j], nil
	}
	if j == rr.next-1 {
		return rr.prev, nil
	}
	if j < rr.next { // backward: decode the whole run
		evs, err := decodeRun(rr.evs[:0], rr.data, rr.n)
		if err != nil {
			rr.data = nil
			return trace.Event{}, err
		}
		rr.evs, rr.all = evs, true
		return rr.evs[j], nil
	}
	for rr.next <= j {
		var err error
		if rr.pos, err = decodeRecord(&rr.prev, rr.data, rr.pos); err != nil {
			rr.data = nil
			return trace.Event{}, err
		}
		rr.next++
	}
	return rr.prev, nil
}
