package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/sqlite"
	"github.com/eddy-run/eddy/store/storetest"
)

func openBench(b *testing.B) (*sqlite.Store, *sql.DB) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "eddy.db")
	st := storetest.Migrated(b, func(ctx context.Context) (*sqlite.Store, error) { return sqlite.Open(ctx, path) })
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	return st, db
}

const baselineSchema = `
CREATE TABLE bl_rows (id INTEGER PRIMARY KEY, space TEXT NOT NULL, payload TEXT NOT NULL);
CREATE TABLE bl_spaces (id TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE bl_entities (space TEXT, id TEXT, props TEXT, version INTEGER, PRIMARY KEY (space, id));
CREATE TABLE bl_log (space TEXT, seq INTEGER, entity_id TEXT, payload TEXT, PRIMARY KEY (space, seq));
INSERT INTO bl_spaces VALUES ('s', 0);`

// BenchmarkAppend compares eddy's commit path on SQLite (WAL,
// synchronous=FULL) with two baselines on the same database file: one
// single-row INSERT transaction, and the naive changelog commit (read the
// seq, bump it, upsert the entity, insert the row, commit).
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	b.Run("baseline=insert/writers=1", func(b *testing.B) {
		_, db := openBench(b)
		mustExec(b, db, baselineSchema)
		storetest.RunWriters(b, 1, func(i int64) error {
			_, err := db.ExecContext(ctx, `INSERT INTO bl_rows (space, payload) VALUES ('s', ?)`, `{"n":`+strconv.FormatInt(i, 10)+`}`)
			return err
		})
	})
	b.Run("baseline=naive/writers=1", func(b *testing.B) {
		_, db := openBench(b)
		mustExec(b, db, baselineSchema)
		storetest.RunWriters(b, 1, func(i int64) error { return naiveCommit(ctx, db, i) })
	})
	for _, tc := range []struct{ writers, spaces int }{{1, 1}, {4, 1}, {16, 1}, {16, 4}} {
		b.Run(fmt.Sprintf("eddy/writers=%d/spaces=%d", tc.writers, tc.spaces), func(b *testing.B) {
			st, _ := openBench(b)
			storetest.BenchWrites(b, st, tc.writers, tc.spaces)
		})
	}
}

func naiveCommit(ctx context.Context, db *sql.DB, i int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck
	var seq int64
	if err := tx.QueryRowContext(ctx, `SELECT seq FROM bl_spaces WHERE id = 's'`).Scan(&seq); err != nil {
		return err
	}
	seq++
	if _, err := tx.ExecContext(ctx, `UPDATE bl_spaces SET seq = ? WHERE id = 's'`, seq); err != nil {
		return err
	}
	id := "e" + strconv.FormatInt(i, 10)
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO bl_entities VALUES ('s', ?, ?, ?)`, id, `{"n":1}`, seq); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO bl_log VALUES ('s', ?, ?, ?)`, seq, id, `{"created":true}`); err != nil {
		return err
	}
	return tx.Commit()
}

func mustExec(b *testing.B, db *sql.DB, q string) {
	b.Helper()
	if _, err := db.Exec(q); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReads populates one space with EDDY_BENCH_ROWS commits
// (default 1,000,000), then compares Pull with a raw ordered scan of the
// same rows, and times filtered history pages of 100.
func BenchmarkReads(b *testing.B) {
	st, db := openBench(b)
	storetest.BenchReads(b, st, func(b *testing.B) int { b.Helper(); return rawScan(b, db) })
}

func rawScan(b *testing.B, db *sql.DB) int {
	b.Helper()
	rows, err := db.Query(`SELECT seq, ts, actor, op, entity_type, entity_id, payload FROM commits
WHERE rid > (SELECT num << 40 FROM spaces WHERE id = 'big') AND rid < (SELECT (num + 1) << 40 FROM spaces WHERE id = 'big')
ORDER BY rid`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	n := 0
	var (
		seq, ts                     int64
		actor, op, typ, id, payload string
	)
	for rows.Next() {
		if err := rows.Scan(&seq, &ts, &actor, &op, &typ, &id, &payload); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkDurability compares eddy's commit path with synchronous=FULL
// (serve --durability strict) and NORMAL (relaxed) in one run.
func BenchmarkDurability(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		for _, w := range []int{1, 16} {
			b.Run(fmt.Sprintf("synchronous=%s/writers=%d", sync, w), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "eddy.db")
				st := storetest.Migrated(b, func(ctx context.Context) (*sqlite.Store, error) {
					return sqlite.OpenOptions(ctx, path, sqlite.Options{Synchronous: sync})
				})
				storetest.BenchWrites(b, st, w, 1)
			})
		}
	}
}

// BenchmarkLinger compares group commit with and without the leader's
// linger (changelog.Options.Linger) at 16 writers into one space.
func BenchmarkLinger(b *testing.B) {
	for _, l := range []time.Duration{-1, changelog.DefaultLinger} {
		b.Run(fmt.Sprintf("linger=%s/writers=16", max(l, 0)), func(b *testing.B) {
			st, _ := openBench(b)
			storetest.BenchWritesOptions(b, st, 16, 1, changelog.Options{Linger: l})
		})
	}
}

// oneByOne hides a store's BatchAppender: the changelog then appends a
// group's commits one statement per row, as before multi-row appends.
type oneByOne struct{ store.Store }

func (s oneByOne) WriteBegin(ctx context.Context, p store.WriteBeginParams) (store.WriteTx, error) {
	tx, err := s.Store.WriteBegin(ctx, p)
	return struct{ store.WriteTx }{tx}, err
}

// BenchmarkAppendBatch compares a group's commits appended one row per
// statement (the baseline) with multi-row statements, at 16 writers into
// one space.
func BenchmarkAppendBatch(b *testing.B) {
	for _, mode := range []string{"one-by-one", "multi-row"} {
		b.Run(mode+"/writers=16", func(b *testing.B) {
			st, _ := openBench(b)
			var s store.Store = st
			if mode == "one-by-one" {
				s = oneByOne{st}
			}
			storetest.BenchWrites(b, s, 16, 1)
		})
	}
}

// BenchmarkEntityIDs compares new entities named by random ids with
// time-ordered ones (storetest.IDSchemes), in a space already holding
// 50,000 entities, at 1 and 16 writers, strict and relaxed: random ids
// touch a random leaf of the entities table and of the entity history
// index each, and SQLite's WAL takes a page for every page touched.
func BenchmarkEntityIDs(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		for _, w := range []int{1, 16} {
			for _, ids := range []string{"random", "time-ordered"} {
				b.Run(fmt.Sprintf("synchronous=%s/writers=%d/ids=%s", sync, w, ids), func(b *testing.B) {
					path := filepath.Join(b.TempDir(), "eddy.db")
					st := storetest.Migrated(b, func(ctx context.Context) (*sqlite.Store, error) {
						return sqlite.OpenOptions(ctx, path, sqlite.Options{Synchronous: sync})
					})
					storetest.BenchEntityIDs(b, st, w, storetest.IDSchemes[ids])
				})
			}
		}
	}
}
