package postgres_test

import (
	"context"
	"testing"

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

func TestTriggersConformance(t *testing.T) {
	storetest.ExerciseTriggers(t, openConformance)
}
