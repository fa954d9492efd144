package render

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// The store keeps Build's memory bounded (issue #21: a billion events on
// a machine of 24 GiB). While Build runs, every column chunk that fills
// up (column.seal) and every level of time cells once built (cells.go)
// is written to a temporary file in the spill directory and its heap copy
// replaced by a slice of a read-only shared mapping of that file: the
// pages are then the system's page cache, resident in the process only
// where queries read them. The passes that read everything once (the
// time cells' build and WriteFile) read the file instead (load). What
// stays on the heap per track is the chunk being filled of each column,
// the chunk lists and the spill's run table: about 0.03 bytes per event,
// and up to a few MB per track.
//
// The file is mapped in windows of storeWindow bytes (a 1-billion-event
// index writes about 20 of them), each mapped once, when the first array
// lands in it; an array never straddles two windows. Arrays are written
// with pwrite, never through the mapping, and read only once written.
// The file's name is removed at once, as the spill file's is: a crash
// leaves nothing behind, and nothing in it is ever read but by the Index
// that wrote it. An error writing the file leaves the array on the heap
// and is kept: Build fails with it.

// storeWindow is the size of one mapping of the store file.
const storeWindow = 1 << 30

// storeAlign aligns every array in the store (a cache line).
const storeAlign = 64

// errNoMap is mapWindow's error where the system has no mmap: arrays then
// stay on the heap, as before the store.
var errNoMap = errors.New("render: no mmap")

// store is the file of an Index's sealed arrays. Its methods are safe for
// concurrent use (the time cells are built on every core).
type store struct {
	dir      string
	mu       sync.Mutex
	f        *os.File
	off      int64
	wins     [][]byte // the mapping of window i; nil until used
	err      error    // the first error: Build fails with it
	heapOnly bool     // no mmap here: everything stays on the heap
	// reuse says that nothing but the column that sealed an array holds
	// its heap copy (no Live snapshots), so the column may fill it again.
	reuse bool
	// wmu serializes the writes: the file system takes the file's lock
	// for each write anyway, and a core waiting for it there spins for
	// as long as the other's copy takes (3-4 % of an 8M-event CPEL
	// load's CPU on two cores), where waiting for wmu sleeps.
	wmu sync.Mutex
	// colds takes the places of the cold arrays written past keep to
	// dropCold, which drops them a step behind and closes coldDone when
	// it ends (nil where the system drops no pages).
	colds      chan storeRange
	coldDone   chan struct{}
	keep, step int64
}

// storeRange is a range of bytes of the store's file.
type storeRange struct{ off, n int64 }

func newStore(dir string, keep, step int64) *store {
	return &store{dir: dir, keep: keep, step: step}
}

// put writes b to the store and returns its bytes in the mapping; b
// itself when the store cannot take it (s.err says why, unless the
// system has no mmap). A cold b, one the build does not read again, is
// dropped from the page cache once written (dropCold).
func (s *store) put(b []byte, cold bool) []byte {
	if len(b) == 0 || len(b) > storeWindow {
		return b
	}
	s.mu.Lock()
	if s.err != nil || s.heapOnly {
		s.mu.Unlock()
		return b
	}
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, "viewer-index-*.store")
		if err != nil {
			s.err = fmt.Errorf("render: creating the index store file: %w", err)
			s.mu.Unlock()
			return b
		}
		os.Remove(f.Name()) // see the file comment
		s.f = f
		if dropsPages {
			s.colds, s.coldDone = make(chan storeRange, 1024), make(chan struct{})
			go s.dropCold(f)
		}
	}
	off := (s.off + storeAlign - 1) &^ (storeAlign - 1)
	if off/storeWindow != (off+int64(len(b))-1)/storeWindow {
		off = (off/storeWindow + 1) * storeWindow
	}
	w := int(off / storeWindow)
	for w >= len(s.wins) {
		s.wins = append(s.wins, nil)
	}
	if s.wins[w] == nil {
		m, err := mapWindow(s.f, int64(w)*storeWindow, storeWindow)
		if err != nil {
			if err == errNoMap {
				s.heapOnly = true
			} else {
				s.err = fmt.Errorf("render: mapping the index store file: %w", err)
			}
			s.mu.Unlock()
			return b
		}
		adviseRandom(m) // queries read it at random places, as the index file's (mapped.go)
		s.wins[w] = m
	}
	s.off = off + int64(len(b))
	win := s.wins[w]
	s.mu.Unlock()
	s.wmu.Lock()
	_, err := s.f.WriteAt(b, off)
	s.wmu.Unlock()
	if err != nil {
		s.mu.Lock()
		if s.err == nil {
			s.err = fmt.Errorf("render: writing the index store file: %w", err)
		}
		s.mu.Unlock()
		return b
	}
	if cold && off >= s.keep {
		s.mu.Lock()
		if s.colds != nil {
			select {
			case s.colds <- storeRange{off, int64(len(b))}:
			default: // dropCold is behind: these pages stay cached
			}
		}
		s.mu.Unlock()
	}
	at := off - int64(w)*storeWindow
	return win[at : at+int64(len(b)) : at+int64(len(b))]
}

