package cpel

import (
	"os"
	"runtime/debug"

	"viewer/trace"
)

// Reading records in place (issue #22). A CPEL file is almost all its
// event records, and the index reads every one once (ReadEventsByTrack):
// copying them from the page cache with pread cost a fifth of the load.
// Where the file is an *os.File the system can map, ReadEventsByTrack
// reads the records of the only event section in a window instead: a
// read-only mapping of windowBytes of the file, moved along as reading
// goes and unmapped behind it, so that the file's pages count in the
// process's resident memory a window at a time, not all 160 MB of an
// 8M-event file. The other reading paths (ReadEvent, ReadEvents, the
// merging and sorted paths) copy, as before.
//
// A mapping faults where the file has shrunk under it since it was
// mapped. Before mapping a window the reader checks that the file still
// holds it (else it reads with ReadAt from there on, which reports the
// truncation as a file cut before opening does); a file cut after that
// faults, and the fault, made a panic (debug.SetPanicOnFault) while
// ReadEventsByTrack reads the window, ends reading with a truncation
// error instead of the process.

// windowBytes is the size of the window's mapping.
const windowBytes = 4 << 20

// window is a mapping of a stretch of the only event section's records.
type window struct {
	f     *os.File // the file, nil once records are read with ReadAt
	size  int      // bytes mapped at once
	mem   []byte   // the mapping, nil for none
	recs  []byte   // the whole records in mem
	start int      // the index of recs' first record in the section
}

// records returns the records of es from record i (< es.n) on that the
// window holds, moving the window to record i when it does not hold it;
// nil when they must be read with ReadAt: no file to map, a failed
// mapping, or a file shorter than es.
func (w *window) records(es *eventSection, i int) []byte {
	if w == nil || w.f == nil {
		return nil
	}
	if j := i - w.start; j >= 0 && (j+1)*recordSize <= len(w.recs) {
		return w.recs[j*recordSize:]
	}
	w.release()
	page := int64(os.Getpagesize())
	off, end := es.dataOff+int64(i)*recordSize, es.dataOff+int64(es.n)*recordSize
	lo := off &^ (page - 1)
	// At least a record past off: the window is larger than a page and
	// a record.
	hi := min(lo+int64(max(w.size, int(2*page))), end)
	if size, err := fileSize(w.f); err != nil || size < hi {
		w.f = nil
		return nil
	}
	m, err := mapRange(w.f, lo, int(hi-lo))
	if err != nil {
		w.f = nil
		return nil
	}
	k := (hi - off) / recordSize
	w.mem, w.recs, w.start = m, m[off-lo:off-lo+k*recordSize], i
	return w.recs
}

// release unmaps the window.
func (w *window) release() {
	if w != nil && w.mem != nil {
		unmapRange(w.mem)
		w.mem, w.recs = nil, nil
	}
}

// readMapped is readRecords for records in the window, recs: a fault reading
// them ends reading with a truncation error at record c.i.
func (r *Reader) readMapped(c *cursor, recs []byte, times []trace.Time, types []trace.TypeID, offs []uint32, tracks []trace.TrackID, counts []int32) (n int, gtracks []trace.TrackID, gcounts []int32, err error) {
	k0 := len(tracks)
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		p := recover()
		if p == nil {
			return
		}
		if _, ok := p.(interface{ Addr() uintptr }); !ok {
			panic(p)
		}
		clear(r.group) // the groups of the batch cut short
		clear(r.idGroup)
		clear(r.grouping.byID)
		r.win.release()
		r.win.f = nil
		r.err = formatErr(c.es.dataOff+int64(c.i)*recordSize, "event records (the file shrank while it was read)", trace.ErrTruncated)
		n, gtracks, gcounts, err = 0, tracks[:k0], counts[:k0], r.err
	}()
	return r.readRecords(c, recs, times, types, offs, tracks, counts)
}
