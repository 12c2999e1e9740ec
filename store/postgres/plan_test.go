package postgres

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/storetest"
)

// TestEntityUpdatesProbeKey holds the statement that writes several
// entities rows known present to a plan that finds each row through the
// primary key, whatever the statistics: on a space of 100,000 entities
// whose statistics were taken while the table held three rows, the
// generic plan (the one a connection caches after five executions) of an
// UPDATE joined to unnest hashed every row of the space.
func TestEntityUpdatesProbeKey(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	staleEntities(t, s)
	now := []time.Time{t0, t0}
	args := []any{"s", []string{"note", "note"}, []string{"e1", "e99999"}, []int64{2, 2}, []string{"live", "live"},
		[]string{"{}", "{}"}, []string{"[]", "[]"}, []string{"{}", "{}"}, now, now}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explain(t, s, mode, entityQueries[rowPresent].many, args)
		if strings.Contains(plan, "Scan on entities") || !strings.Contains(plan, "Arbiter Indexes: entities_pkey") {
			t.Errorf("%s: several present entities rows are not written through the primary key:\n%s", mode, plan)
		}
	}
}

// TestEntityLoadsProbeKey: a group's loads and checks of several entities
// (one statement each) probe the primary key per key, whatever the
// statistics, as TestEntityUpdatesProbeKey's writes do.
func TestEntityLoadsProbeKey(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	staleEntities(t, s)
	keys := []any{"s", []string{"note", "note"}, []string{"e1", "e99999"}}
	for _, q := range []struct {
		name, sql string
		args      []any
	}{
		{"load", entitiesQ, keys},
		{"check", claimQueries[0][checkMany], append([]any{"s", int64(0), int64(0), int64(1)}, keys[1], keys[2], []int64{1, 1}, []string{"live", "live"})},
	} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, s, mode, q.sql, q.args)
			if !strings.Contains(plan, "Nested Loop") || !strings.Contains(plan, "Index Scan using entities_pkey") {
				t.Errorf("%s, %s: several entities are not probed through the primary key:\n%s", q.name, mode, plan)
			}
		}
	}
}

// staleEntities fills space s with 100,000 entities rows whose
// statistics were taken while the table held three.
func staleEntities(t *testing.T, s *Store) {
	t.Helper()
	mustSpace(t, s, "s")
	ctx := context.Background()
	const fill = `INSERT INTO entities (space, type, id, version, kind, properties, links, group_versions,
			created_at, updated_at)
		SELECT 's', 'note', 'e' || g, 1, 'live', '{}', '[]', '{}', now(), now() FROM generate_series($1::int, $2::int) g`
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{"ALTER TABLE entities SET (autovacuum_enabled = false)", nil},
		{fill, []any{1, 3}},
		{"ANALYZE entities", nil},
		{fill, []any{4, 100_000}},
	} {
		if _, err := s.pool.Exec(ctx, st.sql, st.args...); err != nil {
			t.Fatalf("%s: %v", st.sql, err)
		}
	}
}

// TestDeliveryBacklogPlans: on a trigger with 100,000 succeeded
// deliveries, 10 pending and 10 parked, the gauges' statement and every
// listing of statuses other than succeeded read the partial indexes of
// what they ask for (deliveries_open_idx, a stopped deliveries' index),
// never a whole space's or trigger's deliveries. Which of the two stopped
// indexes, and whether it sorts their few entries, is the planner's
// choice: it moves with ANALYZE's sample.
func TestDeliveryBacklogPlans(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	fillDeliveries(t, s)
	type stmt struct {
		q    string
		args []any
	}
	list := func(trigger string, statuses ...store.DeliveryStatus) stmt {
		q, args := deliveryListQuery(store.DeliveryListParams{Space: "s", Trigger: trigger, Statuses: statuses, Limit: 5})
		return stmt{q, args}
	}
	cases := []struct {
		what  string
		stmt  stmt
		reads []string
	}{
		{"the backlog", stmt{deliveryBacklogSQL, []any{"s", "t"}}, []string{"deliveries_open_idx", "deliveries_stopped_"}},
		{"a trigger's parked deliveries", list("t", store.DeliveryParked), []string{"deliveries_stopped_"}},
		{"a space's parked and failed deliveries", list("", store.DeliveryParked, store.DeliveryFailed), []string{"deliveries_stopped_"}},
		{"a space's open and stopped deliveries", list("", store.DeliveryPending, store.DeliveryRetrying, store.DeliveryFailed, store.DeliveryParked),
			[]string{"deliveries_open_idx", "deliveries_stopped_"}},
		{"a space's pending deliveries", list("", store.DeliveryPending), []string{"deliveries_open_idx"}},
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		for _, tc := range cases {
			plan := explain(t, s, mode, tc.stmt.q, tc.stmt.args)
			ok := !strings.Contains(plan, "Seq Scan") && !strings.Contains(plan, "deliveries_seq_idx") &&
				!strings.Contains(plan, "deliveries_trigger_idx") && !strings.Contains(plan, "deliveries_pkey")
			for _, r := range tc.reads {
				ok = ok && strings.Contains(plan, r)
			}
			if !ok {
				t.Errorf("%s: %s is not read from %v alone:\n%s", mode, tc.what, tc.reads, plan)
			}
		}
	}
	want := map[store.DeliveryStatus]int{"pending": 10, "parked": 10}
	if st, err := s.DeliveryBacklog(ctx, "s", "t"); err != nil || !maps.Equal(st.ByStatus, want) {
		t.Fatalf("backlog %+v, %v; want %v", st, err, want)
	}
}

