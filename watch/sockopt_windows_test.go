//go:build windows

package watch

import "syscall"

// setRecvBuffer sets a socket's SO_RCVBUF.
func setRecvBuffer(fd uintptr, n int) error {
	return syscall.SetsockoptInt(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}
