package harness

import "syscall"

// FileLimit is the process's soft open-file limit (the Go runtime raises
// it to the hard limit at start); 0 if unknown.
func FileLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return l.Cur
}
