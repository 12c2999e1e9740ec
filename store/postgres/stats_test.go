package postgres

import (
	"context"
	"slices"
	"testing"
	"time"
)

// withStatsTunables sets statsKeeper's tunables for one test (not
// parallel: the parallel tests of the package wait until it is done).
func withStatsTunables(t *testing.T, every time.Duration, minChanges int, fraction float64) {
	t.Helper()
	oe, om, of := statsEvery, statsMinChanges, statsChangeFraction
	statsEvery, statsMinChanges, statsChangeFraction = every, minChanges, fraction
	t.Cleanup(func() { statsEvery, statsMinChanges, statsChangeFraction = oe, om, of })
}

// insertDeliveries adds n pending deliveries of trigger t to space s.
func insertDeliveries(t *testing.T, st *Store, n int) {
	t.Helper()
	_, err := st.pool.Exec(context.Background(), `INSERT INTO deliveries (space, id, trigger, seq, entity_type, entity_id,
		status, attempts, depth, last_error, created_at, updated_at)
		SELECT 's', 'dlv-' || i, 't', i, 'task', 'e' || i, 'pending', 0, 0, '', now(), now()
		FROM generate_series(1, $1::int) AS i`, n)
	if err != nil {
		t.Fatal(err)
	}
}

// reltuples returns the planner's row count of table (-1: never
// analyzed).
func reltuples(t *testing.T, st *Store, table string) float64 {
	t.Helper()
	var n float64
	if err := st.pool.QueryRow(context.Background(), "SELECT reltuples FROM pg_class WHERE oid = to_regclass($1)", table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAnalyzeStale: a watched table that holds rows but was never
// analyzed is analyzed; one analyzed since is left alone until it has
// changed enough.
func TestAnalyzeStale(t *testing.T) {
	withStatsTunables(t, time.Hour, 10, 0.5)
	ctx := context.Background()
	st := openStore(t)
	if names, err := st.analyzeStale(ctx); err != nil || len(names) != 0 {
		t.Fatalf("fresh tables: analyzed %v, %v; want none (empty tables need no statistics)", names, err)
	}
	insertDeliveries(t, st, 40)
	if got := reltuples(t, st, "deliveries"); got >= 0 {
		t.Fatalf("deliveries reltuples %v before any analyze, want -1", got)
	}
	names, err := st.analyzeStale(ctx)
	if err != nil || !slices.Contains(names, "deliveries") {
		t.Fatalf("analyzed %v, %v; want deliveries among them", names, err)
	}
	if got := reltuples(t, st, "deliveries"); got != 40 {
		t.Fatalf("deliveries reltuples %v after analyze, want 40", got)
	}
	if names, err := st.analyzeStale(ctx); err != nil || slices.Contains(names, "deliveries") {
		t.Fatalf("analyzed %v, %v right after an analyze; want deliveries left alone", names, err)
	}
	// 30 changes to 40 rows pass both thresholds (10, and half the rows)
	// once the statistics collector has them.
	conn, err := st.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "UPDATE deliveries SET status = 'succeeded' WHERE seq <= 30")
	if err == nil {
		_, err = conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	}
	conn.Release()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		names, err := st.analyzeStale(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names, "deliveries") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("deliveries not analyzed after 30 changes to 40 rows")
		}
		// The collector's counters arrive with the writer's next flush:
		// ask again (no outcome depends on when).
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStatsKeeperRuns: the store's keeper analyzes a table that needs it
// on its own, and Close stops it (goleak in TestMain).
func TestStatsKeeperRuns(t *testing.T) {
	withStatsTunables(t, 10*time.Millisecond, 10, 0.5)
	st := openStore(t)
	insertDeliveries(t, st, 25)
	deadline := time.Now().Add(20 * time.Second)
	for reltuples(t, st, "deliveries") != 25 {
		if time.Now().After(deadline) {
			t.Fatal("the keeper did not analyze deliveries")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
