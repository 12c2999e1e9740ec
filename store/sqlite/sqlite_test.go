package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/migrations"
)

func TestOpenMissingDirectory(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), filepath.Join(t.TempDir(), "missing", "eddy.db"))
	if err == nil {
		t.Fatal("open in a missing directory succeeded")
	}
}

func TestOpenBadSynchronous(t *testing.T) {
	t.Parallel()
	_, err := OpenOptions(context.Background(), filepath.Join(t.TempDir(), "eddy.db"), Options{Synchronous: "OFF"})
	if err == nil {
		t.Fatal("synchronous OFF accepted")
	}
}

func TestPragmas(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	var mode string
	var sync int
	if err := s.direct().QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := s.direct().QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || sync != 2 {
		t.Fatalf("journal_mode %q synchronous %d, want wal 2", mode, sync)
	}
	if _, err := s.r.ExecContext(ctx, `CREATE TABLE x (a)`); err == nil {
		t.Fatal("read pool accepted a write")
	}
}

func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eddy.db")
	stores := make([]*Store, 3)
	for i := range stores {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	// Several stores (as several processes would) migrate at once, twice.
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(stores))
	for _, s := range stores {
		wg.Go(func() {
			errs <- s.Migrate(ctx)
			errs <- s.Migrate(ctx)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	ms, err := migrations.List(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	err = stores[0].r.QueryRowContext(ctx, `SELECT group_concat(name, ' ') FROM (SELECT name FROM schema_migrations ORDER BY version)`).Scan(&got)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range ms {
		want = append(want, m.Name)
	}
	if len(want) == 0 || got != strings.Join(want, " ") {
		t.Fatalf("schema_migrations names = %q, want %q", got, want)
	}
}

func TestSpaces(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	b := newSpace(t, s, "b")
	newSpace(t, s, "a")
	if b.Head != 0 || b.Horizon != 0 || b.Epoch != "ep-b" || b.SchemaVersion != 0 {
		t.Fatalf("new space = %+v", b)
	}
	if _, err := s.SpaceCreate(ctx, "b", "other"); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	got, err := s.SpaceGet(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, b) {
		t.Fatalf("get = %+v, want %+v", got, b)
	}
	if got.CreatedAt.Location() != time.UTC || got.CreatedAt.Nanosecond()%1000 != 0 {
		t.Fatalf("created_at %v is not UTC microseconds", got.CreatedAt)
	}
	if _, err := s.SpaceGet(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get missing: %v, want ErrNotFound", err)
	}
	list, err := s.SpaceList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "a" || list[1].ID != "b" {
		t.Fatalf("list = %+v", list)
	}
}

func TestMissingSpace(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	for i := 0; i < 3; i++ { // repeated: a failed begin must not keep the lock
		_, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "nope"})
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("write begin: %v, want ErrNotFound", err)
		}
	}
	if _, err := s.SpacePrune(ctx, "nope", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("prune: %v, want ErrNotFound", err)
	}
	if _, err := s.TypeDefPut(ctx, "nope", store.TypeDef{Type: "t", Def: json.RawMessage(`{}`)}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("type put: %v, want ErrNotFound", err)
	}
	newSpace(t, s, "yes")
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "yes"})
	if err != nil {
		t.Fatalf("write begin after failures: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestTypeDefs(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	newSpace(t, s, "s")
	def := json.RawMessage(`{"properties":{"title":{"type":"string"}}}`)
	put, err := s.TypeDefPut(ctx, "s", store.TypeDef{Type: "task", Def: def, UpdatedAt: baseTime})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TypeDefPut(ctx, "s", store.TypeDef{Type: "note", Def: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.TypeDefGet(ctx, "s", "task")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, put) || string(got.Def) != string(def) {
		t.Fatalf("get = %+v, want %+v", got, put)
	}
	list, err := s.TypeDefList(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Type != "note" || list[1].Type != "task" {
		t.Fatalf("list = %+v", list)
	}
	if err := s.TypeDefDelete(ctx, "s", "note"); err != nil {
		t.Fatal(err)
	}
	if err := s.TypeDefDelete(ctx, "s", "note"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
	if _, err := s.TypeDefGet(ctx, "s", "note"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get deleted: %v, want ErrNotFound", err)
	}
	sp, err := s.SpaceGet(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if sp.SchemaVersion != 3 {
		t.Fatalf("schema version %d, want 3 (two puts, one delete)", sp.SchemaVersion)
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	t1 := store.Token{ID: "t1", Hash: []byte{1, 2, 3}, Space: "s", Role: "writer", Actor: "alice",
		Types: []string{"task"}, Scopes: []string{"log:read"}, User: "alice", Application: "cli", CreatedAt: baseTime.Add(time.Second)}
	t2 := store.Token{ID: "t0", Hash: []byte{9}, Space: "*", Role: "admin", Actor: "root", CreatedAt: baseTime}
	for _, tok := range []store.Token{t1, t2} {
		if err := s.TokenCreate(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	dupID := t1
	dupID.Hash = []byte{7}
	dupHash := t2
	dupHash.ID = "t9"
	for _, tok := range []store.Token{dupID, dupHash} {
		if err := s.TokenCreate(ctx, tok); !errors.Is(err, store.ErrExists) {
			t.Fatalf("duplicate %s: %v, want ErrExists", tok.ID, err)
		}
	}
	got, err := s.TokenByHash(ctx, []byte{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, t1) {
		t.Fatalf("by hash = %+v, want %+v", got, t1)
	}
	if _, err := s.TokenByHash(ctx, []byte{4}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing hash: %v, want ErrNotFound", err)
	}
	list, err := s.TokenList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || !reflect.DeepEqual(list[0], t2) || list[1].ID != "t1" {
		t.Fatalf("list = %+v", list)
	}
	if err := s.TokenDelete(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := s.TokenDelete(ctx, "t1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
	if _, err := s.TokenByHash(ctx, []byte{1, 2, 3}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted token: %v, want ErrNotFound", err)
	}
}

// TestUnavailable: a closed store is store.ErrUnavailable, for reads,
// writes and token lookups.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "eddy.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	if _, err := st.SpaceGet(ctx, "s"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("read: %v, want ErrUnavailable", err)
	}
	if _, err := st.TokenByHash(ctx, []byte("h")); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("token lookup: %v, want ErrUnavailable", err)
	}
	if _, err := st.WriteBegin(ctx, store.WriteBeginParams{Space: "s"}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("write: %v, want ErrUnavailable", err)
	}
}

// TestFileModes: the database file and its -wal and -shm files are
// readable by their owner only, also when an older file was wider.
func TestFileModes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eddy.db")
	for round := range 2 {
		st, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("round %d: %s mode %v, %v; want 0600", round, filepath.Base(p), fi.Mode().Perm(), err)
			}
		}
		_ = st.Close()
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLazyWriteTx: a lazy transaction commits with synchronous=NORMAL
// and leaves the write connection at the configured level afterwards,
// whether it committed or rolled back, under either configured level.
func TestLazyWriteTx(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sync string
		want int
	}{{"FULL", 2}, {"NORMAL", 1}, {"EXTRA", 3}} {
		t.Run(tc.sync, func(t *testing.T) {
			t.Parallel()
			s, err := OpenOptions(context.Background(), filepath.Join(t.TempDir(), "eddy.db"), Options{Synchronous: tc.sync})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			ctx := context.Background()
			level := func(q interface {
				QueryRowContext(context.Context, string, ...any) *sql.Row
			}) int {
				t.Helper()
				var n int
				if err := q.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			boom := errors.New("boom")
			for _, fail := range []bool{false, true} {
				inside := -1
				err := s.lazyWriteTx(ctx, func(tx *connTx) error {
					inside = level(tx)
					if fail {
						return boom
					}
					_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS lazy (a)`)
					return err
				})
				if fail != errors.Is(err, boom) || (!fail && err != nil) {
					t.Fatalf("fail=%v: err = %v", fail, err)
				}
				if inside != 1 {
					t.Errorf("fail=%v: synchronous inside = %d, want 1 (NORMAL)", fail, inside)
				}
				if got := level(s.direct()); got != tc.want {
					t.Errorf("fail=%v: synchronous after = %d, want %d", fail, got, tc.want)
				}
			}
		})
	}
}

// Opening a store switches SQLite to fdatasync where the platform has it,
// as SQLite's own builds for those platforms sync.
func TestOpenSyncsData(t *testing.T) {
	newStore(t)
	switch runtime.GOOS {
	case "linux", "freebsd", "netbsd", "illumos":
		if !msqlite.FdatasyncEnabled() {
			t.Fatal("SQLite still syncs with fsync after Open")
		}
	}
}
