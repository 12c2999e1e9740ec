package server

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
	"github.com/eddy-run/eddy/watch"
)

// outageDrivers open two stores on one fresh database: tests close one
// to stand for an outage while the other stays up.
var outageDrivers = []struct {
	name string
	open func(t *testing.T) func() store.Store
}{
	{"sqlite", func(t *testing.T) func() store.Store {
		t.Helper()
		path := filepath.Join(t.TempDir(), "eddy.db")
		return func() store.Store {
			st, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			return migrated(t, st)
		}
	}},
	{"postgres", func(t *testing.T) func() store.Store {
		t.Helper()
		url := pgtest.NewDatabase(t)
		return func() store.Store {
			st, err := postgres.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			return migrated(t, st)
		}
	}},
}

// TestStoreOutage: when the store cannot be reached, writes, reads,
// watches and the per-request token lookup answer 503 unavailable with
// Retry-After, never 500.
func TestStoreOutage(t *testing.T) {
	t.Parallel()
	for _, d := range outageDrivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			open := d.open(t)
			authStore, logStore := open(), open()
			lg := changelog.New(logStore, changelog.Options{})
			t.Cleanup(func() { _ = lg.Close() })
			if _, err := lg.EnsureSpace(context.Background(), "default"); err != nil {
				t.Fatal(err)
			}
			as := auth.NewService(authStore)
			logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
			hub := watch.New(lg, watch.Options{Logger: logger, Heartbeat: testHeartbeat})
			srv := httptest.NewServer(newServer(t, Config{Log: lg, Auth: as, Hub: hub, Logger: logger, Version: "test"}).Handler())
			t.Cleanup(srv.Close)
			t.Cleanup(func() { stopHub(t, hub) })
			e := &env{t: t, srv: srv, log: lg, auth: as, hub: hub}
			e.admin = e.token(auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin, Actor: "owner"})
			e.call(t, "PUT", "/api/v1/spaces/default/entities/task/t1", map[string]any{"properties": map[string]any{"n": 1}}).want(201)

			_ = logStore.Close()
			for _, c := range []struct{ method, path string }{
				{"PUT", "/api/v1/spaces/default/entities/task/t2"},
				{"GET", "/api/v1/spaces/default/entities/task/t1"},
				{"GET", "/api/v1/spaces/default/changes?from=0"},
				{"GET", "/api/v1/spaces/default/changes?watch=1&from=0"},
			} {
				var body any
				if c.method == "PUT" {
					body = map[string]any{"properties": map[string]any{"n": 1}}
				}
				r := e.call(t, c.method, c.path, body)
				r.problem(problem.Unavailable)
				if r.header.Get("Retry-After") == "" {
					t.Errorf("%s %s: no Retry-After", c.method, c.path)
				}
			}

			_ = authStore.Close()
			r := e.call(t, "GET", "/api/v1/spaces/default", nil)
			r.problem(problem.Unavailable)
			if r.header.Get("Retry-After") == "" {
				t.Error("token lookup: no Retry-After")
			}
		})
	}
}
