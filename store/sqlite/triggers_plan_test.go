package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// TestTriggerPlans checks, on loaded tables and before and after
// ANALYZE, that each delivery and stance error statement searches the
// index meant for it and that listings do not sort (but for open
// deliveries across triggers, which sorts the open entries alone, and
// merges them with the stopped ones when both are asked for).
func TestTriggerPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	loadTriggerPlanRows(t, s)
	list := func(p store.DeliveryListParams) string { return deliveryListQuery(&p) }
	cases := []struct {
		name, query string
		args        []any
		want        string
	}{
		{"list", list(store.DeliveryListParams{}), []any{"s", 1, "", "", "[]", 10},
			"deliveries USING INDEX deliveries_seq (space=? AND (seq,id)>(?,?))"},
		{"list statuses", list(store.DeliveryListParams{Statuses: []store.DeliveryStatus{"failed", "succeeded"}}), []any{"s", 1, "", "", `["failed","succeeded"]`, 10},
			"deliveries USING INDEX deliveries_seq (space=? AND (seq,id)>(?,?))"},
		{"list open and stopped", list(store.DeliveryListParams{Statuses: []store.DeliveryStatus{"failed", "pending"}}), []any{"s", 1, "", "", `["failed","pending"]`, 10},
			"deliveries USING INDEX deliveries_open (space=?)"},
		{"list open and stopped, stopped part", list(store.DeliveryListParams{Statuses: []store.DeliveryStatus{"failed", "pending"}}), []any{"s", 1, "", "", `["failed","pending"]`, 10},
			"deliveries USING INDEX deliveries_stopped_seq (space=? AND (seq,id)>(?,?))"},
		{"list open", list(store.DeliveryListParams{Statuses: []store.DeliveryStatus{"pending", "retrying"}}), []any{"s", 1, "", "", `["pending","retrying"]`, 10},
			"deliveries USING INDEX deliveries_open (space=?)"},
		{"list stopped", list(store.DeliveryListParams{Statuses: []store.DeliveryStatus{"failed", "parked"}}), []any{"s", 1, "", "", `["failed","parked"]`, 10},
			"deliveries USING INDEX deliveries_stopped_seq (space=? AND (seq,id)>(?,?))"},
		{"list trigger stopped", list(store.DeliveryListParams{Trigger: "t", Statuses: []store.DeliveryStatus{"failed", "parked"}}),
			[]any{"s", 1, "", "t1", `["failed","parked"]`, 10},
			"deliveries USING INDEX deliveries_stopped_seq (space=? AND (seq,id)>(?,?))"},
		{"list trigger", list(store.DeliveryListParams{Trigger: "t"}), []any{"s", 1, "", "t1", "[]", 10},
			"deliveries USING INDEX deliveries_trigger (space=? AND trigger=? AND (seq,id)>(?,?))"},
		{"list trigger statuses", list(store.DeliveryListParams{Trigger: "t", Statuses: []store.DeliveryStatus{"failed", "succeeded"}}),
			[]any{"s", 1, "", "t1", `["failed","succeeded"]`, 10},
			"deliveries USING INDEX deliveries_trigger (space=? AND trigger=? AND (seq,id)>(?,?))"},
		{"list trigger open and stopped", list(store.DeliveryListParams{Trigger: "t", Statuses: []store.DeliveryStatus{"failed", "pending"}}),
			[]any{"s", 1, "", "t1", `["failed","pending"]`, 10},
			"deliveries USING INDEX deliveries_open (space=? AND trigger=? AND (seq,id)>(?,?))"},
		{"list trigger failed", list(store.DeliveryListParams{Trigger: "t", Statuses: []store.DeliveryStatus{"failed"}}),
			[]any{"s", 1, "", "t1", `["failed"]`, 10},
			"deliveries USING INDEX deliveries_stopped (space=? AND trigger=? AND status=? AND (seq,id)>(?,?))"},
		{"list trigger open", list(store.DeliveryListParams{Trigger: "t", Statuses: store.OpenDeliveryStatuses}),
			[]any{"s", 1, "", "t1", `["pending","running","retrying"]`, 10},
			"deliveries USING INDEX deliveries_open (space=? AND trigger=? AND (seq,id)>(?,?))"},
		{"list trigger pending", list(store.DeliveryListParams{Trigger: "t", Statuses: []store.DeliveryStatus{"pending"}}),
			[]any{"s", 1, "", "t1", `["pending"]`, 10},
			"deliveries USING INDEX deliveries_open (space=? AND trigger=? AND (seq,id)>(?,?))"},
		{"at", sqlDeliveriesAt, []any{"s", 5}, "deliveries USING INDEX deliveries_seq (space=? AND seq=?)"},
		{"stats", sqlDeliveryStats, []any{"s", "t1"}, "deliveries USING COVERING INDEX deliveries_stopped (space=? AND trigger=?)"},
		{"stats total", sqlDeliveryStats, []any{"s", "t1"}, "deliveries USING COVERING INDEX deliveries_trigger (space=? AND trigger=?)"},
		{"backlog", sqlDeliveryBacklog, []any{"s", "t1"}, "deliveries USING COVERING INDEX deliveries_stopped (space=? AND trigger=? AND status=?)"},
		{"open through", sqlOpenThrough, []any{"s", "t1", 100},
			"deliveries USING INDEX deliveries_open (space=? AND trigger=? AND seq<?)"},
		{"discard", sqlDiscardOpen, []any{"s", "t1", 0}, "deliveries USING INDEX deliveries_open (space=? AND trigger=?)"},
		{"delete", sqlDeliveriesDelete, []any{"s", "t1"}, "deliveries USING INDEX deliveries_trigger (space=? AND trigger=?)"},
		{"prune", sqlPruneDeliveries, []any{"s", 100}, "deliveries USING INDEX deliveries_seq (space=? AND seq<?)"},
		{"update", sqlDeliveryUpdate, []any{"s", "d1", "[]", 0, "running", 1, "", 0, 0},
			"deliveries USING PRIMARY KEY (space=? AND id=?)"},
		{"errors at", sqlErrorsAt, []any{"s", 5}, "stance_errors USING INDEX stance_errors_seq (space=? AND seq=?)"},
		{"prune errors", sqlPruneErrors, []any{"s", 100}, "stance_errors USING INDEX stance_errors_seq (space=? AND seq<?)"},
	}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := s.direct().ExecContext(ctx, "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range cases {
			plan := explain(t, s, tc.query, tc.args...)
			if !strings.Contains(plan, "SEARCH "+tc.want) {
				t.Errorf("analyzed=%t/%s: want SEARCH %s, got:\n%s", analyzed, tc.name, tc.want, plan)
			}
			if strings.HasPrefix(tc.name, "list") && !strings.HasPrefix(tc.name, "list open") && strings.Contains(plan, "TEMP B-TREE") {
				t.Errorf("analyzed=%t/%s: listing sorts:\n%s", analyzed, tc.name, plan)
			}
		}
	}
}

// loadTriggerPlanRows fills deliveries (mostly finished, of several
// triggers and spaces) and stance errors.
func loadTriggerPlanRows(t *testing.T, s *Store) {
	t.Helper()
	const load = `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 20000)
INSERT INTO deliveries (` + deliveryCols + `)
SELECT CASE WHEN n % 4 = 0 THEN 'other' ELSE 's' END, 'd' || n, 't' || (n % 5), n / 3, 'task', 'e' || n,
	CASE WHEN n % 50 = 0 THEN 'pending' WHEN n % 70 = 0 THEN 'failed' ELSE 'succeeded' END,
	1, 1, '', 0, n, n
FROM g`
	const errs = `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 5000)
INSERT INTO stance_errors (space, trigger, seq, error) SELECT 's', 't' || (n % 5), n, 'boom' FROM g`
	for _, q := range []string{load, errs} {
		if _, err := s.direct().ExecContext(context.Background(), q); err != nil {
			t.Fatalf("load: %v", err)
		}
	}
}

// explain returns the EXPLAIN QUERY PLAN lines of query.
func explain(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
