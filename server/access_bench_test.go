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
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "eddy.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	lg := changelog.New(st, changelog.Options{})
	defer lg.Close()
	if _, err := lg.EnsureSpace(ctx, "default"); err != nil {
		b.Fatal(err)
	}
	as := auth.NewService(st)
	_, secret, err := as.Create(ctx, auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin, Actor: "owner"})
	if err != nil {
		b.Fatal(err)
	}
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
				r := httptest.NewRequest("GET", "/api/v1/spaces/default", nil)
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
