//go:build unix

package strata

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used, user and system:
// BenchmarkExpire's measure of work, which other programs on the machine
// disturb less than its wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
