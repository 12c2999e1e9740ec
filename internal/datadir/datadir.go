// Package datadir guards eddy's data directory: one process at a time
// may use it. A process holds an OS file lock on <dir>/eddy.lock for as
// long as it uses the directory; the file names the holder's pid, so a
// second process can say which process is in the way.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFile is the lock's file name inside the data directory.
const LockFile = "eddy.lock"

// HeldError reports a data directory locked by another process. PID is 0
// when the holder could not be read.
type HeldError struct {
	Dir string
	PID int
}

// Error implements error.
func (e *HeldError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("data directory %s is in use by another eddy process (lock %s)", e.Dir, filepath.Join(e.Dir, LockFile))
	}
	return fmt.Sprintf("data directory %s is in use by eddy process %d (lock %s)", e.Dir, e.PID, filepath.Join(e.Dir, LockFile))
}

// Lock is a held data directory lock.
type Lock struct {
	f *os.File
}

// Acquire creates dir (mode 0700) if it is missing and locks it, without
// waiting: a directory another process holds is a *HeldError.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	held, err := tryLock(f)
	if err != nil || held {
		pid := readPID(f)
		_ = f.Close()
		if held {
			return nil, &HeldError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	if err := writePID(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	return &Lock{f: f}, nil
}

// Release unlocks the directory. It is safe on a nil Lock and idempotent.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	// Empty the pid first: a stale pid must not name an unrelated process.
	_ = f.Truncate(0)
	return errors.Join(unlock(f), f.Close())
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

func readPID(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	return pid
}
