// Package eddytest runs a real eddy in process for the tests of the
// packages that talk to it over HTTP (the Go client, the examples built
// on it): eddy.Open on a temporary data directory, SQLite or a fresh
// PostgreSQL database, with the server package on an httptest server
// behind a handler that can be swapped, so a test can restart eddy under
// the same address.
package eddytest

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/server"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// Drivers name the stores a test can run on.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Drivers are every driver, for tests that run on each.
var Drivers = []string{SQLite, Postgres}

// Server is one test's eddy and its HTTP address.
type Server struct {
	t     testing.TB
	dir   string
	dbURL string
	srv   *httptest.Server
	h     atomic.Pointer[http.Handler]
	eddy  *eddy.Eddy

	// URL is the server's base address (http://127.0.0.1:port).
	URL string
	// Admin is the secret of an admin token bound to every space, with
	// the actor "owner".
	Admin string
}

// New opens eddy on driver (SQLite or Postgres: a fresh database that is
// dropped after the test) with a fast trigger engine and serves it until
// the test ends.
func New(tb testing.TB, driver string) *Server {
	tb.Helper()
	s := &Server{t: tb, dir: tb.TempDir()}
	if driver == Postgres {
		s.dbURL = pgtest.NewDatabase(tb)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	s.Start()
	tb.Cleanup(s.Stop) // before srv.Close: streams end first
	_, secret, err := s.eddy.Auth().Create(context.Background(), auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin, Actor: "owner"})
	if err != nil {
		tb.Fatalf("create admin token: %v", err)
	}
	s.Admin = secret
	return s
}

// serve hands a request to the running eddy, or answers 503 unavailable
// while none runs.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	h := s.h.Load()
	if h == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"eddy is restarting"}}`))
		return
	}
	(*h).ServeHTTP(w, r)
}

// Start opens eddy on the server's data directory and database and
// serves it (New calls it; call it again after Stop to restart).
func (s *Server) Start() {
	s.t.Helper()
	logger := slog.New(slog.NewTextHandler(s.t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	e, err := eddy.Open(context.Background(), eddy.Config{
		DataDir: s.dir, DatabaseURL: s.dbURL, Logger: logger,
		Engine: engine.Options{Poll: 50 * time.Millisecond, LeaseTTL: 2 * time.Second},
		// A short journal safe window: tests wait for commits to settle.
		JournalSafeWindow: 20 * time.Millisecond,
	})
	if err != nil {
		s.t.Fatalf("open eddy: %v", err)
	}
	cfg := e.ServerConfig()
	cfg.Logger, cfg.Version = logger, "test"
	api, err := server.New(cfg)
	if err != nil {
		s.t.Fatalf("server: %v", err)
	}
	h := api.Handler()
	s.eddy = e
	s.h.Store(&h)
}

// Stop closes eddy: its watch streams end with the terminal unavailable
// frame, and requests are answered 503 until Start.
func (s *Server) Stop() {
	s.t.Helper()
	s.h.Store(nil)
	if s.eddy == nil {
		return
	}
	if err := s.eddy.Close(); err != nil {
		s.t.Errorf("close eddy: %v", err)
	}
	s.eddy = nil
}

// Eddy returns the running eddy (nil while stopped).
func (s *Server) Eddy() *eddy.Eddy { return s.eddy }

// Token creates a token on the running eddy and returns its id and
// secret.
func (s *Server) Token(p auth.CreateParams) (id, secret string) {
	s.t.Helper()
	tok, secret, err := s.eddy.Auth().Create(context.Background(), p)
	if err != nil {
		s.t.Fatalf("create token: %v", err)
	}
	return tok.ID, secret
}

// Buffer is a bytes.Buffer safe for concurrent use: the log of a program
// a test runs in the background.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
