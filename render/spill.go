package render

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
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

// spill is the temporary file of event records.
type spill struct {
	f        *os.File
	w        *bufio.Writer
	off      int64 // bytes written
	buffered int
}

func newSpill(dir string) (*spill, error) {
	f, err := os.CreateTemp(dir, "viewer-index-*.spill")
	if err != nil {
		return nil, fmt.Errorf("render: creating the index spill file: %w", err)
	}
	// The file lives until Close; removing the name now means a crash
	// leaves nothing behind on systems that allow it.
	os.Remove(f.Name())
	return &spill{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// add buffers e's record for track st; all reports whether the caller must
// flush every track's buffer.
func (s *spill) add(st *spillTrack, e *trace.Event) (all bool, err error) {
	if st.buf == nil {
		st.buf = make([]byte, 0, 8*recordSize)
	}
	st.buf = append(st.buf, make([]byte, recordSize)...)
	putRecord(st.buf[len(st.buf)-recordSize:], e)
	s.buffered += recordSize
	if len(st.buf) >= runRecords*recordSize {
		return false, s.flush(st)
	}
	return s.buffered >= maxBuffered, nil
}

func (s *spill) flush(st *spillTrack) error {
	if len(st.buf) == 0 {
		return nil
	}
	st.runs = append(st.runs, run{first: st.n, off: s.off})
	if _, err := s.w.Write(st.buf); err != nil {
		return fmt.Errorf("render: writing the index spill file: %w", err)
	}
	k := len(st.buf) / recordSize
	st.n += k
	s.off += int64(len(st.buf))
	s.buffered -= len(st.buf)
	if cap(st.buf) > 64*recordSize && k < runRecords/4 {
		st.buf = nil // a track that fills slowly keeps a small buffer
	} else {
		st.buf = st.buf[:0]
	}
	return nil
}

// finish writes every buffer and makes the file readable.
func (s *spill) finish(tracks []*track) error {
	for _, t := range tracks {
		if err := s.flush(&t.spill); err != nil {
			return err
		}
		t.spill.buf = nil
		t.spill.runs = append([]run(nil), t.spill.runs...)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("render: writing the index spill file: %w", err)
	}
	s.w = nil
	return nil
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
	return s.f.Close()
}
