package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/migrations"
)

// TestMigrateCommitRowids: a database written before migration 0016
// (commits keyed by (space, seq) without rowids) keeps every commit
// through the migration, each space's log in seq order under its new
// number; heads, entity history and writes go on from where they were,
// and a space created afterwards takes the next number.
func TestMigrateCommitRowids(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openThrough(t, 15)
	// Spaces named out of creation order, commits interleaved between
	// them in the table, "b" pruned through 2.
	_, err := s.direct().ExecContext(ctx, `
INSERT INTO spaces (id, head, horizon, epoch, schema_version, created_at) VALUES
    ('b', 2, 2, 'ep-b', 0, 0), ('a', 0, 0, 'ep-a', 0, 0), ('empty', 0, 0, 'ep-e', 0, 0);
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 10)
INSERT INTO commits (space, seq, ts, actor, op, entity_type, entity_id, payload, receipt,
    provenance, changes, change_count, write_id)
SELECT sp, n, n, 'old', 'put', 'task', sp || (n % 3), '{"n":' || n || '}', '{}', '{}', '[]', 0, 100 + n
FROM g CROSS JOIN (SELECT 'a' AS sp UNION ALL SELECT 'b')
WHERE NOT (sp = 'b' AND n <= 2)
ORDER BY n, sp`)
	if err != nil {
		t.Fatalf("load the old schema: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	for _, tc := range []struct {
		space string
		first int64
	}{{"a", 1}, {"b", 3}} {
		cs, err := s.Commits(ctx, store.CommitsParams{Space: tc.space})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != int(11-tc.first) || cs[0].Seq != tc.first || cs[len(cs)-1].Seq != 10 {
			t.Fatalf("%s: %d commits from %v, want seqs %d to 10", tc.space, len(cs), seqs(cs), tc.first)
		}
		for i, c := range cs {
			if c.Seq != tc.first+int64(i) || string(c.Payload) != fmt.Sprintf(`{"n":%d}`, c.Seq) {
				t.Fatalf("%s: commit %d is seq %d payload %s", tc.space, i, c.Seq, c.Payload)
			}
		}
		sp, err := s.SpaceGet(ctx, tc.space)
		if err != nil || sp.Head != 10 {
			t.Fatalf("%s: SpaceGet = head %d, %v; want 10", tc.space, sp.Head, err)
		}
		rows, err := s.Rows(ctx, store.RowsParams{Space: tc.space, Lo: 0, Hi: 10,
			Filter: store.RowFilter{EntityType: "task", EntityID: tc.space + "1"}})
		if err != nil || len(rows) == 0 || rows[0].Seq%3 != 1 {
			t.Fatalf("%s: entity history = %v, %v", tc.space, rows, err)
		}
		landed, err := s.CommitLanded(ctx, tc.space, 10, 110)
		if err != nil || !landed {
			t.Fatalf("%s: CommitLanded(10) = %t, %v", tc.space, landed, err)
		}
	}
	var nums string
	if err := s.r.QueryRowContext(ctx, `SELECT group_concat(id || '=' || num, ' ') FROM (SELECT id, num FROM spaces ORDER BY id)`).Scan(&nums); err != nil {
		t.Fatal(err)
	}
	if nums != "a=1 b=2 empty=3" {
		t.Fatalf("space numbers %q, want a=1 b=2 empty=3", nums)
	}
	newSpace(t, s, "c")
	c, recs := upsertCommit(11, nil, live("task", "new", 11, `{"n":11}`), "u", "")
	commitOne(t, s, "a", c, recs)
	cs, err := s.Commits(ctx, store.CommitsParams{Space: "a", After: 9})
	if err != nil || len(seqs(cs)) != 2 || cs[1].Seq != 11 {
		t.Fatalf("a after a new write: %v, %v", seqs(cs), err)
	}
	if sp, err := s.SpaceGet(ctx, "c"); err != nil || sp.Head != 0 {
		t.Fatalf("c: %+v, %v", sp, err)
	}
	var num int64
	if err := s.r.QueryRowContext(ctx, `SELECT num FROM spaces WHERE id = 'c'`).Scan(&num); err != nil || num != 4 {
		t.Fatalf("c's number = %d, %v; want 4", num, err)
	}
}

// migrateThrough applies the embedded migrations up to version last.
// openThrough opens a store on a fresh file, migrated through migration
// last only, closed when the test ends.
func openThrough(t *testing.T, last int) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "eddy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	migrateThrough(t, s, last)
	return s
}

func migrateThrough(t *testing.T, s *Store, last int) {
	t.Helper()
	ms, err := migrations.List(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version > last {
			break
		}
		err := s.writeTx(context.Background(), func(tx *connTx) error {
			_, err := applyMigration(context.Background(), tx, m)
			return err
		})
		if err != nil {
			t.Fatalf("migration %d: %v", m.Version, err)
		}
	}
}

// How a plan walks the commits table (named commits, c, x or y).
var (
	scansCommits = regexp.MustCompile(`SCAN (commits|c|x|y)\b`)
	searchesRids = regexp.MustCompile(`SEARCH (commits|c) USING INTEGER PRIMARY KEY \(rowid[>=]`)
)

// TestCommitReadsSearchRids: every read of a space's commits by seq
// searches the space's range of rids (or an index), never scans the
// commits table or sorts it.
func TestCommitReadsSearchRids(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	newSpace(t, s, "s")
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"commits":    {sqlCommits, []any{"s", 1, 1}},
		"raw":        {sqlCommitsNoReceipts, []any{"s", 1, 1}},
		"head":       {`SELECT ` + spaceCols + ` FROM spaces WHERE id = ?1`, []any{"s"}},
		"seq before": {sqlSeqBefore, []any{"s", 1}},
		"prune":      {pruneQueries[0], []any{"s", 1}},
		"first":      {sqlFirstChanges, []any{"s", `[["task","t",0]]`}},
	} {
		plan := explain(t, s, q.sql, q.args...)
		if scansCommits.MatchString(plan) || strings.Contains(plan, "TEMP B-TREE") ||
			!searchesRids.MatchString(plan) {
			t.Errorf("%s does not search the space's rids:\n%s", name, plan)
		}
	}
}
