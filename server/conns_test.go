package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/watch"
)

// connEnv serves Handler of an env's server through HTTPServer and
// Listen with limits l, on a real TCP listener.
func connEnv(t *testing.T, l ConnLimits) (addr string, ln *Listener) {
	t.Helper()
	s := newServer(t, Config{Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln = Listen(raw, l)
	srv := HTTPServer(s.Handler(), l, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return raw.Addr().String(), ln
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedBy reports whether the server closes c within d: everything it
// sends until then is discarded.
func closedBy(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestTrickledBodyCut: a body sent one byte at a time is cut at the read
// timeout instead of holding its connection for as long as the client
// likes (issue 9: one byte every 5 s was held forever).
func TestTrickledBodyCut(t *testing.T) {
	t.Parallel()
	addr, _ := connEnv(t, ConnLimits{ReadTimeout: 300 * time.Millisecond})
	c := dial(t, addr)
	const size = 200
	if _, err := io.WriteString(c, "PUT /api/v1/spaces/default/entities/task/t1 HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	cut := make(chan struct{})
	go func() {
		defer close(cut)
		_, _ = io.Copy(io.Discard, c)
	}()
	tick := time.NewTicker(20 * time.Millisecond) // 200 bytes take 4 s
	defer tick.Stop()
	for sent := 0; sent < size; sent++ {
		select {
		case <-cut:
			return // cut before the body was complete
		case <-tick.C:
		}
		if _, err := c.Write([]byte("x")); err != nil {
			return // the server closed the connection
		}
	}
	t.Fatal("the whole trickled body was read: no read timeout")
}

// TestIdleKeepAliveClosed: a keep-alive connection left idle is closed.
func TestIdleKeepAliveClosed(t *testing.T) {
	t.Parallel()
	addr, _ := connEnv(t, ConnLimits{IdleTimeout: 200 * time.Millisecond})
	c := dial(t, addr)
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %v %v", res, err)
	}
	_ = res.Body.Close()
	if !closedBy(c, 10*time.Second) {
		t.Fatal("idle keep-alive connection still open after 10s (idle timeout 200ms)")
	}
}

// TestConnectionCap: beyond MaxConns, health checks still answer and
// everything else is 503 with Retry-After; beyond the health reserve too,
// a connection waits until one closes.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	addr, ln := connEnv(t, ConnLimits{MaxConns: 3, HealthConns: 1})
	held := make([]net.Conn, 3)
	for i := range held {
		held[i] = dial(t, addr)
	}
	waitOpen(t, ln, 3)
	over := dial(t, addr)
	waitOpen(t, ln, 4)
	get := func(c net.Conn, path string) *http.Response {
		t.Helper()
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_ = res.Body.Close()
		return res
	}
	if res := get(over, "/healthz"); res.StatusCode != http.StatusOK || !res.Close {
		t.Fatalf("healthz beyond the cap: %d close=%v, want 200 and close", res.StatusCode, res.Close)
	}
	if !closedBy(over, 10*time.Second) {
		t.Fatal("a connection beyond the cap stayed open after its answer")
	}
	waitOpen(t, ln, 3)
	over2 := dial(t, addr)
	waitOpen(t, ln, 4)
	if res := get(over2, "/api/v1"); res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("API beyond the cap: %d Retry-After %q, want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	// A connection within the cap is served as usual.
	if res := get(held[0], "/api/v1"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("API within the cap: %d, want 401 (no token)", res.StatusCode)
	}
	_ = held[1].Close()
	waitOpen(t, ln, 2)
}

// waitOpen waits until the listener has handed out n open connections.
func waitOpen(t *testing.T, ln *Listener, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for ln.Open() != n {
		if time.Now().After(deadline) {
			t.Fatalf("open connections %d, want %d", ln.Open(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStreamsOutliveWriteTimeout: a watch stream is exempt from the
// server's write timeout (it bounds each write on its own).
func TestStreamsOutliveWriteTimeout(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		raw, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			e.t.Fatal(err)
		}
		l := ConnLimits{WriteTimeout: 50 * time.Millisecond}
		srv := HTTPServer(e.server.Handler(), l, nil)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = srv.Serve(Listen(raw, l))
		}()
		e.t.Cleanup(func() {
			_ = srv.Close()
			<-done
		})
		c := dial(e.t, raw.Addr().String())
		if _, err := io.WriteString(c, "GET /api/v1/spaces/default/changes?watch=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+e.admin+"\r\n\r\n"); err != nil {
			e.t.Fatal(err)
		}
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil || res.StatusCode != http.StatusOK {
			e.t.Fatalf("watch: %v %v", res, err)
		}
		lines := bufio.NewReader(res.Body)
		if l, err := lines.ReadString('\n'); err != nil || !strings.HasPrefix(l, `{"bookmark":`) {
			e.t.Fatalf("first line %q, %v", l, err)
		}
		time.Sleep(4 * l.WriteTimeout) // well past the write timeout
		seq := e.put(e.t, "task", "t1")
		_ = c.SetReadDeadline(time.Now().Add(frameWait))
		if l, err := lines.ReadString('\n'); err != nil || !strings.Contains(l, fmt.Sprintf(`"seq":%d`, seq)) {
			e.t.Fatalf("line after the write timeout %q, %v; want row %d", l, err, seq)
		}
	})
}

// TestStreamCapsHTTP: a token at its stream cap is answered 429
// rate_limited with Retry-After, for watch and live view streams alike;
// another token still streams.
func TestStreamCapsHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, d, watch.Options{Heartbeat: testHeartbeat, MaxStreamsPerKey: 1}, nil)
			e.call(t, http.MethodPut, viewPath("/alpha"), alphaView).want(http.StatusCreated)
			cursor, _ := e.viewSync(t, e.admin, "alpha", "keyset", 10)
			e.watch(t, "/api/v1/spaces/default/changes?watch=1", e.admin)
			for _, path := range []string{"/api/v1/spaces/default/changes?watch=1", viewPath("/alpha/delta?watch=1&cursor=" + url.QueryEscape(cursor))} {
				r := e.call(t, http.MethodGet, path, nil).want(http.StatusTooManyRequests)
				r.problem("rate_limited")
				if r.header.Get("Retry-After") == "" {
					t.Errorf("%s: no Retry-After", path)
				}
			}
			other := e.token(auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin, Actor: "other"})
			e.watch(t, viewPath("/alpha/delta?watch=1&cursor="+url.QueryEscape(cursor)), other)
		})
	}
}

// TestConnDescriptor: a connection of the Listener gives its descriptor
// (a taken-over watch stream writes to it directly).
func TestConnDescriptor(t *testing.T) {
	t.Parallel()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Listen(raw, ConnLimits{})
	defer ln.Close()
	go func() {
		if c, err := net.Dial("tcp", raw.Addr().String()); err == nil {
			defer c.Close()
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, ok := c.(syscall.Conn)
	if !ok {
		t.Fatalf("%T has no SyscallConn", c)
	}
	if _, err := sc.SyscallConn(); err != nil {
		t.Fatal(err)
	}
}
