//go:build unix

package render

import (
	"fmt"
	"math"
	"os"
	"syscall"
)

// mapsFiles says mapFile maps (rather than reads) files.
const mapsFiles = true

// mapFile maps the first size bytes of f read-only. The mapping stays
// valid after f is closed, and after the file is renamed over or
// removed (the viewer never truncates an index file in place).
func mapFile(f *os.File, size int64) (data []byte, unmap func() error, err error) {
	if size <= 0 || size > math.MaxInt {
		return nil, nil, fmt.Errorf("render: cannot map %d bytes", size)
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}

// mapWindow maps n bytes of f from off (a multiple of the page size)
// read-only and shared, so that what is written to f with pwrite shows
// in it. Bytes past f's end must not be read until written.
func mapWindow(f *os.File, off int64, n int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), off, n, syscall.PROT_READ, syscall.MAP_SHARED)
}

func unmapWindow(b []byte) error { return syscall.Munmap(b) }