// fillDeliveries gives trigger t of space s 100,000 succeeded
// deliveries, then 10 pending and 10 parked, and analyzes the table.
func fillDeliveries(tb testing.TB, s *Store) {
	tb.Helper()
	ctx := context.Background()
	_, err := s.pool.Exec(ctx, `INSERT INTO deliveries (space, id, trigger, seq, entity_type, entity_id,
			status, attempts, depth, last_error, created_at, updated_at)
		SELECT 's', 'd' || i, 't', i, 'task', 'e' || i,
			CASE WHEN i > 100010 THEN 'parked' WHEN i > 100000 THEN 'pending' ELSE 'succeeded' END,
			1, 0, '', now(), now()
		FROM generate_series(1, 100020) AS i`)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE deliveries"); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkDeliveryStats counts fillDeliveries' trigger: the statement
// before migration 0018 (one GROUP BY over all its deliveries) as the
// baseline, DeliveryStats (open ones through deliveries_open_idx, the
// others from deliveries_stopped_idx) and DeliveryBacklog (the gauges':
// open and parked only).
func BenchmarkDeliveryStats(b *testing.B) {
	ctx := context.Background()
	s := openStore(b)
	fillDeliveries(b, s)
	const before = `SELECT status, count(*), min(created_at) FROM deliveries
		WHERE space = $1 AND trigger = $2 GROUP BY status`
	storetest.BenchDeliveryStats(b, func(q string) (store.DeliveryStats, error) {
		return s.deliveryStats(ctx, q, "s", "t")
	}, before, deliveryStatsSQL, deliveryBacklogSQL)
}

// BenchmarkListParked lists a space's deliveries of some statuses as
// the console's Deliveries page and a bulk discard do (no trigger, pages
// of 100) among fillDeliveries' 100,000 succeeded ones: with the stopped
// deliveries' indexes, then as before migration 0018 (those indexes
// dropped, the statement without the conditions that let the planner
// use them).
func BenchmarkListParked(b *testing.B) {
	ctx := context.Background()
	s := openStore(b)
	fillDeliveries(b, s)
	cases := []struct {
		name     string
		statuses []store.DeliveryStatus
		want     int
	}{
		{"parked", []store.DeliveryStatus{store.DeliveryParked}, 10},
		{"discard", []store.DeliveryStatus{store.DeliveryPending, store.DeliveryRetrying, store.DeliveryFailed, store.DeliveryParked}, 20},
	}
	for _, before := range []bool{false, true} {
		if before {
			if _, err := s.pool.Exec(ctx, "DROP INDEX deliveries_stopped_idx, deliveries_stopped_seq_idx"); err != nil {
				b.Fatal(err)
			}
		}
		for _, tc := range cases {
			q, args := deliveryListQuery(store.DeliveryListParams{Space: "s", Statuses: tc.statuses, Limit: 100})
			name := "indexes=stopped"
			if before {
				q = strings.Replace(q, " AND (status IN "+openStatusesSQL+" OR "+stoppedWhereSQL+")", "", 1)
				q = strings.Replace(q, " AND "+stoppedWhereSQL, "", 1)
				name = "indexes=before"
			}
			b.Run("status="+tc.name+"/"+name, func(b *testing.B) {
				for b.Loop() {
					ds, err := s.queryDeliveries(ctx, "list", q, args...)
					if err != nil || len(ds) != tc.want {
						b.Fatalf("listed %d, %v; want %d", len(ds), err, tc.want)
					}
				}
			})
		}
	}
}

// TestDeliveryUpdateSetPlans: the set-based completion of several
// deliveries (deliveryUpdateSetQ) finds each by primary key and locks
// their triggers' rows by primary key, among 100,000 deliveries, with a
// custom plan and with a generic one: never a scan of the table.
func TestDeliveryUpdateSetPlans(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	fillDeliveries(t, s)
	var u updateBuf
	for i := 100001; i <= 100010; i++ {
		u.add(store.DeliveryUpdate{Space: "s", ID: fmt.Sprint("d", i), Epoch: 3, From: store.OpenDeliveryStatuses,
			Status: store.DeliverySucceeded, Attempts: 1})
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, "EXPLAIN (COSTS OFF) "+deliveryUpdateSetQ, u.args(s.nowMicro())...)
		if err != nil {
			t.Fatal(err)
		}
		var plan strings.Builder
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		rows.Close()
		_ = tx.Rollback(ctx)
		if p := plan.String(); strings.Contains(p, "Seq Scan") || !strings.Contains(p, "deliveries_pkey") || !strings.Contains(p, "trigger_state_pkey") {
			t.Errorf("%s:\n%s", mode, p)
		}
	}
}
