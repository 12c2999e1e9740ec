package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// StartProfile starts this process's CPU profile into dir/file and
// returns what stops it; with dir "" it profiles nothing.
func StartProfile(dir, file string) (stop func(), err error) {
	if dir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("profile dir: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, file))
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
