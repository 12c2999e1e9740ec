package sqlite_test

import (
	"context"
	"database/sql"
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
	return storetest.Migrated(t, func(ctx context.Context) (*sqlite.Store, error) {
		return sqlite.Open(ctx, filepath.Join(t.TempDir(), "eddy.db"))
	})
}

func TestConformance(t *testing.T) {
	storetest.Exercise(t, openConformance)
}

func TestConformanceConcurrency(t *testing.T) {
	storetest.ExerciseConcurrency(t, openConformance)
}

func TestUncountedCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "eddy.db")
	st := storetest.Migrated(t, func(ctx context.Context) (*sqlite.Store, error) { return sqlite.Open(ctx, path) })
	storetest.ExerciseUncounted(t, st, func(ctx context.Context) error {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.ExecContext(ctx, "UPDATE commits SET change_count = NULL WHERE seq % 2 = 1")
		return err
	})
}

func TestTriggersConformance(t *testing.T) {
	storetest.ExerciseTriggers(t, openConformance)
}
