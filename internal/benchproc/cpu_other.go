//go:build !unix

package benchproc

import "time"

// CPUNow is zero where getrusage is missing.
func CPUNow() (user, sys time.Duration) { return 0, 0 }
