package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// planRows is how many commits TestRowsPlans loads.
const planRows = 50_000

// TestRowsPlans checks the query plans of rowsQuery on a loaded table,
// before and after ANALYZE: an entity-scoped read searches commits_entity
// by the entity's number, type, id and seq;
// every other read walks the space's range of rids over the window in
// page order, without another index or a sort.
func TestRowsPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	newSpace(t, s, "s")
	const load = `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
		INSERT INTO commits (rid, space, seq, ts, actor, op, entity_type, entity_id, payload, receipt, provenance, changes)
		SELECT (SELECT num << 40 FROM spaces WHERE id = 's') + n, 's', n, 0, 'loader',
			CASE WHEN n % 100 = 0 THEN 'patch' ELSE 'put' END,
			CASE WHEN n = 7 THEN 'rare' WHEN n % 10 = 0 THEN 'task' ELSE 'note' END,
			CASE WHEN n % 100 = 0 THEN 'hot' ELSE 'e' || n END,
			'{}', '{}', '{}', '[]'
		FROM g`
	if _, err := s.direct().ExecContext(ctx, load, planRows); err != nil {
		t.Fatalf("load commits: %v", err)
	}
	filters := []struct {
		name   string
		f      store.RowFilter
		entity bool
	}{
		{"none", store.RowFilter{}, false},
		{"types", store.RowFilter{Types: []string{"task"}}, false},
		{"rare type", store.RowFilter{Types: []string{"rare"}}, false},
		{"ops", store.RowFilter{Ops: []string{"patch"}}, false},
		{"actors", store.RowFilter{Actors: []string{"alice", "bob"}}, false},
		{"exclude", store.RowFilter{ExcludeTypes: []string{"note", "task"}, ExcludeOps: []string{"delete"}, ExcludeActors: []string{"x"}}, false},
		{"types and ops", store.RowFilter{Types: []string{"task"}, Ops: []string{"put"}}, false},
		{"entity", store.RowFilter{EntityType: "task", EntityID: "hot"}, true},
		{"entity and types", store.RowFilter{Types: []string{"task"}, EntityType: "task", EntityID: "hot"}, true},
	}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := s.direct().ExecContext(ctx, "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		for _, desc := range []bool{true, false} {
			for _, tc := range filters {
				p := store.RowsParams{Space: "s", Lo: planRows - 10_000, Hi: planRows, Filter: tc.f, Desc: desc, Limit: 100}
				plan := explainRows(t, s, &p)
				if msg := checkPlan(plan, tc.entity); msg != "" {
					t.Errorf("analyzed=%t/desc=%t/%s: %s:\n%s", analyzed, desc, tc.name, msg, plan)
				}
			}
		}
	}
}

// checkPlan returns why plan is not the expected one, or "".
func checkPlan(plan string, entity bool) string {
	if strings.Contains(plan, "TEMP B-TREE") {
		return "read sorts"
	}
	if entity {
		if !strings.Contains(plan, "SEARCH commits USING INDEX commits_entity (space=? AND entity_num=? AND entity_type=? AND entity_id=? AND seq>? AND seq<?)") {
			return "entity read does not search commits_entity"
		}
		return ""
	}
	if !strings.Contains(plan, "SEARCH commits USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)") {
		return "filtered read does not walk the space's range of rids"
	}
	return ""
}

// explainRows returns the EXPLAIN QUERY PLAN lines of rowsQuery(p).
func explainRows(t *testing.T, s *Store, p *store.RowsParams) string {
	t.Helper()
	q, args, err := rowsQuery(p)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
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
		lines = append(lines, fmt.Sprintf("%d<-%d %s", id, parent, detail))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
