//go:build !linux

package render

// residentBytes returns the size of the mapping b: without mincore, all
// of it counts as in memory.
func residentBytes(b []byte) int64 { return int64(len(b)) }

func adviseRandom([]byte) {}

// zeroWindow unmaps b: elsewhere than on Linux a stray reader faults.
func zeroWindow(b []byte) error { return unmapWindow(b) }
