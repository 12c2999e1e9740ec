//go:build linux

package watch

import (
	"errors"
	"net"
	"syscall"
)

// directWriter returns a function that writes to c's socket at once,
// never waiting for it to drain: it returns how much of b the socket
// took (all of it, or less when its send buffer filled, or an error
// came). It is nil when c exposes no descriptor (TLS, a test pipe).
func directWriter(c net.Conn) func(b []byte) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func(b []byte) (int, error) {
		n := 0
		var werr error
		err := rc.Write(func(fd uintptr) bool {
			for n < len(b) {
				m, err := syscall.Write(int(fd), b[n:])
				if m > 0 {
					n += m
				}
				switch {
				case errors.Is(err, syscall.EINTR):
					continue
				case errors.Is(err, syscall.EAGAIN):
					return true
				case err != nil:
					werr = err
					return true
				case m <= 0:
					return true
				}
			}
			return true
		})
		if err == nil {
			err = werr
		}
		return n, err
	}
}
