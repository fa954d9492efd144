//go:build !linux

package main

import "time"

// threadCPU is not available on this system.
func threadCPU() (time.Duration, bool) { return 0, false }
