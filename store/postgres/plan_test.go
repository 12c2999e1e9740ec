package postgres

import (
	"context"
	"strings"
	"testing"
	"time"
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
