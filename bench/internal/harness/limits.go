package harness

import (
	"syscall"
	"time"
)

// FileLimit is the process's soft open-file limit (the Go runtime raises
// it to the hard limit at start); 0 if unknown.
func FileLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return l.Cur
}

// CPU is the processor time a process has used.
type CPU struct {
	// User is the time spent in the process's own code, Sys in the
	// kernel on its behalf (system calls: socket writes and reads).
	User, Sys time.Duration
}

// CPUNow reads this process's processor time (zero if it cannot).
func CPUNow() CPU {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return CPU{}
	}
	return CPU{User: time.Duration(ru.Utime.Nano()), Sys: time.Duration(ru.Stime.Nano())}
}

// Since returns the processor time used from earlier to c.
func (c CPU) Since(earlier CPU) CPU {
	return CPU{User: c.User - earlier.User, Sys: c.Sys - earlier.Sys}
}

// Total is User plus Sys.
func (c CPU) Total() time.Duration { return c.User + c.Sys }
