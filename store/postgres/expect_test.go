package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/store"
)

// TestClaimWaitsThenChecks: an optimistic commit whose claim waits for
// another writer's lock fails with ErrStale when that writer, committing
// meanwhile, made its prediction wrong, although the claim's statement
// took its snapshot before that commit: the entity the other writer
// created moved the head the claim re-checks, and the receipt it stored
// without appending (a rejected mutation) is checked by a statement that
// starts once the claim holds the lock.
func TestClaimWaitsThenChecks(t *testing.T) {
	t.Parallel()
	key := store.EntityKey{Type: "task", ID: "t1"}
	for _, tc := range []struct {
		name  string
		other func(t *testing.T, tx store.WriteTx) // runs holding the lock
		p     store.WriteBeginParams               // the optimistic write's
		after string                               // the entity's properties after; "" for none
	}{
		{"entity created", func(t *testing.T, tx store.WriteTx) {
			c, recs := putCommit(1, nil, rec(key.Type, key.ID, 1, `{"title":"other"}`), "other", "")
			if err := tx.Append(context.Background(), c, recs); err != nil {
				t.Fatal(err)
			}
		}, store.WriteBeginParams{Space: "s", Entities: []store.EntityKey{key}, Expect: &store.Expectation{}}, `{"title":"other"}`},
		{"receipt stored", func(t *testing.T, tx store.WriteTx) {
			r := store.StoredReceipt{MutationID: "m1", Receipt: store.Receipt{MutationID: "m1", Status: store.ReceiptRejected}, CreatedAt: t0}
			if err := tx.ReceiptPut(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}, store.WriteBeginParams{Space: "s", Entities: []store.EntityKey{key}, MutationIDs: []string{"m1"}, Expect: &store.Expectation{}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := openStore(t)
			mustSpace(t, s, "s")
			ctx := context.Background()
			other, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = other.Rollback(ctx) }()
			tc.other(t, other)

			mine, err := s.WriteBegin(ctx, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = mine.Rollback(ctx) }()
			c, recs := putCommit(1, nil, rec(key.Type, key.ID, 1, `{"title":"mine"}`), "mine", "m1")
			if err := mine.Append(ctx, c, recs); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- mine.Commit(ctx) }()
			polltest.Until(t, "the claim waiting for the space lock", func() bool { return claimsWaiting(t, s) == 1 })
			if err := other.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; !errors.Is(err, store.ErrStale) {
				t.Fatalf("optimistic commit after the other writer's: %v, want ErrStale", err)
			}
			got, err := s.EntityGet(ctx, "s", key)
			switch {
			case tc.after == "" && !errors.Is(err, store.ErrNotFound):
				t.Fatalf("entity after the stale commit: %+v, %v; want none", got, err)
			case tc.after != "" && (err != nil || string(got.Properties) != tc.after):
				t.Fatalf("entity after the stale commit: %s, %v; want %s", got.Properties, err, tc.after)
			}
		})
	}
}

// claimsWaiting counts this database's sessions whose claim of a space
// waits for a lock.
func claimsWaiting(t *testing.T, s *Store) int {
	t.Helper()
	const q = `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH claimed AS%'`
	var n int
	if err := s.pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("count waiting claims: %v", err)
	}
	return n
}
