package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/definitions"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/journal"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
	"github.com/eddy-run/eddy/views"
	"github.com/eddy-run/eddy/watch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// driver opens a fresh, migrated store for one test.
type driver struct {
	name string
	open func(t *testing.T) store.Store
}

var drivers = []driver{
	{"sqlite", func(t *testing.T) store.Store { t.Helper(); return openSQLite(t) }},
	{"postgres", func(t *testing.T) store.Store {
		t.Helper()
		st, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatalf("open postgres: %v", err)
		}
		return migrated(t, st)
	}},
}

func migrated(t testing.TB, st store.Store) store.Store {
	t.Helper()
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return st
}

// openSQLite opens a fresh, migrated SQLite store.
func openSQLite(t testing.TB) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "eddy.db"))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	return migrated(t, st)
}

// withServices fills in the services New requires that cfg leaves out,
// as a program wiring a server by hand does: a Log over a fresh SQLite
// store, Auth over its store, and definitions (running functions
// through cfg.Engine, else a never-started engine), views (on cfg.Hub)
// and a journal over the Log.
func withServices(t testing.TB, cfg Config) Config {
	t.Helper()
	if cfg.Log == nil {
		lg := changelog.New(openSQLite(t), changelog.Options{})
		t.Cleanup(func() { _ = lg.Close() })
		cfg.Log = lg
	}
	if cfg.Auth == nil {
		cfg.Auth = auth.NewService(cfg.Log.Store())
	}
	if cfg.Definitions == nil {
		exec := cfg.Engine
		if exec == nil {
			exec = engine.New(cfg.Log, nil, engine.Options{Logger: cfg.Logger})
		}
		cfg.Definitions = definitions.New(cfg.Log, definitions.Options{Executor: exec})
	}
	if cfg.Views == nil {
		cfg.Views = views.New(cfg.Log, views.Options{Hub: cfg.Hub, Logger: cfg.Logger})
	}
	if cfg.Journal == nil {
		cfg.Journal = journal.New(cfg.Log, journal.Options{Logger: cfg.Logger})
	}
	return cfg
}

// newServer is New(withServices(t, cfg)), failing t on an error.
func newServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(withServices(t, cfg))
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	return s
}

// env is one test's server over a real Log.
type env struct {
	t      *testing.T
	srv    *httptest.Server
	server *Server
	log    *changelog.Log
	auth   *auth.Service
	hub    *watch.Hub
	admin  string // secret of an admin token bound to every space
}

// forEachDriver runs fn in parallel subtests, once per driver, each with
// its own store, Log and server; e.t is the subtest.
func forEachDriver(t *testing.T, fn func(e *env)) {
	t.Helper()
	forEachDriverHeartbeat(t, testHeartbeat, fn)
}

// forEachDriverHeartbeat is forEachDriver with the watch heartbeat hb.
func forEachDriverHeartbeat(t *testing.T, hb time.Duration, fn func(e *env)) {
	t.Helper()
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			fn(newEnvHeartbeat(t, d, 0, hb))
		})
	}
}

// testHeartbeat is the watch heartbeat of test servers: long enough that
// no heartbeat lands in a test that does not wait for one.
const testHeartbeat = time.Hour

func newEnv(t *testing.T, d driver, maxBody int64) *env {
	t.Helper()
	return newEnvHeartbeat(t, d, maxBody, testHeartbeat)
}

func newEnvHeartbeat(t *testing.T, d driver, maxBody int64, testHeartbeat time.Duration) *env {
	t.Helper()
	return newEnvWith(t, d, watch.Options{Heartbeat: testHeartbeat}, func(c *Config) { c.MaxBodyBytes = maxBody })
}

// newEnvWith is newEnv with hub options wo (its Logger is set here) and
// a hook that adjusts the server's Config.
func newEnvWith(t *testing.T, d driver, wo watch.Options, hook func(*Config)) *env {
	t.Helper()
	st := d.open(t)
	var hub *watch.Hub
	lg := changelog.New(st, changelog.Options{OnCommit: func(space string, head int64) { hub.Notify(space, head) }})
	t.Cleanup(func() { _ = lg.Close() })
	if _, err := lg.EnsureSpace(context.Background(), "default"); err != nil {
		t.Fatalf("ensure space: %v", err)
	}
	as := auth.NewService(st)
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	wo.Logger = logger
	hub = watch.New(lg, wo)
	cfg := Config{Log: lg, Auth: as, Hub: hub, Logger: logger, Version: "test"}
	if hook != nil {
		hook(&cfg)
	}
	server := newServer(t, cfg)
	srv := httptest.NewServer(server.Handler())
	t.Cleanup(srv.Close)
	// Cleanups run last-registered first: streams end before srv.Close
	// waits for the requests.
	t.Cleanup(func() { stopHub(t, hub) })
	e := &env{t: t, srv: srv, server: server, log: lg, auth: as, hub: hub}
	e.admin = e.token(auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin, Actor: "owner"})
	return e
}

