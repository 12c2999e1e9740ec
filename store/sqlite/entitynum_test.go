package sqlite

import (
	"context"
	"database/sql"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// TestMigrateEntityNumbers: migration 0019 numbers the entities a
// database already holds by their first commit and stores each commit's
// number; an entity whose commits were all pruned gets none, like the
// engine's keys. Entity histories read the same before and after, and
// writes afterwards (through keys WriteBegin loaded or not) keep every
// entity's number: new entities take their creating commit's seq.
func TestMigrateEntityNumbers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openThrough(t, 18)
	newSpace(t, s, "s")
	// a: commits 2 and 4; b: 3 and 5 (deleted); p: its commits pruned; the
	// engine's eddy.trigger/x: 6, no entity row. Commit 1 was pruned.
	_, err := s.direct().ExecContext(ctx, `
UPDATE spaces SET head = 6, horizon = 1 WHERE id = 's';
INSERT INTO entities (space, type, id, version, kind, properties, links, group_versions, created_at, updated_at) VALUES
    ('s', 'task', 'a', 4, 'live', '{}', '[]', '{}', 0, 0),
    ('s', 'task', 'b', 5, 'deleted', '{}', '[]', '{}', 0, 0),
    ('s', 'task', 'p', 1, 'live', '{}', '[]', '{}', 0, 0);
INSERT INTO commits (rid, space, seq, ts, actor, op, entity_type, entity_id, payload, receipt, provenance, changes, change_count)
SELECT (SELECT num << 40 FROM spaces WHERE id = 's') + v.column1, 's', v.column1, 0, 'old', v.column2,
    v.column3, v.column4, '{}', '{}', '{}', '[]', 0
FROM (VALUES (2, 'put', 'task', 'a'), (3, 'put', 'task', 'b'), (4, 'patch', 'task', 'a'),
    (5, 'delete', 'task', 'b'), (6, 'fire', 'eddy.trigger', 'x')) AS v`)
	if err != nil {
		t.Fatalf("load the old schema: %v", err)
	}
	keys := map[string]store.EntityKey{
		"a": {Type: "task", ID: "a"}, "b": {Type: "task", ID: "b"}, "p": {Type: "task", ID: "p"},
		"x": {Type: "eddy.trigger", ID: "x"}, "c": {Type: "task", ID: "c"},
	}
	history := func(name string, want ...int64) {
		t.Helper()
		head, _ := s.SpaceGet(ctx, "s")
		rows, err := s.Rows(ctx, store.RowsParams{Space: "s", Hi: head.Head,
			Filter: store.RowFilter{EntityType: keys[name].Type, EntityID: keys[name].ID}})
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(rows); !slices.Equal(got, append([]int64{}, want...)) {
			t.Fatalf("history of %s = %v, want %v", name, got, want)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	wantNums(t, s, map[string]any{"a": int64(2), "b": int64(3), "p": nil},
		map[int64]any{2: int64(2), 3: int64(3), 4: int64(2), 5: int64(3), 6: nil})
	history("a", 2, 4)
	history("b", 3, 5)
	history("p")
	history("x", 6)

	// p, updated by a transaction that did not load it; b put over its
	// tombstone by one that did; c created.
	p7, recs := upsertCommit(7, &store.Record{Type: "task", ID: "p", Version: 1}, live("task", "p", 7, `{}`), "new", "")
	commitOne(t, s, "s", p7, recs)
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s", Entities: []store.EntityKey{keys["b"], keys["c"]}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	b8, recs8 := upsertCommit(8, nil, live("task", "b", 8, `{}`), "new", "")
	c9, recs9 := upsertCommit(9, nil, live("task", "c", 9, `{}`), "new", "")
	c10, recs10 := upsertCommit(10, nil, live("task", "c", 10, `{}`), "new", "")
	if err := tx.(store.BatchAppender).AppendBatch(ctx, []store.Commit{b8, c9, c10}, [][]store.Record{recs8, recs9, recs10}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wantNums(t, s, map[string]any{"a": int64(2), "b": int64(3), "p": nil, "c": int64(9)},
		map[int64]any{7: nil, 8: int64(3), 9: int64(9), 10: int64(9)})
	history("p", 7)
	history("b", 3, 5, 8)
	history("c", 9, 10)
}

// wantNums checks the numbers of entities of space s (task/<id>) and
// the entity_num of its commits by seq (nil for NULL).
func wantNums(t *testing.T, s *Store, entities map[string]any, commits map[int64]any) {
	t.Helper()
	ctx := context.Background()
	for id, want := range entities {
		var num sql.NullInt64
		if err := s.r.QueryRowContext(ctx, `SELECT num FROM entities WHERE space = 's' AND type = 'task' AND id = ?`, id).Scan(&num); err != nil {
			t.Fatalf("entity %s: %v", id, err)
		}
		if got := nullable(num); got != want {
			t.Fatalf("entity %s is numbered %v, want %v", id, got, want)
		}
	}
	for seq, want := range commits {
		var num sql.NullInt64
		if err := s.r.QueryRowContext(ctx, `SELECT entity_num FROM commits WHERE space = 's' AND seq = ?`, seq).Scan(&num); err != nil {
			t.Fatalf("commit %d: %v", seq, err)
		}
		if got := nullable(num); got != want {
			t.Fatalf("commit %d has entity_num %v, want %v", seq, got, want)
		}
	}
}

// nullable is n's value, or nil when it is NULL.
func nullable(n sql.NullInt64) any {
	if !n.Valid {
		return nil
	}
	return n.Int64
}

// TestFirstChangesSearchesByNumber: FirstChangesAfter finds a key's first
// commit as its primary entity through the entity history index by
// number, type, id and seq, after one probe of the entities table.
func TestFirstChangesSearchesByNumber(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	newSpace(t, s, "s")
	plan := explain(t, s, sqlFirstChanges, "s", `[["task","t",0]]`)
	for _, want := range []string{
		"USING COVERING INDEX commits_entity (space=? AND entity_num=? AND entity_type=? AND entity_id=? AND seq>?)",
		"SEARCH entities USING PRIMARY KEY (space=? AND type=? AND id=?)",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("the first changes' plan lacks %q:\n%s", want, plan)
		}
	}
}

// TestMigrateTruncatesWAL: a migration that rewrites the commits table
// leaves no WAL of the table's size behind.
func TestMigrateTruncatesWAL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openThrough(t, 18)
	newSpace(t, s, "s")
	_, err := s.direct().ExecContext(ctx, `
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 20000)
INSERT INTO commits (rid, space, seq, ts, actor, op, entity_type, entity_id, payload, receipt, provenance, changes, change_count)
SELECT (SELECT num << 40 FROM spaces WHERE id = 's') + n, 's', n, 0, 'old', 'put', 'task', 'e' || (n % 100),
    '{"n":1}', '{}', '{}', '[]', 0
FROM g`)
	if err != nil {
		t.Fatalf("load the old schema: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	fi, err := os.Stat(walFile(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 0 {
		t.Fatalf("the WAL holds %d bytes after migrating, want none", fi.Size())
	}
	rows, err := s.Rows(ctx, store.RowsParams{Space: "s", Hi: 20000, Filter: store.RowFilter{EntityType: "task", EntityID: "e7"}})
	if err != nil || len(rows) != 200 {
		t.Fatalf("history of e7 after migrating: %d rows, %v; want 200", len(rows), err)
	}
}
