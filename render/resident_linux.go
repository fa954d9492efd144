package render

import (
	"os"
	"syscall"
	"unsafe"
)

// residentBytes returns how many bytes of the mapping b are in memory
// (mincore); all of them when the system does not say.
func residentBytes(b []byte) int64 {
	if len(b) == 0 {
		return 0
	}
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return int64(len(b))
	}
	var n int64
	for _, v := range vec {
		n += int64(v & 1)
	}
	return min(n*int64(page), int64(len(b)))
}

// adviseRandom tells the system that the file mapping b is read at
// random places: a fault reads the page it needs, not the pages around
// it (read-ahead), so that a query of a cold file reads what it uses and
// resident memory is what views touch.
func adviseRandom(b []byte) { syscall.Madvise(b, syscall.MADV_RANDOM) }

// zeroWindow replaces the mapping b with zero pages at the same address,
// so that a stray reader of b reads zeros instead of faulting, and the
// file's pages are released.
func zeroWindow(b []byte) error {
	_, _, errno := syscall.Syscall6(syscall.SYS_MMAP, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_FIXED, ^uintptr(0), 0)
	if errno != 0 {
		return errno
	}
	return nil
}
