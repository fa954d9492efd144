//go:build !unix

package tracetest

import "time"

// CPUTime returns 0: this system offers no process CPU clock here.
func CPUTime() time.Duration { return 0 }
