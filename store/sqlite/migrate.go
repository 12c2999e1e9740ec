package sqlite

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"time"

	"github.com/eddy-run/eddy/store/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL
)`

// Migrate applies the embedded migrations that have not run, each in its
// own BEGIN IMMEDIATE transaction, so two processes migrating at once
// serialize on the database write lock and each migration runs once.
//
// A migration that rewrites a table (0016 and 0019 rewrite every commit)
// writes a WAL as large as the table, and SQLite never shrinks a WAL
// file by itself: the file would keep that size on disk for good. So once
// this call applied one, it checkpoints the whole WAL into the database
// file and truncates it (walTruncate).
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrations.List(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	applied := false
	for _, m := range ms {
		err := s.writeTx(ctx, func(tx *connTx) error {
			ran, err := applyMigration(ctx, tx, m)
			applied = applied || ran
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlite: migrate %04d_%s: %w", m.Version, m.Name, err)
		}
	}
	if applied {
		s.walTruncate(ctx)
	}
	return nil
}

// sqlTruncateCheckpoint copies every frame of the WAL into the database
// file, waiting (up to the busy timeout) for readers of older frames, and
// truncates the WAL to zero bytes.
const sqlTruncateCheckpoint = `PRAGMA wal_checkpoint(TRUNCATE)`

// walTruncate runs sqlTruncateCheckpoint on the write connection. It is
// best effort: a reader that holds on past the busy timeout leaves the WAL
// as it is, to be copied by the background checkpoints (nothing is lost,
// the file only stays large).
func (s *Store) walTruncate(ctx context.Context) {
	if err := s.wr.acquire(ctx); err != nil {
		slog.Warn("sqlite: truncate the WAL after migrating", "err", err)
		return
	}
	defer s.wr.release()
	var busy, frames, copied int64
	st, err := s.wr.stmt(ctx, sqlTruncateCheckpoint)
	if err == nil {
		err = st.QueryRowContext(ctx).Scan(&busy, &frames, &copied)
	}
	if err := s.wr.note(err); err != nil || busy != 0 {
		slog.Warn("sqlite: truncate the WAL after migrating", "err", err, "busy", busy == 1)
	}
}

// applyMigration runs m inside tx unless schema_migrations records it,
// and reports whether it ran m.
func applyMigration(ctx context.Context, tx *connTx, m migrations.Migration) (bool, error) {
	if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
		return false, err
	}
	var n int
	err := tx.QueryRowContext(ctx,
		`SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n)
	if err != nil || n > 0 {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, err
	}
	_, err = tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UnixMicro())
	return err == nil, err
}
