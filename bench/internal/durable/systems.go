package durable

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/bench/internal/harness"
)

// payload is the JSON every system stores per commit.
func payload(i int64) []byte {
	n := strconv.FormatInt(i, 10)
	return []byte(`{"n":` + n + `,"title":"row ` + n + `"}`)
}

// numbered turns a commit of number i into an op that numbers its calls
// itself, across every measurement of the system, so no commit repeats
// an earlier one (eddy would answer a repeated put as a no-op).
func numbered(commit func(ctx context.Context, i int64) error) op {
	var n atomic.Int64
	return func(ctx context.Context, _ int64) error { return commit(ctx, n.Add(1)) }
}

// openEddy opens eddy on a fresh store of kind; each commit puts the new
// note e<i>.
func openEddy(ctx context.Context, c harness.Config, kind string) (op, func() error, error) {
	return openEddyWith(ctx, c, kind, nil)
}

// openEddyWith is openEddy with the configuration tuned (see
// harness.OpenEddyWith).
func openEddyWith(ctx context.Context, c harness.Config, kind string, tune func(*eddy.Config)) (op, func() error, error) {
	e, err := harness.OpenEddyWith(ctx, c, kind, tune)
	if err != nil {
		return nil, nil, err
	}
	return numbered(func(ctx context.Context, i int64) error {
		_, err := e.Put(ctx, "note", "e"+strconv.FormatInt(i, 10), payload(i))
		return err
	}), e.Close, nil
}

// openJetStream starts a fresh server with a stream over bench.>; each
// commit is a synchronous publish to bench.note.
func openJetStream(ctx context.Context, c harness.Config, syncAlways bool) (op, func() error, error) {
	n, err := harness.StartNATS(c, syncAlways)
	if err != nil {
		return nil, nil, err
	}
	if _, err := n.Stream(ctx, "BENCH", "bench.>"); err != nil {
		return nil, nil, errors.Join(err, n.Close())
	}
	return numbered(func(ctx context.Context, i int64) error {
		_, err := n.JS.Publish(ctx, "bench.note", payload(i))
		return err
	}), n.Close, nil
}

// openRaw creates a fresh database with one table; each commit is one
// autocommit INSERT.
func openRaw(ctx context.Context, c harness.Config) (op, func() error, error) {
	db, err := harness.NewDatabase(ctx, c.PGAdminURL)
	if err != nil {
		return nil, nil, err
	}
	drop := func() error { return db.Drop(context.WithoutCancel(ctx)) }
	pool, err := harness.Pool(ctx, db.URL, 16)
	if err != nil {
		return nil, nil, errors.Join(err, drop())
	}
	done := func() error { pool.Close(); return drop() }
	if _, err := pool.Exec(ctx, `CREATE TABLE bl_rows (id bigserial PRIMARY KEY, space text NOT NULL, payload text NOT NULL)`); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("postgres: create table: %w", err), done())
	}
	return numbered(func(ctx context.Context, i int64) error {
		_, err := pool.Exec(ctx, `INSERT INTO bl_rows (space, payload) VALUES ('bench', $1)`, string(payload(i)))
		return err
	}), done, nil
}
