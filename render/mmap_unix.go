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
