//go:build unix

package benchproc

import (
	"syscall"
	"time"
)

// CPUNow returns the processor time this process has used in its own
// code and in the kernel on its behalf (zero if it cannot tell).
func CPUNow() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
