//go:build !linux

package httpapi

import "time"

// threadCPU is not measured outside Linux.
func threadCPU() (time.Duration, bool) { return 0, false }

// processCPU is not measured outside Linux.
func processCPU() (time.Duration, bool) { return 0, false }
