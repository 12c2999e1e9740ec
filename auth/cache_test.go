package auth

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
)

// countingStore counts token lookups.
type countingStore struct {
	store.Store
	lookups atomic.Int32
}

func (s *countingStore) TokenByHash(ctx context.Context, h []byte) (store.Token, error) {
	s.lookups.Add(1)
	return s.Store.TokenByHash(ctx, h)
}

// TestCacheHits: a second request with the same token is answered from
// the cache; a revocation drops it; the cache holds at most its size.
func TestCacheHits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &countingStore{Store: &tokenStore{}}
	svc := NewServiceCached(st, 2)
	var secrets []string
	var ids []string
	for i := range 3 {
		tok, secret, err := svc.Create(ctx, CreateParams{Space: "s", Role: RoleReader, Actor: fmt.Sprint("a", i)})
		if err != nil {
			t.Fatal(err)
		}
		secrets, ids = append(secrets, secret), append(ids, tok.ID)
	}
	auth := func(i int) error {
		_, err := svc.Authenticate(ctx, secrets[i])
		return err
	}
	for _, i := range []int{0, 0, 1, 0, 1} {
		if err := auth(i); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.lookups.Load(); n != 2 {
		t.Fatalf("%d lookups for two tokens, want 2", n)
	}
	// A third token evicts the least recently used one (1 was used last,
	// so 0 goes).
	_ = auth(2)
	_ = auth(1)
	if n := st.lookups.Load(); n != 3 {
		t.Fatalf("%d lookups, want 3", n)
	}
	_ = auth(0)
	if n := st.lookups.Load(); n != 4 {
		t.Fatalf("%d lookups after eviction, want 4", n)
	}
	if err := svc.Revoke(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := auth(0); problem.CodeOf(err) != problem.Unauthorized {
		t.Fatalf("revoked token: %v, want unauthorized", err)
	}
}

// TestRevocationAcrossProcesses: two services over two stores on one
// database (two processes); a token cached by one and revoked through the
// other is refused by the first at its next request.
func TestRevocationAcrossProcesses(t *testing.T) {
	t.Parallel()
	opens := map[string]func(t *testing.T) func() store.Store{
		"sqlite": func(t *testing.T) func() store.Store {
			t.Helper()
			path := filepath.Join(t.TempDir(), "eddy.db")
			return func() store.Store {
				st, err := sqlite.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		},
		"postgres": func(t *testing.T) func() store.Store {
			t.Helper()
			url := pgtest.NewDatabase(t)
			return func() store.Store {
				st, err := postgres.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		},
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			o := open(t)
			stA, stB := o(), o()
			t.Cleanup(func() { _ = stA.Close(); _ = stB.Close() })
			if err := stA.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			a, b := NewService(stA), NewService(stB)
			tok, secret, err := a.Create(ctx, CreateParams{Space: "s", Role: RoleWriter})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := b.Authenticate(ctx, secret); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.Revoke(ctx, tok.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Authenticate(ctx, secret); problem.CodeOf(err) != problem.Unauthorized {
				t.Fatalf("token revoked in the other process: %v, want unauthorized", err)
			}
		})
	}
}
