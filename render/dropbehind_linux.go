//go:build linux && (amd64 || arm64)

package render

import (
	"os"
	"syscall"
)

// dropsPages says that dropPages drops pages here.
const dropsPages = true

// startWriteback starts writing the dirty pages of f's bytes [from, to)
// to disk, without waiting.
func startWriteback(f *os.File, from, to int64) {
	const syncFileRangeWrite = 2 // SYNC_FILE_RANGE_WRITE
	syscall.SyncFileRange(int(f.Fd()), from, to-from, syncFileRangeWrite)
}

// dropPages writes f's bytes [from, to) to disk, waiting for it, and
// drops them from the page cache.
func dropPages(f *os.File, from, to int64) {
	const (
		syncFileRangeAll = 1 | 2 | 4 // SYNC_FILE_RANGE_WAIT_BEFORE | _WRITE | _WAIT_AFTER
		fadvDontNeed     = 4         // POSIX_FADV_DONTNEED
	)
	fd := int(f.Fd())
	if syscall.SyncFileRange(fd, from, to-from, syncFileRangeAll) != nil {
		return // the pages stay cached: only slower
	}
	syscall.Syscall6(syscall.SYS_FADVISE64, uintptr(fd), uintptr(from), uintptr(to-from), fadvDontNeed, 0, 0)
}
