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
	url := pgtest.NewDatabase(t)
	st, err := postgres.Open(context.Background(), url)
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
