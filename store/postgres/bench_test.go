package postgres_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/storetest"
)

func openBench(b *testing.B) (*postgres.Store, *pgxpool.Pool) {
	b.Helper()
	url := pgtest.NewDatabase(b)
	st := storetest.Migrated(b, func(ctx context.Context) (*postgres.Store, error) { return postgres.Open(ctx, url) })
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return st, pool
}

// baselineSchema is only for the baselines: the physical floor (one
// single-row INSERT per transaction) and the naive changelog commit shape.
const baselineSchema = `
CREATE TABLE bl_rows (id bigserial PRIMARY KEY, space text NOT NULL, payload text NOT NULL);
CREATE TABLE bl_spaces (id text PRIMARY KEY, seq bigint NOT NULL);
CREATE TABLE bl_entities (space text, id text, props text, version bigint, PRIMARY KEY (space, id));
CREATE TABLE bl_log (space text, seq bigint, entity_id text, payload text, PRIMARY KEY (space, seq));
INSERT INTO bl_spaces VALUES ('s', 0);`

// BenchmarkAppend compares eddy's commit path with two baselines run in
// the same process on the same database: "insert" is one single-row
// INSERT transaction; "naive" is the five-round-trip changelog commit
// (lock the space row, bump the seq, upsert the entity, insert the row,
// commit).
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	b.Run("baseline=insert/writers=1", func(b *testing.B) {
		_, pool := openBench(b)
		mustExec(b, pool, baselineSchema)
		storetest.RunWriters(b, 1, func(i int64) error {
			_, err := pool.Exec(ctx, `INSERT INTO bl_rows (space, payload) VALUES ('s', $1)`, `{"n":`+strconv.FormatInt(i, 10)+`}`)
			return err
		})
	})
	for _, w := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("baseline=naive/writers=%d", w), func(b *testing.B) {
			_, pool := openBench(b)
			mustExec(b, pool, baselineSchema)
			storetest.RunWriters(b, w, func(i int64) error { return naiveCommit(ctx, pool, i) })
		})
	}
	for _, tc := range []struct{ writers, spaces int }{{1, 1}, {4, 1}, {16, 1}, {16, 4}} {
		b.Run(fmt.Sprintf("eddy/writers=%d/spaces=%d", tc.writers, tc.spaces), func(b *testing.B) {
			st, _ := openBench(b)
			storetest.BenchWrites(b, st, tc.writers, tc.spaces)
		})
	}
}

func naiveCommit(ctx context.Context, pool *pgxpool.Pool, i int64) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	var seq int64
	if err := tx.QueryRow(ctx, `SELECT seq FROM bl_spaces WHERE id = 's' FOR UPDATE`).Scan(&seq); err != nil {
		return err
	}
	seq++
	if _, err := tx.Exec(ctx, `UPDATE bl_spaces SET seq = $1 WHERE id = 's'`, seq); err != nil {
		return err
	}
	id := "e" + strconv.FormatInt(i, 10)
	if _, err := tx.Exec(ctx, `INSERT INTO bl_entities VALUES ('s', $1, $2, $3)
		ON CONFLICT (space, id) DO UPDATE SET props = excluded.props, version = excluded.version`, id, `{"n":1}`, seq); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO bl_log VALUES ('s', $1, $2, $3)`, seq, id, `{"created":true}`); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func mustExec(b *testing.B, pool *pgxpool.Pool, sql string) {
	b.Helper()
	if _, err := pool.Exec(context.Background(), sql); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReads populates one space with EDDY_BENCH_ROWS commits
// (default 1,000,000), then compares Pull with a raw ordered scan of the
// same rows, and times filtered history pages of 100.
func BenchmarkReads(b *testing.B) {
	st, pool := openBench(b)
	storetest.BenchReads(b, st, func(b *testing.B) int { b.Helper(); return rawScan(b, pool) })
}

// rawScan reads every commit row of the space in seq order, decoding the
// wire columns, as the physical floor of a reader.
func rawScan(b *testing.B, pool *pgxpool.Pool) int {
	b.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT seq, ts, actor, op, entity_type, entity_id, payload FROM commits WHERE space = 'big' ORDER BY seq`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			b.Fatal(err)
		}
		_ = vals
		n++
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkDurability compares eddy's commit path with synchronous_commit
// on (serve --durability strict) and off (relaxed) in one run.
func BenchmarkDurability(b *testing.B) {
	for _, async := range []bool{false, true} {
		for _, w := range []int{1, 16} {
			b.Run(fmt.Sprintf("async=%v/writers=%d", async, w), func(b *testing.B) {
				url := pgtest.NewDatabase(b)
				st := storetest.Migrated(b, func(ctx context.Context) (*postgres.Store, error) {
					return postgres.OpenOptions(ctx, url, postgres.Options{AsyncCommit: async})
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

// BenchmarkEntityIDs is sqlite's BenchmarkEntityIDs on PostgreSQL (its
// default synchronous_commit): new entities named by random or
// time-ordered ids in a space already holding 50,000.
func BenchmarkEntityIDs(b *testing.B) {
	for _, w := range []int{1, 16} {
		for _, ids := range []string{"random", "time-ordered"} {
			b.Run(fmt.Sprintf("writers=%d/ids=%s", w, ids), func(b *testing.B) {
				st, _ := openBench(b)
				storetest.BenchEntityIDs(b, st, w, storetest.IDSchemes[ids])
			})
		}
	}
}
