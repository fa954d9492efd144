//go:build !linux

package cpel

import (
	"errors"
	"io"
	"os"
)

// mapsFiles says that mapRange maps files here: it does not, and the
// records are read with ReadAt.
const mapsFiles = false

func mapFile(io.ReaderAt) *os.File { return nil }

func mapRange(*os.File, int64, int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapRange([]byte) {}

func fileSize(*os.File) (int64, error) { return 0, errors.ErrUnsupported }
