package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/storetest"
)

// openConformance opens a fresh, migrated PostgreSQL database (dropped at
// cleanup) and closes the store before the drop.
func openConformance(t *testing.T) store.Store {
	t.Helper()
	return storetest.Migrated(t, func(ctx context.Context) (*postgres.Store, error) {
		return postgres.Open(ctx, pgtest.NewDatabase(t))
	})
}

func TestConformance(t *testing.T) {
	storetest.Exercise(t, openConformance)
}

func TestConformanceConcurrency(t *testing.T) {
	storetest.ExerciseConcurrency(t, openConformance)
}

func TestUncountedCommits(t *testing.T) {
	url := pgtest.NewDatabase(t)
	st := storetest.Migrated(t, func(ctx context.Context) (*postgres.Store, error) { return postgres.Open(ctx, url) })
	storetest.ExerciseUncounted(t, st, func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "UPDATE commits SET change_count = NULL WHERE seq % 2 = 1")
		return err
	})
}

func TestTriggersConformance(t *testing.T) {
	storetest.ExerciseTriggers(t, openConformance)
}
