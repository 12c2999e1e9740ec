package postgres

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/migrations"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

func TestMigrateConcurrentAndIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	stores := make([]*Store, 4)
	for i := range stores {
		s, err := Open(ctx, url)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrate %d: %v", i, err)
		}
	}
	if err := stores[0].Migrate(ctx); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	ms, err := migrations.List(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := stores[0].pool.Query(ctx, "SELECT name FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range ms {
		want = append(want, m.File)
	}
	if len(got) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("schema_migrations names = %q, want %q", got, want)
	}
}

func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Open(ctx, "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2")
	if err == nil {
		_ = s.Close()
		t.Fatal("open of an unreachable server succeeded")
	}
}

func TestSpaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	before := time.Now().Add(-time.Second)
	sp := mustSpace(t, s, "b")
	if sp.ID != "b" || sp.Head != 0 || sp.Horizon != 0 || sp.Epoch != "epoch-b" || sp.SchemaVersion != 0 {
		t.Fatalf("created space = %+v", sp)
	}
	if sp.CreatedAt.Location() != time.UTC || sp.CreatedAt.Nanosecond()%1000 != 0 || sp.CreatedAt.Before(before) {
		t.Fatalf("created at %v is not a recent UTC microsecond time", sp.CreatedAt)
	}
	if _, err := s.SpaceCreate(ctx, "b", "e"); !errors.Is(err, store.ErrExists) {
		t.Fatalf("create twice: %v, want ErrExists", err)
	}
	got, err := s.SpaceGet(ctx, "b")
	if err != nil || got != sp {
		t.Fatalf("get = %+v, %v; want %+v", got, err, sp)
	}
	if _, err := s.SpaceGet(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get missing: %v, want ErrNotFound", err)
	}
	mustSpace(t, s, "a")
	mustSpace(t, s, "B")
	list, err := s.SpaceList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sp := range list {
		ids = append(ids, sp.ID)
	}
	if want := []string{"B", "a", "b"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("space list = %v, want bytewise %v", ids, want)
	}
}

func TestMissingSpace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	_, err := s.WriteBegin(ctx, store.WriteBeginParams{
		Space: "ghost", Entities: []store.EntityKey{{Type: "task", ID: "a"}}, MutationIDs: []string{"m"},
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("write begin on a missing space: %v, want ErrNotFound", err)
	}
	if n := s.pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections still acquired", n)
	}
	if n := openTransactions(t, s); n != 0 {
		t.Fatalf("%d sessions left inside a transaction", n)
	}
	if _, err := s.SpacePrune(ctx, "ghost", 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("prune missing: %v, want ErrNotFound", err)
	}
	if _, err := s.TypeDefPut(ctx, "ghost", store.TypeDef{Type: "task", Def: []byte(`{}`)}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("put type on missing space: %v, want ErrNotFound", err)
	}
	if _, err := s.EntityGet(ctx, "ghost", store.EntityKey{Type: "task", ID: "a"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get entity: %v, want ErrNotFound", err)
	}
}

