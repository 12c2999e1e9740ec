package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Checkpoints move the WAL's frames into the database file. SQLite's
// default runs one inside the commit that pushes the WAL past 1,000
// pages, so one commit in a couple of hundred waits for a copy of the
// WAL and an fsync of the database file: the tail of commit latency. The
// write connection turns that off (wal_autocheckpoint=0) and a
// checkpointer runs PASSIVE checkpoints on its own connection instead,
// concurrently with the writer (WAL mode lets them overlap). Durability
// is unchanged: a checkpoint only copies frames already committed to the
// WAL, and a crash mid-checkpoint is recovered from the WAL on open.

const (
	// checkpointEvery is the number of commits after which the
	// checkpointer is woken: a single-put commit writes five or six WAL
	// pages, so this is about SQLite's default of 1,000 pages (a group
	// commit shares pages, so fewer).
	checkpointEvery = 160
	// checkpointIdle is how often the checkpointer runs anyway, for writes
	// that did not count (migrations, housekeeping) and quiet periods.
	checkpointIdle = time.Second
)

// checkpointer runs PASSIVE checkpoints off the write path.
type checkpointer struct {
	db      *sql.DB
	writes  atomic.Int64 // commits (or other write transactions) counted so far
	wake    chan struct{}
	stop    chan struct{}
	halted  sync.Once
	stopped sync.WaitGroup
}

// startCheckpointer opens its connection with dsn and starts it.
func startCheckpointer(ctx context.Context, dsn string) (*checkpointer, error) {
	db, err := openDB(ctx, dsn, 1)
	if err != nil {
		return nil, err
	}
	c := &checkpointer{db: db, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	c.stopped.Go(c.run)
	return c, nil
}

// committed counts n commits of one write transaction (1 for a write
// that appends none) and wakes the checkpointer each time the count
// passes a multiple of checkpointEvery: a group commit of many counts as
// many. It never blocks.
func (c *checkpointer) committed(n int64) {
	n = max(n, 1)
	if after := c.writes.Add(n); (after-n)/checkpointEvery == after/checkpointEvery {
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run() {
	t := time.NewTicker(checkpointIdle)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
		case <-t.C:
		}
		if _, _, err := c.checkpoint(); err != nil {
			slog.Warn("sqlite: checkpoint", "err", err)
		}
	}
}

// checkpoint runs one PASSIVE checkpoint: it copies what it can without
// waiting for readers or the writer, and returns the WAL's frames and how
// many of them are in the database file now. A failure is left to the next
// one (the WAL only grows meanwhile; nothing is lost).
func (c *checkpointer) checkpoint() (frames, copied int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var busy int64
	err = c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
	return frames, copied, err
}

// halt stops the loop (once) and waits for it; checkpoint still works.
func (c *checkpointer) halt() {
	c.halted.Do(func() { close(c.stop) })
	c.stopped.Wait()
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() error {
	c.halt()
	return c.db.Close()
}
