//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// counterSize is the size of the revocation counter file.
const counterSize = 8

// mapCounter opens (creating it with mode 0600) the counter file at path
// and maps its 8 bytes shared, so every process sees every update.
func mapCounter(path string) (*int64, func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("revocations: %w", err)
	}
	fail := func(err error) (*int64, func() error, error) {
		_ = f.Close()
		return nil, nil, fmt.Errorf("revocations: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if fi.Size() < counterSize {
		// Growing a shorter file (new, or torn by a crash at creation)
		// zero-fills it; a concurrent opener does the same.
		if err := f.Truncate(counterSize); err != nil {
			return fail(err)
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, counterSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fail(err)
	}
	// The mapping starts on a page boundary: the counter is aligned.
	counter := (*int64)(unsafe.Pointer(&mem[0]))
	unmap := func() error { return errors.Join(syscall.Munmap(mem), f.Close()) }
	return counter, unmap, nil
}