// dropCold drops the pages of cold arrays from the page cache once they
// are written to disk: arrays the build does not read again (the
// pyramid's nodes, the stacked events, the time cells), about half of
// the store at a billion events. On this project's machines a page the
// system has not used lately costs several times its copy to fill (see
// keepSpill); dropped pages are used again for later arrays. The arrays
// the time cells' pass reads back (times and types) stay cached: the
// disk reads them at under 1 GB/s. Queries read dropped arrays from the
// disk, as after a restart.
func (s *store) dropCold(f *os.File) {
	defer close(s.coldDone)
	var queue []storeRange
	var queued int64
	for r := range s.colds {
		startWriteback(f, r.off, r.off+r.n)
		queue = append(queue, r)
		queued += r.n
		for queued > s.step { // the oldest: written back by now, or nearly
			q := queue[0]
			queue, queued = queue[1:], queued-q.n
			dropPages(f, q.off, q.off+q.n)
		}
	}
}

// storeSlice is put for a typed array: the stored copy of a, or a; cold
// as put's.
func storeSlice[T any](s *store, a []T, cold bool) []T {
	if s == nil || len(a) == 0 {
		return a
	}
	b := s.put(bytesOf(a), cold)
	if &b[0] == (*byte)(unsafe.Pointer(&a[0])) {
		return a
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(a))
}

// bytesOf returns the memory of a as bytes.
func bytesOf[T any](a []T) []byte {
	if len(a) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), len(a)*int(unsafe.Sizeof(z)))
}

// locate returns the store's file and the offset in it of b, when b
// lies in the store's mapping.
func (s *store) locate(b []byte) (*os.File, int64, bool) {
	p := uintptr(unsafe.Pointer(&b[0]))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.wins {
		if m == nil {
			continue
		}
		if lo := uintptr(unsafe.Pointer(&m[0])); p >= lo && p-lo < uintptr(len(m)) {
			return s.f, int64(i)*storeWindow + int64(p-lo), s.f != nil
		}
	}
	return nil, 0, false
}

// load returns a's elements without mapping their pages when a lies in
// the store: read from the store's file into *buf (grown as needed); a
// itself otherwise. The passes that read every array once (the time
// cells, WriteFile) read so: through the mapping, the system would map
// whole folios and the pages around each fault, arrays of other tracks
// among them, and keep them resident until unmapped.
func load[T any](s *store, a []T, buf *[]T) []T {
	if s == nil || len(a) == 0 {
		return a
	}
	f, off, ok := s.locate(bytesOf(a))
	if !ok {
		return a
	}
	if cap(*buf) < len(a) {
		*buf = make([]T, len(a))
	}
	dst := (*buf)[:len(a)]
	if _, err := f.ReadAt(bytesOf(dst), off); err != nil {
		return a // the mapping still reads it
	}
	return dst
}

// resident returns how many bytes of the store's mappings are in memory.
func (s *store) resident() int64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for i, m := range s.wins {
		if m == nil {
			continue
		}
		used := min(s.off-int64(i)*storeWindow, storeWindow)
		if used > 0 {
			n += residentBytes(m[:used])
		}
	}
	return n
}

// failed returns the store's first error.
func (s *store) failed() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// close unmaps the store and closes its file; nothing read from it may
// be used afterwards.
func (s *store) close() error { return s.end(unmapWindow) }

// abandon is close for a Build that failed while snapshots (live.go) may
// still be queried: their sealed arrays then read as zeros (empty
// buckets, wrong but bounded answers) instead of faulting. The mappings'
// address ranges stay reserved until the process ends.
func (s *store) abandon() error { return s.end(zeroWindow) }

func (s *store) end(unmap func([]byte) error) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.colds != nil {
		close(s.colds)
		<-s.coldDone
		s.colds = nil
	}
	var err error
	for i, m := range s.wins {
		if m != nil {
			if uerr := unmap(m); err == nil {
				err = uerr
			}
			s.wins[i] = nil
		}
	}
	if s.f != nil {
		if cerr := s.f.Close(); err == nil {
			err = cerr
		}
		s.f = nil
	}
	return err
}
