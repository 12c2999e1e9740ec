package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/internal/logbuf"
	"github.com/eddy-run/eddy/store/sqlite"
)

// BenchmarkAccessLog measures what the access log line costs a request
// (GET of one space, authenticated, served in process on SQLite): no
// access log (level WARN) is the baseline, then the text handler writing
// to io.Discard (formatting only) and to a file (formatting and one write
// per line, as to stderr), and to the file through logbuf, as eddy serve
// does (one write per batch).
func BenchmarkAccessLog(b *testing.B) {
	lg, as, secret := benchSpace(b, sqlite.Options{}, auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin, Actor: "owner"})
	f, err := os.Create(filepath.Join(b.TempDir(), "access.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buffered := logbuf.New(f, 64<<10, 100*time.Millisecond)
	defer buffered.Close()
	loggers := []struct {
		name string
		h    slog.Handler
	}{
		{"off", slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})},
		{"discard", slog.NewTextHandler(io.Discard, nil)},
		{"file", slog.NewTextHandler(f, nil)},
		{"file-batched", logbuf.NewHandler(slog.NewTextHandler(buffered, nil), buffered)},
	}
	for _, l := range loggers {
		h := newServer(b, Config{Log: lg, Auth: as, Logger: slog.New(l.h), Version: "bench"}).Handler()
		b.Run(l.name, func(b *testing.B) {
			for b.Loop() {
				r := httptest.NewRequest(http.MethodGet, "/api/v1/spaces/default", nil)
				r.Header.Set("Authorization", "Bearer "+secret)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

// benchSpace opens a migrated SQLite store with o in a temporary
// directory, a log with the space "default" and a token made with p, all
// closed when the benchmark ends.
func benchSpace(b *testing.B, o sqlite.Options, p auth.CreateParams) (*changelog.Log, *auth.Service, string) {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.OpenOptions(ctx, filepath.Join(b.TempDir(), "eddy.db"), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	lg := changelog.New(st, changelog.Options{})
	b.Cleanup(func() { _ = lg.Close() })
	if _, err := lg.EnsureSpace(ctx, "default"); err != nil {
		b.Fatal(err)
	}
	as := auth.NewService(st)
	_, secret, err := as.Create(ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	return lg, as, secret
}