// token creates a token and returns its secret.
func (e *env) token(p auth.CreateParams) string {
	e.t.Helper()
	_, secret, err := e.auth.Create(context.Background(), p)
	if err != nil {
		e.t.Fatalf("create token: %v", err)
	}
	return secret
}

// resp is a finished response.
type resp struct {
	t      *testing.T
	status int
	header http.Header
	body   []byte
}

// req describes a request: Body is sent raw if it is a string or []byte,
// else as JSON; Header adds headers.
type req struct {
	Method, Path, Token string
	Body                any
	Header              map[string]string
}

func (e *env) do(t *testing.T, r req) *resp {
	t.Helper()
	var body io.Reader
	switch b := r.Body.(type) {
	case nil:
	case string:
		body = bytes.NewBufferString(b)
	case []byte:
		body = bytes.NewReader(b)
	case io.Reader:
		body = b // sent without a Content-Length
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(j)
	}
	hr, err := http.NewRequest(r.Method, e.srv.URL+r.Path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.Token)
	}
	for k, v := range r.Header {
		hr.Header.Set(k, v)
	}
	res, err := e.srv.Client().Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.Path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	checkResponse(t, hr, res.StatusCode, res.Header, b)
	return &resp{t: t, status: res.StatusCode, header: res.Header, body: b}
}

// call sends a request as the admin unless r.Token is set.
func (e *env) call(t *testing.T, method, path string, body any) *resp {
	t.Helper()
	return e.do(t, req{Method: method, Path: path, Token: e.admin, Body: body})
}

// want fails the test unless the status is status; it returns r.
func (r *resp) want(status int) *resp {
	r.t.Helper()
	if r.status != status {
		r.t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	if len(r.body) > 0 && r.header.Get("Content-Type") != "application/json" {
		r.t.Fatalf("Content-Type = %q, want application/json", r.header.Get("Content-Type"))
	}
	return r
}

// decode decodes the body into v, which it zeroes first.
func (r *resp) decode(v any) {
	r.t.Helper()
	reflect.ValueOf(v).Elem().SetZero()
	if err := json.Unmarshal(r.body, v); err != nil {
		r.t.Fatalf("decode %s: %v", r.body, err)
	}
}

// obj returns the body as a generic JSON object.
func (r *resp) obj() map[string]any {
	r.t.Helper()
	var m map[string]any
	r.decode(&m)
	return m
}

// problem checks that the body is a problem object with code and the
// status the code maps to, and returns it.
func (r *resp) problem(code string) *problem.Error {
	r.t.Helper()
	r.want(problem.Status(code))
	var body struct {
		Error *problem.Error `json:"error"`
	}
	r.decode(&body)
	if body.Error == nil || body.Error.Code != code || body.Error.Message == "" {
		r.t.Fatalf("problem = %s, want code %s with a message", r.body, code)
	}
	return body.Error
}

// seq returns the Eddy-Seq header.
func (r *resp) seq() int64 {
	r.t.Helper()
	n, err := strconv.ParseInt(r.header.Get("Eddy-Seq"), 10, 64)
	if err != nil {
		r.t.Fatalf("Eddy-Seq = %q: %v", r.header.Get("Eddy-Seq"), err)
	}
	return n
}

// head returns a space's head as the Log sees it.
func (e *env) head(t *testing.T, space string) int64 {
	t.Helper()
	sp, err := e.log.Space(context.Background(), space)
	if err != nil {
		t.Fatal(err)
	}
	return sp.Head
}

// keys returns the sorted keys of a JSON object.
func keys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

// testWriter sends log lines to the test log (shown on failure).
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// stopHub stops a test hub, failing the test if its streams do not end.
func stopHub(t *testing.T, hub *watch.Hub) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hub.Stop(ctx); err != nil {
		t.Errorf("stop hub: %v", err)
	}
}
