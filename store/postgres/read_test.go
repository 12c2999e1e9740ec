package postgres

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

// planRows is how many commits TestRowsPlans loads: enough that a scan of
// a whole type costs visibly more than a walk of one seq window.
const planRows = 50_000

// TestRowsPlans checks the plans of rowsQuery on a loaded table, before
// and after ANALYZE, as custom plans and as the generic plans a cached
// prepared statement switches to: an entity-scoped read probes
// commits_entity_idx; every other read walks commits_pkey over the window
// in page order, neither scanning another index nor sorting.
func TestRowsPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	loadPlanRows(t, s)
	lo, hi := int64(planRows-10_000), int64(planRows)
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
			if _, err := s.pool.Exec(ctx, "ANALYZE commits"); err != nil {
				t.Fatal(err)
			}
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			for _, desc := range []bool{true, false} {
				for _, tc := range filters {
					name := fmt.Sprintf("analyzed=%t/%s/desc=%t/%s", analyzed, mode, desc, tc.name)
					p := store.RowsParams{Space: "s", Lo: lo, Hi: hi, Filter: tc.f, Desc: desc, Limit: 100}
					plan := explainRows(t, s, mode, p)
					if msg := checkPlan(plan, tc.entity); msg != "" {
						t.Errorf("%s: %s:\n%s", name, msg, plan)
					}
				}
			}
		}
	}
}

// TestCommitsPlans checks the plans of the whole-commit reads (Commits,
// RawCommits, with receipts and without) on a loaded table, before and
// after ANALYZE, custom and generic: they read commits_pkey over the
// page's window only (an index walk, or a bitmap scan and sort of the
// window's rows once ANALYZE counted them), never the rest of the space.
func TestCommitsPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	loadPlanRows(t, s)
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := s.pool.Exec(ctx, "ANALYZE commits"); err != nil {
				t.Fatal(err)
			}
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			for _, q := range []string{commitsQuery, commitsLeanQuery} {
				args := commitsArgs(store.CommitsParams{Space: "s", After: 1_000, Limit: 1_001})
				plan := explain(t, s, mode, q, args)
				if msg := checkWindowPlan(plan); msg != "" {
					t.Errorf("analyzed=%t/%s: %s:\n%s", analyzed, mode, msg, plan)
				}
			}
		}
	}
}

// checkWindowPlan returns why plan reads more than commits_pkey's slice
// of the window (after, after+limit], or "".
func checkWindowPlan(plan string) string {
	for _, bad := range []string{"commits_entity_idx", "Seq Scan"} {
		if strings.Contains(plan, bad) {
			return "window read uses " + bad
		}
	}
	if !strings.Contains(plan, "commits_pkey") || !strings.Contains(plan, "Index Cond") || !strings.Contains(plan, "(seq <= ") {
		return "window read does not bound its commits_pkey scan on both sides"
	}
	return ""
}

// TestCommitsArgs: the window of a page ends after+limit, and is
// unbounded without a limit or past the largest seq.
func TestCommitsArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    store.CommitsParams
		want int64
	}{
		{store.CommitsParams{After: 10, Limit: 5}, 15},
		{store.CommitsParams{After: 10}, math.MaxInt64},
		{store.CommitsParams{After: math.MaxInt64 - 1, Limit: 5}, math.MaxInt64},
	} {
		if got := commitsArgs(tc.p)[2]; got != tc.want {
			t.Errorf("%+v: upper end %v, want %d", tc.p, got, tc.want)
		}
	}
}

// checkPlan returns why plan is not the expected one, or "".
func checkPlan(plan string, entity bool) string {
	if entity {
		if !strings.Contains(plan, "using commits_entity_idx") {
			return "entity read does not probe commits_entity_idx"
		}
		return ""
	}
	for _, bad := range []string{"commits_entity_idx", "Bitmap", "Sort", "Seq Scan"} {
		if strings.Contains(plan, bad) {
			return "filtered read uses " + bad
		}
	}
	if !strings.Contains(plan, "Index Scan") || !strings.Contains(plan, "using commits_pkey") {
		return "filtered read does not walk commits_pkey"
	}
	return ""
}

