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
// every trace.Event beyond its time, grouped per track in runs of records
// so that the i-th event of a track is found with one binary search over
// the track's runs and one ReadAt.

// recordSize is the size of one spilled event record.
const recordSize = 36

// Record layout, little-endian:
//
//	0  int32  Type
//	4  uint32 Seq
//	8  int32  Capture
//	12 int32  CPU
//	16 int32  Stack
//	20 int32  Labels
//	24 int64  Payload.Off
//	32 int32  Payload.Len
func putRecord(b []byte, e *trace.Event) {
	_ = b[recordSize-1]
	binary.LittleEndian.PutUint32(b[0:], uint32(e.Type))
	binary.LittleEndian.PutUint32(b[4:], e.Seq)
	binary.LittleEndian.PutUint32(b[8:], uint32(e.Capture))
	binary.LittleEndian.PutUint32(b[12:], uint32(e.CPU))
	binary.LittleEndian.PutUint32(b[16:], uint32(e.Stack))
	binary.LittleEndian.PutUint32(b[20:], uint32(e.Labels))
	binary.LittleEndian.PutUint64(b[24:], uint64(e.Payload.Off))
	binary.LittleEndian.PutUint32(b[32:], uint32(e.Payload.Len))
}

func getRecord(b []byte, e *trace.Event) {
	_ = b[recordSize-1]
	e.Type = trace.TypeID(binary.LittleEndian.Uint32(b[0:]))
	e.Seq = binary.LittleEndian.Uint32(b[4:])
	e.Capture = trace.TrackID(binary.LittleEndian.Uint32(b[8:]))
	e.CPU = int32(binary.LittleEndian.Uint32(b[12:]))
	e.Stack = trace.StackID(binary.LittleEndian.Uint32(b[16:]))
	e.Labels = trace.LabelsID(binary.LittleEndian.Uint32(b[20:]))
	e.Payload.Off = int64(binary.LittleEndian.Uint64(b[24:]))
	e.Payload.Len = int32(binary.LittleEndian.Uint32(b[32:]))
}

const (
	// runRecords is how many records a track buffers before writing them
	// as one run.
	runRecords = 1024
	// maxBuffered bounds the bytes buffered over all tracks; past it every
	// buffer is written out (runs then hold fewer records).
	maxBuffered = 4 << 20
)

// run is a stretch of consecutive records of one track in the spill file.
type run struct {
	first int   // index in the track of the run's first record
	off   int64 // file offset of that record
}

// spillTrack is one track's part of the spill file.
type spillTrack struct {
	runs []run
	buf  []byte // records not yet written
	n    int    // records written
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
		if cap(b) == runRecords*recordSize {
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
	if len(st.buf)+recordSize > cap(st.buf) {
		st.buf = s.grow(st.buf)
	}
	n := len(st.buf)
	st.buf = st.buf[:n+recordSize]
	putRecord(st.buf[n:], e)
	s.buffered += recordSize
	if len(st.buf) == runRecords*recordSize {
		s.flush(st)
		return false
	}
	return s.buffered >= maxBuffered
}

// grow returns b with room for more records: small buffers double, so a
// track with few events holds little; a track that fills one takes a
// full-size buffer.
func (s *spill) grow(b []byte) []byte {
	if c := 2 * cap(b); c < runRecords*recordSize/4 {
		return append(make([]byte, 0, max(c, 8*recordSize)), b...)
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
		return make([]byte, 0, runRecords*recordSize)
	}
}

// flush queues the track's buffered records as one run.
func (s *spill) flush(st *spillTrack) {
	if len(st.buf) == 0 {
		return
	}
	st.runs = append(st.runs, run{first: st.n, off: s.off})
	k := len(st.buf) / recordSize
	st.n += k
	s.off += int64(len(st.buf))
	s.buffered -= len(st.buf)
	full := cap(st.buf) == runRecords*recordSize
	s.jobs <- st.buf
	st.buf = nil
	if full {
		st.buf = s.full() // the track fills runs: give it a full-size buffer at once
	}
}

// finish writes every buffer, waits for the writer and makes the file
// readable.
func (s *spill) finish(tracks []*track) error {
	for _, t := range tracks {
		s.flush(&t.spill)
		t.spill.runs = slices.Clip(t.spill.runs)
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

// read fills dst with the records of track st from index i on; it returns
// how many it read (fewer at the end of a run or of the track).
func (s *spill) read(st *spillTrack, i int, buf []byte) (int, error) {
	k := sort.Search(len(st.runs), func(k int) bool { return st.runs[k].first > i }) - 1
	if k < 0 || i >= st.n {
		return 0, fmt.Errorf("render: internal error: record %d of %d not in the spill file", i, st.n)
	}
	end := st.n
	if k+1 < len(st.runs) {
		end = st.runs[k+1].first
	}
	n := min(end-i, len(buf)/recordSize)
	off := st.runs[k].off + int64(i-st.runs[k].first)*recordSize
	if _, err := s.f.ReadAt(buf[:n*recordSize], off); err != nil {
		return 0, fmt.Errorf("render: reading the index spill file: %w", err)
	}
	return n, nil
}

func (s *spill) close() error {
	s.stop()
	return s.f.Close()
}
