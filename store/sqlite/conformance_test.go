package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/sqlite"
	"github.com/eddy-run/eddy/store/storetest"
)

// openConformance opens a fresh, migrated SQLite database in a temporary
// directory and closes it at cleanup.
func openConformance(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "eddy.db"))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return st
}

func TestConformance(t *testing.T) {
	storetest.Exercise(t, openConformance)
}

func TestConformanceConcurrency(t *testing.T) {
	storetest.ExerciseConcurrency(t, openConformance)
}
