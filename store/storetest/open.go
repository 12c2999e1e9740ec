package storetest

import (
	"context"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// Migrated opens a store with open, closes it when tb ends (a close error
// fails tb), and migrates it. It is the body of a driver's OpenFunc and
// test helpers: open makes the fresh database (anything it registers with
// tb.Cleanup, such as dropping that database, runs after the close).
func Migrated[S store.Store](tb testing.TB, open func(ctx context.Context) (S, error)) S {
	tb.Helper()
	ctx := context.Background()
	st, err := open(ctx)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	if err := st.Migrate(ctx); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	return st
}
