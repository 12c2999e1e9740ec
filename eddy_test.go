package eddy_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestOpenSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")

	e, err := eddy.Open(ctx, eddy.Config{DataDir: dir})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })

	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatalf("stat data dir: %v", err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf("data dir mode = %o, want 700", got)
	}
	if _, err := os.Stat(filepath.Join(dir, eddy.SQLiteFile)); err != nil {
		t.Errorf("sqlite file: %v", err)
	}
	if e.DataDir() != dir {
		t.Errorf("DataDir() = %q, want %q", e.DataDir(), dir)
	}
	if e.Store() == nil || e.Log() == nil || e.Auth() == nil {
		t.Fatal("a service is nil")
	}
	exerciseOpened(t, e)
}

func TestOpenPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)

	e, err := eddy.Open(ctx, eddy.Config{DataDir: t.TempDir(), DatabaseURL: url})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	exerciseOpened(t, e)

	// Opening the same database again finds the migrations applied and the
	// default space in place.
	again, err := eddy.Open(ctx, eddy.Config{DataDir: t.TempDir(), DatabaseURL: url})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatalf("close reopened: %v", err)
	}
}

// exerciseOpened checks what Open promises on any driver: the default space
// exists, a write appends seq 1, and the token service works.
func exerciseOpened(t *testing.T, e *eddy.Eddy) {
	t.Helper()
	ctx := context.Background()

	sp, err := e.Log().Space(ctx, eddy.DefaultSpace)
	if err != nil {
		t.Fatalf("default space: %v", err)
	}
	if sp.Head != 0 || sp.Horizon != 0 {
		t.Errorf("default space head/horizon = %d/%d, want 0/0", sp.Head, sp.Horizon)
	}

	res, err := e.Log().Write(ctx, changelog.WriteRequest{
		Space: eddy.DefaultSpace,
		Mutations: []changelog.Mutation{{
			Op: changelog.OpPut, Type: "task", EntityID: "t1",
			Properties: json.RawMessage(`{"title":"x"}`),
		}},
		Provenance: store.Provenance{Actor: "owner", Via: "api"},
	})
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	if res.LastSeq != 1 || res.Receipts[0].Status != store.ReceiptApplied {
		t.Errorf("write = seq %d status %q, want seq 1 applied", res.LastSeq, res.Receipts[0].Status)
	}

	_, secret, err := e.Auth().Create(ctx, auth.CreateParams{Space: eddy.DefaultSpace, Role: auth.RoleReader})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	p, err := e.Auth().Authenticate(ctx, secret)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	if p.Role != auth.RoleReader || p.Space != eddy.DefaultSpace {
		t.Errorf("principal = %s/%s, want reader/default", p.Role, p.Space)
	}
}

func TestOpenReopenKeepsData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()

	e, err := eddy.Open(ctx, eddy.Config{DataDir: dir})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if _, err := e.Log().CreateSpace(ctx, "other"); err != nil {
		t.Fatalf("create space: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}

	e, err = eddy.Open(ctx, eddy.Config{DataDir: dir})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	spaces, err := e.Log().Spaces(ctx)
	if err != nil {
		t.Fatalf("spaces: %v", err)
	}
	var ids []string
	for _, s := range spaces {
		ids = append(ids, s.ID)
	}
	if len(ids) != 2 || ids[0] != "default" || ids[1] != "other" {
		t.Errorf("spaces = %v, want [default other]", ids)
	}
}

func TestOpenSQLiteURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "elsewhere.db")

	e, err := eddy.Open(ctx, eddy.Config{DataDir: filepath.Join(dir, "data"), DatabaseURL: "sqlite:" + path})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	if _, err := os.Stat(path); err != nil {
		t.Errorf("sqlite file at the URL's path: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", eddy.SQLiteFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("default sqlite file should not exist, stat err = %v", err)
	}
}

func TestOpenBadDatabaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		url  string
	}{
		{"unknown scheme", "mysql://root@localhost/eddy"},
		{"no scheme", "just-a-name"},
		{"sqlite without path", "sqlite:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := eddy.Open(context.Background(), eddy.Config{DataDir: t.TempDir(), DatabaseURL: tt.url})
			if !errors.Is(err, eddy.ErrUnsupportedDatabase) {
				t.Fatalf("err = %v, want ErrUnsupportedDatabase", err)
			}
		})
	}
}

func TestOpenDataDirIsAFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := eddy.Open(context.Background(), eddy.Config{DataDir: file}); err == nil {
		t.Fatal("open over a file succeeded, want an error")
	}
}

// TestOpenDurability: relaxed opens on both stores' terms, strict is the
// default, anything else is refused before a store is opened.
func TestOpenDurability(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, d := range []string{"", eddy.DurabilityStrict, eddy.DurabilityRelaxed} {
		e, err := eddy.Open(ctx, eddy.Config{DataDir: t.TempDir(), Durability: d, NoEngine: true})
		if err != nil {
			t.Fatalf("durability %q: %v", d, err)
		}
		_ = e.Close()
	}
	if _, err := eddy.Open(ctx, eddy.Config{DataDir: t.TempDir(), Durability: "fast"}); !errors.Is(err, eddy.ErrBadDurability) {
		t.Fatalf("durability fast: %v, want ErrBadDurability", err)
	}
}
