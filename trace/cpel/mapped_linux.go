//go:build linux

package cpel

import (
	"io"
	"os"
	"syscall"
)

// mapsFiles says that mapRange maps files here.
const mapsFiles = true

// mapFile returns the file behind r when r is an open file that mapRange
// can map, else nil.
func mapFile(r io.ReaderAt) *os.File {
	f, _ := r.(*os.File)
	return f
}

// mapRange maps f's bytes [off, off+n) read-only (off a multiple of the
// page size), with their page tables filled at once: the records of a
// window are all read, in order, so faulting them in page by page only
// costs more.
func mapRange(f *os.File, off int64, n int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), off, n, syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
}

func unmapRange(b []byte) { syscall.Munmap(b) }

// fileSize returns f's size now.
func fileSize(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
