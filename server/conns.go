package server

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Connection limits: the defaults of ConnLimits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 2 * time.Minute
	DefaultIdleTimeout       = time.Minute
	DefaultMaxConns          = 4096
	// DefaultHealthConns is how many connections beyond MaxConns are
	// accepted to answer /healthz and /readyz (and 503 to the rest).
	DefaultHealthConns = 32
	// overCapDeadline bounds a connection accepted beyond MaxConns: it
	// has this long to send its request and read the answer.
	overCapDeadline = 5 * time.Second
)

// ConnLimits bound what one client connection may hold. Zero fields take
// the defaults above.
type ConnLimits struct {
	// ReadHeaderTimeout bounds reading a request's head.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included: a body
	// trickled in is cut at this deadline.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response (from the end of its
	// request's head). Watch and live view streams are exempt: they take
	// their connection over and bound each write on their own.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long.
	IdleTimeout time.Duration
	// MaxConns caps the open connections (streams included).
	MaxConns int
	// HealthConns are accepted beyond MaxConns for /healthz and /readyz
	// only; beyond both, new connections wait in the listen backlog.
	HealthConns int
}

func (l ConnLimits) withDefaults() ConnLimits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.WriteTimeout, DefaultWriteTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.HealthConns <= 0 {
		l.HealthConns = DefaultHealthConns
	}
	return l
}

// HTTPServer returns an http.Server for h (a Server's Handler) with the
// timeouts of l. Serve it on Listen's listener so that MaxConns holds
// and connections beyond it answer only health checks.
func HTTPServer(h http.Handler, l ConnLimits, errorLog *log.Logger) *http.Server {
	l = l.withDefaults()
	return &http.Server{
		Handler:           healthOnlyOverCap(h),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		ErrorLog:          errorLog,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if lc, ok := c.(*limitedConn); ok && lc.over {
				return context.WithValue(ctx, overCapKey{}, true)
			}
			return ctx
		},
	}
}

type overCapKey struct{}

// healthOnlyOverCap answers a request on a connection beyond MaxConns
// with 503 and Retry-After, unless it is a health check; either way the
// connection closes after the answer.
func healthOnlyOverCap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(overCapKey{}) == nil {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"the server is at its connection limit; retry later"}}` + "\n"))
	})
}

// Listener caps the connections a listener hands out (see ConnLimits).
type Listener struct {
	net.Listener
	max   int
	slots chan struct{} // one per open connection, MaxConns+HealthConns
	open  atomic.Int64
	done  chan struct{}
	once  sync.Once
}

// Listen wraps ln with l's connection cap.
func Listen(ln net.Listener, l ConnLimits) *Listener {
	l = l.withDefaults()
	return &Listener{Listener: ln, max: l.MaxConns, slots: make(chan struct{}, l.MaxConns+l.HealthConns), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (ln *Listener) Accept() (net.Conn, error) {
	select {
	case ln.slots <- struct{}{}:
	case <-ln.done:
		return nil, net.ErrClosed
	}
	c, err := ln.Listener.Accept()
	if err != nil {
		<-ln.slots
		return nil, err
	}
	n := ln.open.Add(1)
	lc := &limitedConn{Conn: c, ln: ln, over: n > int64(ln.max)}
	if lc.over {
		_ = c.SetDeadline(time.Now().Add(overCapDeadline))
	}
	return lc, nil
}

// Close closes the listener and wakes an Accept waiting for a slot.
func (ln *Listener) Close() error {
	ln.once.Do(func() { close(ln.done) })
	return ln.Listener.Close()
}

// Open returns the number of open connections it handed out.
func (ln *Listener) Open() int { return int(ln.open.Load()) }

// limitedConn gives its slot back when closed (once, however often
// Close is called, hijacked or not).
type limitedConn struct {
	net.Conn
	ln   *Listener
	over bool
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.ln.open.Add(-1)
		<-c.ln.slots
	})
	return err
}

// CloseWrite half-closes the connection when it can: net/http does so
// before closing a connection whose request body it did not read, so the
// client reads the answer rather than a reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// SyscallConn gives the connection's descriptor, when it has one: a
// taken-over watch stream writes to it directly.
func (c *limitedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("server: connection has no descriptor")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("server: connection descriptor: %w", err)
	}
	return rc, nil
}
