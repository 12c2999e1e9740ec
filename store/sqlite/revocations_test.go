//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/storetest"
)

// openAt opens and migrates the database at path, closing it when the
// test ends.
func openAt(t *testing.T, path string) *Store {
	t.Helper()
	return storetest.Migrated(t, func(ctx context.Context) (*Store, error) { return Open(ctx, path) })
}

// createTokens stores n tokens tok_0, tok_1, …
func createTokens(t *testing.T, s *Store, n int) {
	t.Helper()
	for i := range n {
		tok := store.Token{ID: fmt.Sprint("tok_", i), Hash: fmt.Appendf(nil, "hash-%d-0123456789abcdef0123456789", i),
			Space: "*", Role: "admin", Actor: "owner", CreatedAt: time.Unix(0, 0).UTC()}
		if err := s.TokenCreate(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
	}
}

// generation returns s's token generation and whether s answered it from
// memory.
func generation(t *testing.T, s *Store) (int64, bool) {
	t.Helper()
	_, fast := s.revs.load()
	g, err := s.TokenGeneration(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return g, fast
}

// TestRevocationCounter: two stores on one database file (two
// processes) share the counter file; one answers the generation from
// memory until the other revokes a token, and sees that revocation at
// its next read.
func TestRevocationCounter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eddy.db")
	a, b := openAt(t, path), openAt(t, path)
	createTokens(t, a, 2)
	fi, err := os.Stat(path + revocationsSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Fatalf("counter file mode %v, want 0600", m)
	}
	g0, _ := generation(t, b)
	if g, fast := generation(t, b); g != g0 || !fast {
		t.Fatalf("second read = %d (from memory %v), want %d from memory", g, fast, g0)
	}
	if err := a.TokenDelete(ctx, "tok_0"); err != nil {
		t.Fatal(err)
	}
	g1, fast := generation(t, b)
	if g1 <= g0 || fast {
		t.Fatalf("after a revocation elsewhere = %d (from memory %v), want > %d from the database", g1, fast, g0)
	}
	if g, fast := generation(t, b); g != g1 || !fast {
		t.Fatalf("read again = %d (from memory %v), want %d from memory", g, fast, g1)
	}

	// A revocation that raised the counter and never committed (a crash)
	// costs database reads, never a stale answer, until the next one.
	atomic.AddInt64(b.revs.counter, 1)
	for range 2 {
		if g, fast := generation(t, b); g != g1 || fast {
			t.Fatalf("after an uncommitted raise = %d (from memory %v), want %d from the database", g, fast, g1)
		}
	}
	if err := a.TokenDelete(ctx, "tok_1"); err != nil {
		t.Fatal(err)
	}
	g2, _ := generation(t, b)
	if g2 <= g1 {
		t.Fatalf("after the next revocation = %d, want > %d", g2, g1)
	}
	if g, _ := generation(t, a); g != g2 {
		t.Fatalf("revoker reads %d, want %d", g, g2)
	}
}

// TestRevocationCounterBehind: a counter file behind the database (lost
// and recreated) is raised to the stored generation, so revocations keep
// moving the generation forward and reads return to memory.
func TestRevocationCounterBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eddy.db")
	a := openAt(t, path)
	createTokens(t, a, 3)
	for _, id := range []string{"tok_0", "tok_1"} {
		if err := a.TokenDelete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	g0, _ := generation(t, a)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path + revocationsSuffix); err != nil {
		t.Fatal(err)
	}
	b := openAt(t, path)
	if g, fast := generation(t, b); g != g0 || fast {
		t.Fatalf("first read = %d (from memory %v), want %d from the database", g, fast, g0)
	}
	if v, _ := b.revs.load(); v != g0 {
		t.Fatalf("counter %d after the first read, want it raised to %d", v, g0)
	}
	if g, fast := generation(t, b); g != g0 || !fast {
		t.Fatalf("second read = %d (from memory %v), want %d from memory", g, fast, g0)
	}
	if err := b.TokenDelete(ctx, "tok_2"); err != nil {
		t.Fatal(err)
	}
	if g, _ := generation(t, b); g <= g0 {
		t.Fatalf("after a revocation = %d, want > %d", g, g0)
	}
}

// TestTokenGenerationAfterClose: a request still running when its store
// closes (a server shutting down) gets an error from TokenGeneration, not
// a read of the unmapped counter.
func TestTokenGenerationAfterClose(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "eddy.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TokenGeneration(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TokenGeneration(ctx); err == nil {
		t.Fatal("TokenGeneration on a closed store: no error")
	}
	if err := s.revs.close(); err != nil {
		t.Fatalf("closing the counter again: %v", err)
	}
}