// loadPlanRows inserts planRows commits in space "s" with autovacuum off,
// so the table stays unanalyzed until the test analyzes it: every tenth
// commit is a task, every hundredth patches task "hot", and one is the
// only commit of type "rare".
func loadPlanRows(t *testing.T, s *Store) {
	t.Helper()
	const q = `INSERT INTO commits (space, seq, ts, actor, op, entity_type, entity_id, payload, receipt, provenance, changes)
		SELECT 's', g, now(), 'loader',
			CASE WHEN g % 100 = 0 THEN 'patch' ELSE 'put' END,
			CASE WHEN g = 7 THEN 'rare' WHEN g % 10 = 0 THEN 'task' ELSE 'note' END,
			CASE WHEN g % 100 = 0 THEN 'hot' ELSE 'e' || g END,
			'{}', '{}', '{}', '[]'
		FROM generate_series(1, $1::bigint) g`
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, "ALTER TABLE commits SET (autovacuum_enabled = false)"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, q, planRows); err != nil {
		t.Fatalf("load commits: %v", err)
	}
}

// explainRows returns the plan PostgreSQL makes for rowsQuery(p) under
// plan_cache_mode mode, run as a prepared statement as pgx runs it.
func explainRows(t *testing.T, s *Store, mode string, p store.RowsParams) string {
	t.Helper()
	q, args := rowsQuery(p)
	return explain(t, s, mode, q, args)
}

// explain returns the plan PostgreSQL makes for q with args under
// plan_cache_mode mode, run as a prepared statement as pgx runs it.
func explain(t *testing.T, s *Store, mode, q string, args []any) string {
	t.Helper()
	ctx := context.Background()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	types := make([]string, len(args))
	for i, a := range args {
		types[i] = sqlType(a)
	}
	params := make([]string, len(args))
	for i, a := range args {
		params[i] = sqlLiteral(a)
	}
	stmts := []string{
		"SET plan_cache_mode = " + mode,
		"PREPARE rows_plan (" + strings.Join(types, ", ") + ") AS " + q,
	}
	for _, st := range stmts {
		if _, err := conn.Exec(ctx, st); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
	defer func() {
		_, _ = conn.Exec(ctx, "DEALLOCATE rows_plan")
		_, _ = conn.Exec(ctx, "RESET plan_cache_mode")
	}()
	rows, err := conn.Query(ctx, "EXPLAIN (COSTS OFF) EXECUTE rows_plan ("+strings.Join(params, ", ")+")")
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	return strings.Join(lines, "\n")
}

// sqlType names the PostgreSQL type of a statement's argument.
func sqlType(a any) string {
	switch a.(type) {
	case []string:
		return "text[]"
	case []int64:
		return "bigint[]"
	case []time.Time:
		return "timestamptz[]"
	case int64, *int64:
		return "bigint"
	default:
		return "text"
	}
}

// sqlLiteral renders a statement's argument as an SQL literal (EXECUTE
// takes no bind parameters).
func sqlLiteral(a any) string {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch v := a.(type) {
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = quote(s)
		}
		return "ARRAY[" + strings.Join(q, ", ") + "]::text[]"
	case []int64:
		q := make([]string, len(v))
		for i, n := range v {
			q[i] = fmt.Sprint(n)
		}
		return "ARRAY[" + strings.Join(q, ", ") + "]::bigint[]"
	case []time.Time:
		q := make([]string, len(v))
		for i, ts := range v {
			q[i] = quote(ts.Format(time.RFC3339Nano))
		}
		return "ARRAY[" + strings.Join(q, ", ") + "]::timestamptz[]"
	case int64:
		return fmt.Sprint(v)
	case *int64:
		if v == nil {
			return "NULL"
		}
		return fmt.Sprint(*v)
	default:
		return quote(fmt.Sprint(v))
	}
}
