package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(benchClientEnv); url != "" {
		runBenchClients(url)
	}
	goleak.VerifyTestMain(m)
}

// driver opens a fresh, migrated store for one test.
type driver struct {
	name string
	open func(t testing.TB) store.Store
}

var drivers = []driver{
	{"sqlite", func(tb testing.TB) store.Store {
		tb.Helper()
		st, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "eddy.db"))
		if err != nil {
			tb.Fatalf("open sqlite: %v", err)
		}
		return migrated(tb, st)
	}},
	{"postgres", func(tb testing.TB) store.Store {
		tb.Helper()
		st, err := postgres.Open(context.Background(), pgtest.NewDatabase(tb))
		if err != nil {
			tb.Fatalf("open postgres: %v", err)
		}
		return migrated(tb, st)
	}},
}

func migrated(tb testing.TB, st store.Store) store.Store {
	tb.Helper()
	tb.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	return st
}

// countingStore counts Rows calls and can be made to fail them.
type countingStore struct {
	store.Store
	rows atomic.Int64
	fail atomic.Bool
}

var errInjected = errors.New("injected failure")

func (c *countingStore) Rows(ctx context.Context, p store.RowsParams) ([]store.Row, error) {
	c.rows.Add(1)
	if c.fail.Load() {
		return nil, errInjected
	}
	return c.Store.Rows(ctx, p)
}

// env is one test's hub behind a small HTTP handler.
type env struct {
	t   testing.TB
	st  *countingStore
	log *changelog.Log
	hub *Hub
	srv *httptest.Server
}

// forEachDriver runs fn in parallel subtests, once per driver.
func forEachDriver(t *testing.T, opts Options, fn func(e *env)) {
	t.Helper()
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			fn(newEnv(t, d.open(t), opts))
		})
	}
}

func newEnv(tb testing.TB, st store.Store, opts Options) *env {
	tb.Helper()
	e := &env{t: tb, st: &countingStore{Store: st}}
	e.log = changelog.New(e.st, changelog.Options{OnCommit: func(space string, head int64) { e.hub.Notify(space, head) }})
	tb.Cleanup(func() { _ = e.log.Close() })
	if _, err := e.log.EnsureSpace(context.Background(), "s"); err != nil {
		tb.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e.hub = New(e.log, opts)
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	tb.Cleanup(e.srv.Close)
	tb.Cleanup(func() { stopHub(tb, e.hub) })
	return e
}

func stopHub(tb testing.TB, h *Hub) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Stop(ctx); err != nil {
		tb.Errorf("stop hub: %v", err)
	}
}

// serve is a minimal watch endpoint: /{space}?from=N&<filters>.
func (e *env) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from := int64(-1)
	if q.Has("from") {
		from, _ = strconv.ParseInt(q.Get("from"), 10, 64)
		q.Del("from")
	}
	f, err := changelog.ParseFilter(q)
	r = r.WithContext(WithKey(r.Context(), r.Header.Get("X-Key")))
	if err == nil {
		err = e.hub.Serve(w, r, Params{Space: strings.TrimPrefix(r.URL.Path, "/"), From: from, Filter: f})
	}
	if err != nil {
		var pe *problem.Error
		if !errors.As(err, &pe) {
			pe = terminal(err)
		}
		w.WriteHeader(problem.Status(pe.Code))
		_, _ = w.Write(appendError(nil, pe))
	}
}

// write appends n commits of type typ to space s and returns the head.
func (e *env) write(typ string, n int) int64 {
	e.t.Helper()
	ms := make([]changelog.Mutation, n)
	for i := range ms {
		ms[i] = changelog.Mutation{Op: changelog.OpPut, Type: typ, EntityID: fmt.Sprintf("%s%d", typ, time.Now().UnixNano()+int64(i)), Properties: json.RawMessage(`{"v":1}`)}
	}
	res, err := e.log.Write(context.Background(), changelog.WriteRequest{Space: "s", Mutations: ms, Provenance: store.Provenance{Actor: "test", Via: "api"}})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.LastSeq
}

// client is a watch stream read line by line.
type client struct {
	t      testing.TB
	res    *http.Response
	br     *bufio.Reader
	cancel context.CancelFunc
}

// open opens a watch; query is everything after "?".
func (e *env) open(query string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *client {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/s?"+query, nil)
	tr := &http.Transport{DialContext: dial}
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		cancel()
		e.t.Fatalf("open watch: %v", err)
	}
	c := &client{t: e.t, res: res, br: bufio.NewReader(res.Body), cancel: func() { cancel(); tr.CloseIdleConnections() }}
	e.t.Cleanup(c.close)
	return c
}

func (c *client) close() {
	c.cancel()
	c.res.Body.Close()
}

// frame is one decoded line.
type frame struct {
	Seq      *int64          `json:"seq"`
	Bookmark *int64          `json:"bookmark"`
	Type     string          `json:"type"`
	Error    *problem.Error  `json:"error"`
	Raw      json.RawMessage `json:"-"`
}

// next reads one line, failing the test after a deadline.
func (c *client) next() (frame, error) {
	c.t.Helper()
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := c.br.ReadBytes('\n')
		ch <- result{b, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return frame{}, r.err
		}
		var f frame
		if err := json.Unmarshal(r.b, &f); err != nil {
			c.t.Fatalf("line %q: %v", r.b, err)
		}
		f.Raw = r.b
		return f, nil
	case <-time.After(20 * time.Second):
		c.close()
		<-ch
		c.t.Fatal("no line within 20s")
		return frame{}, nil
	}
}

// must reads one line that must exist.
func (c *client) must() frame {
	c.t.Helper()
	f, err := c.next()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return f
}

// Listen forwards to the wrapped store when it is a store.Notifier.
func (c *countingStore) Listen(ctx context.Context, fn func(string, int64)) error {
	n, ok := c.Store.(store.Notifier)
	if !ok {
		return errors.New("store is not a notifier")
	}
	return n.Listen(ctx, fn)
}
