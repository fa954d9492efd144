//go:build !unix

package render

import (
	"fmt"
	"io"
	"math"
	"os"
)

// mapsFiles says mapFile maps (rather than reads) files.
const mapsFiles = false

// mapFile reads the first size bytes of f into memory where the system
// has no mmap: the index then costs its full size in memory.
func mapFile(f *os.File, size int64) (data []byte, unmap func() error, err error) {
	if size <= 0 || size > math.MaxInt {
		return nil, nil, fmt.Errorf("render: cannot read %d bytes", size)
	}
	data = make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), data); err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}

// mapWindow fails with errNoMap: without mmap, the store is not used.
func mapWindow(f *os.File, off int64, n int) ([]byte, error) { return nil, errNoMap }

func unmapWindow([]byte) error { return nil }
