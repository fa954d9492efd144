//go:build unix

package tracetest

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time the process has used so far (user and
// system, all threads), for benchmarks that report work per CPU-second on
// a shared machine; 0 where the system cannot say.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
