package sqlite

import (
	"context"
	"strings"
	"testing"
)

// TestCausedByPlan checks that CommitsCausedBy searches the partial index
// commits_caused_by instead of scanning the space's commits.
func TestCausedByPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	newSpace(t, s, "s")
	const load = `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 5000)
		INSERT INTO commits (rid, space, seq, ts, actor, op, entity_type, entity_id, payload, receipt, provenance, caused_by, changes)
		SELECT (SELECT num << 40 FROM spaces WHERE id = 's') + n, 's', n, 0, 'loader', 'put', 'task', 'e' || n, '{}', '{}', '{}',
			CASE WHEN n % 50 = 0 THEN n - 1 END, '[]'
		FROM g`
	if _, err := s.direct().ExecContext(ctx, load); err != nil {
		t.Fatalf("load commits: %v", err)
	}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := s.direct().ExecContext(ctx, "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlCausedBy, "s", "[49, 99]", 100)
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if !strings.Contains(strings.Join(plan, "\n"), "USING INDEX commits_caused_by (space=? AND caused_by=?)") {
			t.Errorf("analyzed=%t: plan does not search commits_caused_by:\n%s", analyzed, strings.Join(plan, "\n"))
		}
	}
}
