package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/internal/eddytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait of a test on a condition.
const wait = 20 * time.Second

// env is one test's eddy (see eddytest) with an admin client of it.
type env struct {
	*eddytest.Server
	t  *testing.T
	c  *client.Client // the admin's client
	sp *client.Space  // the space "default" of c
}

// forEachDriver runs fn in a parallel subtest per driver.
func forEachDriver(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Helper()
	for _, d := range eddytest.Drivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			defer failOnMust(t)
			e := &env{Server: eddytest.New(t, d), t: t}
			e.c = e.client(e.Admin, nil)
			e.sp = e.c.Space("default")
			fn(t, e)
		})
	}
}

// token creates a token and returns its id and secret.
func (e *env) token(p auth.CreateParams) (id, secret string) {
	e.t.Helper()
	return e.Token(p)
}

// client returns a client of the env with token, over hc (nil: the
// client's own), closing its idle connections when the test ends.
func (e *env) client(token string, hc *http.Client) *client.Client {
	e.t.Helper()
	c, err := client.New(e.URL, client.Options{Token: token, HTTPClient: hc})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(c.CloseIdleConnections)
	return c
}

// cutter is an HTTP client whose connections a test can cut, the way a
// network failure would, and refuse to open.
type cutter struct {
	mu     sync.Mutex
	conns  map[net.Conn]bool // guarded by mu
	refuse bool              // guarded by mu
	dials  atomic.Int64
	tr     *http.Transport
	hc     *http.Client
}

// errRefused is a dial the cutter refused.
var errRefused = errors.New("test: dial refused")

func newCutter(t *testing.T) *cutter {
	t.Helper()
	c := &cutter{conns: map[net.Conn]bool{}}
	var d net.Dialer
	c.tr = &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c.mu.Lock()
		refuse := c.refuse
		c.mu.Unlock()
		if refuse {
			return nil, errRefused
		}
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c.dials.Add(1)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.conns[conn] = true
		return conn, nil
	}}
	c.hc = &http.Client{Transport: c.tr}
	t.Cleanup(c.tr.CloseIdleConnections)
	return c
}

// cut closes every connection the cutter opened.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for conn := range c.conns {
		_ = conn.Close()
		delete(c.conns, conn)
	}
}

// setRefuse makes new dials fail (true) or succeed (false).
func (c *cutter) setRefuse(v bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuse = v
}

// eventually polls cond until it holds or wait passes.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ctx returns a context that ends with the test.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 2*wait)
	t.Cleanup(cancel)
	return c
}

// mustFailure is the panic of must, turned into a test failure by
// forEachDriver.
type mustFailure struct {
	err  error
	file string
	line int
}

// must returns v, or fails the running forEachDriver test on err.
func must[T any](v T, err error) T {
	if err != nil {
		_, file, line, _ := runtime.Caller(1)
		panic(mustFailure{err: err, file: filepath.Base(file), line: line})
	}
	return v
}

// failOnMust turns a must panic into t.Fatal; defer it in the test's
// goroutine.
func failOnMust(t *testing.T) {
	t.Helper()
	if r := recover(); r != nil {
		m, ok := r.(mustFailure)
		if !ok {
			panic(r)
		}
		t.Fatalf("%s:%d: %v", m.file, m.line, m.err)
	}
}

// wantCode fails unless err is an *Error with code.
func wantCode(t *testing.T, err error, code string) *client.Error {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("err = %v, want code %s", err, code)
	}
	return ce
}