func TestTypeDefs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "sp")
	def := store.TypeDef{Type: "task", Def: []byte(`{"strict": true, "note": "<&>"}`)}
	put, err := s.TypeDefPut(ctx, "sp", def)
	if err != nil {
		t.Fatal(err)
	}
	if put.UpdatedAt.IsZero() || put.UpdatedAt.Location() != time.UTC {
		t.Fatalf("updated at = %v", put.UpdatedAt)
	}
	if _, err := s.TypeDefPut(ctx, "sp", store.TypeDef{Type: "note", Def: []byte(`{}`), UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	got, err := s.TypeDefGet(ctx, "sp", "task")
	if err != nil || string(got.Def) != string(def.Def) || !got.UpdatedAt.Equal(put.UpdatedAt) {
		t.Fatalf("get = %+v, %v; want %s", got, err, def.Def)
	}
	list, err := s.TypeDefList(ctx, "sp")
	if err != nil || len(list) != 2 || list[0].Type != "note" || list[1].Type != "task" || !list[0].UpdatedAt.Equal(t0) {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if err := s.TypeDefDelete(ctx, "sp", "note"); err != nil {
		t.Fatal(err)
	}
	if err := s.TypeDefDelete(ctx, "sp", "note"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete twice: %v, want ErrNotFound", err)
	}
	if _, err := s.TypeDefGet(ctx, "sp", "note"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get deleted: %v, want ErrNotFound", err)
	}
	sp, err := s.SpaceGet(ctx, "sp")
	if err != nil || sp.SchemaVersion != 3 {
		t.Fatalf("schema version = %d, %v; want 3 (two puts, one delete)", sp.SchemaVersion, err)
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	a := store.Token{ID: "b", Hash: []byte{1, 2}, Space: "*", Role: "admin", Actor: "owner", CreatedAt: t0}
	b := store.Token{ID: "a", Hash: []byte{3}, Space: "sp", Role: "reader", Actor: "token:a",
		Types: []string{"task"}, Scopes: []string{"log:read"}, User: "u1", Application: "app", CreatedAt: t0}
	c := store.Token{ID: "c", Hash: []byte{4}, Space: "sp", Role: "writer", Actor: "x", CreatedAt: t0.Add(-time.Hour)}
	for _, tok := range []store.Token{a, b, c} {
		if err := s.TokenCreate(ctx, tok); err != nil {
			t.Fatalf("create %s: %v", tok.ID, err)
		}
	}
	if err := s.TokenCreate(ctx, store.Token{ID: "a", Hash: []byte{9}}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate id: %v, want ErrExists", err)
	}
	if err := s.TokenCreate(ctx, store.Token{ID: "z", Hash: []byte{3}}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate hash: %v, want ErrExists", err)
	}
	got, err := s.TokenByHash(ctx, []byte{3})
	if err != nil || !reflect.DeepEqual(got, b) {
		t.Fatalf("by hash = %+v, %v; want %+v", got, err, b)
	}
	if _, err := s.TokenByHash(ctx, []byte{7}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("by unknown hash: %v, want ErrNotFound", err)
	}
	list, err := s.TokenList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []store.Token{c, b, a}; !reflect.DeepEqual(list, want) {
		t.Fatalf("list = %+v, want %+v", list, want)
	}
	if err := s.TokenDelete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.TokenDelete(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete twice: %v, want ErrNotFound", err)
	}
	if _, err := s.TokenByHash(ctx, []byte{3}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("by hash after delete: %v, want ErrNotFound", err)
	}
}

func TestTranslate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"no rows", pgx.ErrNoRows, store.ErrNotFound},
		{"wrapped no rows", errors.Join(errors.New("x"), pgx.ErrNoRows), store.ErrNotFound},
		{"other", errors.New("boom"), nil},
	}
	for _, tt := range tests {
		got := wrap("op", tt.err)
		if tt.want != nil && !errors.Is(got, tt.want) {
			t.Errorf("%s: %v is not %v", tt.name, got, tt.want)
		}
		if !errors.Is(got, tt.err) {
			t.Errorf("%s: %v lost the original error", tt.name, got)
		}
		if tt.want == nil && (errors.Is(got, store.ErrNotFound) || errors.Is(got, store.ErrExists)) {
			t.Errorf("%s: %v translated to a sentinel", tt.name, got)
		}
	}
	if wrap("op", nil) != nil {
		t.Error("wrap(nil) != nil")
	}
}

// TestUnavailable: a closed pool and connections the server terminated
// are store.ErrUnavailable.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	st, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SpaceCreate(ctx, "s", "e"); err != nil {
		t.Fatal(err)
	}
	admin, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// Terminate every connection of st's pool (not admin's own).
	const kill = `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`
	if _, err := admin.Pool().Exec(ctx, kill); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SpaceGet(ctx, "s"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("read on a terminated connection: %v, want ErrUnavailable", err)
	}
	_ = st.Close()
	if _, err := st.TokenByHash(ctx, []byte("h")); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("closed pool: %v, want ErrUnavailable", err)
	}
	if _, err := st.WriteBegin(ctx, store.WriteBeginParams{Space: "s"}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("write on a closed pool: %v, want ErrUnavailable", err)
	}
}

// TestAsyncCommit: OpenOptions with AsyncCommit turns synchronous_commit
// off on the pool's connections; Open leaves the server's default.
func TestAsyncCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	for _, tc := range []struct {
		o    Options
		want string
	}{{Options{}, "on"}, {Options{AsyncCommit: true}, "off"}} {
		st, err := OpenOptions(ctx, url, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = st.Pool().QueryRow(ctx, "SHOW synchronous_commit").Scan(&got)
		st.Close()
		if err != nil || got != tc.want {
			t.Errorf("%+v: synchronous_commit = %q, %v; want %q", tc.o, got, err, tc.want)
		}
	}
}
