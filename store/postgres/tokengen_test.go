package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// generation returns s's token generation and whether s answered it
// from memory.
func generation(t *testing.T, s *Store) (int64, bool) {
	t.Helper()
	_, _, fast := s.tokens.cached()
	g, err := s.TokenGeneration(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return g, fast
}

// TestTokenGenerationListen: two stores on one database (two
// processes). Without a listener every read goes to the database; while
// one listens it answers from memory, and hears the other's revocation
// on TokenChannel; the revoker forgets its own generation at once.
func TestTokenGenerationListen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	a, b := openURL(t, url), openURL(t, url)
	for i := range 2 {
		tok := store.Token{ID: fmt.Sprint("tok_", i), Hash: fmt.Appendf(nil, "hash-%d-0123456789abcdef0123456789", i),
			Space: "*", Role: "admin", Actor: "owner", CreatedAt: time.Unix(0, 0).UTC()}
		if err := a.TokenCreate(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	g0, _ := generation(t, b)
	if _, fast := generation(t, b); fast {
		t.Fatal("answered from memory with no listener")
	}
	calls, stop := startListen(t, b)
	if n := next(t, calls); n.space != "" || n.head != -1 {
		t.Fatalf("first callback %v, want the reconnect signal", n)
	}
	generation(t, b)
	if g, fast := generation(t, b); g != g0 || !fast {
		t.Fatalf("listening: %d (from memory %v), want %d from memory", g, fast, g0)
	}
	if err := a.TokenDelete(ctx, "tok_0"); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, "the listener hears the revocation", func() bool {
		g, _ := generation(t, b)
		return g > g0
	})
	g1, _ := generation(t, b)
	if g, fast := generation(t, b); g != g1 || !fast {
		t.Fatalf("after the revocation: %d (from memory %v), want %d from memory", g, fast, g1)
	}

	// The revoker itself: listening, from memory, then at once the new
	// generation after its own revocation.
	_, stopA := startListen(t, a)
	polltest.Until(t, "the revoker answers from memory", func() bool {
		_, fast := generation(t, a)
		return fast
	})
	if err := a.TokenDelete(ctx, "tok_1"); err != nil {
		t.Fatal(err)
	}
	if g, fast := generation(t, a); g <= g1 || fast {
		t.Fatalf("revoker after its revocation: %d (from memory %v), want > %d from the database", g, fast, g1)
	}
	if err := stopA(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}

	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if _, fast := generation(t, b); fast {
		t.Fatal("answered from memory after the listener stopped")
	}
}
