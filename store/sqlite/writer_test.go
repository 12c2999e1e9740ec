package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// marks counts the rows of a temp table of the write connection, creating
// it if needed: a temp table belongs to one connection, so a new
// connection has none.
func marks(t *testing.T, s *Store) int {
	t.Helper()
	ctx := context.Background()
	if _, err := s.direct().ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS conn_mark (x)`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.direct().QueryRowContext(ctx, `SELECT count(*) FROM temp.conn_mark`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWriterReplacesBrokenConnection: once the write connection reports
// itself unusable, the next holder gets a new one, its statements
// prepared again, and writes go on.
func TestWriterReplacesBrokenConnection(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	newSpace(t, s, "s")
	c1, r1 := upsertCommit(1, nil, live("task", "a", 1, `{}`), "a", "")
	commitOne(t, s, "s", c1, r1)
	marks(t, s)
	if _, err := s.direct().ExecContext(context.Background(), `INSERT INTO temp.conn_mark VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if got := marks(t, s); got != 1 {
		t.Fatalf("marked connection: %d rows, want 1", got)
	}

	ctx := context.Background()
	if err := s.wr.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	s.wr.broken = true
	s.wr.release()

	if got := marks(t, s); got != 0 {
		t.Fatalf("after the break: the marked connection is still in use (%d rows)", got)
	}
	c2, r2 := upsertCommit(2, nil, live("task", "b", 2, `{}`), "a", "")
	commitOne(t, s, "s", c2, r2)
	sp, err := s.SpaceGet(ctx, "s")
	if err != nil || sp.Head != 2 {
		t.Fatalf("space = %+v, %v; want head 2", sp, err)
	}
}

// TestCloseWithOpenWriteTx: Close returns while a WriteTx holds the write
// connection; the transaction is rolled back when it ends and later
// writes report ErrUnavailable.
func TestCloseWithOpenWriteTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eddy.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	newSpace(t, s, "s")
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	c, recs := upsertCommit(1, nil, live("task", "a", 1, `{}`), "a", "")
	if err := tx.Append(ctx, c, recs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("rollback after close: %v", err)
	}
	if _, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("write after close: %v, want ErrUnavailable", err)
	}

	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	sp, err := s2.SpaceGet(ctx, "s")
	if err != nil || sp.Head != 0 {
		t.Fatalf("reopened space = %+v, %v; want head 0 (the append rolled back)", sp, err)
	}
}
