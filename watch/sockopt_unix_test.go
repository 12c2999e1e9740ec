//go:build unix

package watch

import "syscall"

// setRecvBuffer sets a socket's SO_RCVBUF.
func setRecvBuffer(fd uintptr, n int) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}
