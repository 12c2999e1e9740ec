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
//
// A checkpoint running beside a busy writer never catches up with it: it
// copies the frames that were there when it started, and the writer has
// appended more by the time it ends. SQLite starts the WAL over from its
// beginning only when a write transaction begins with every frame copied,
// so under sustained writes the WAL grew without bound (69 MB after 3,000
// single-put commits), and every commit appended past the end of the
// file, which makes its fsync journal the file's new size as well: on
// ext4 here an append and fdatasync took 258-308 µs, an overwrite in
// place 137-160 µs. So once a background pass finds the WAL past
// restartFrames, it asks the writer to sweep (Store.sweepWAL): the write
// connection, between two transactions, copies the few frames appended
// since, and the next write transaction starts the WAL over. The WAL file
// then stays about restartFrames pages long and is written in place.

const (
	// checkpointEvery is the number of commits after which the
	// checkpointer is woken: a single-put commit writes five or six WAL
	// pages, so this is about SQLite's default of 1,000 pages (a group
	// commit shares pages, so fewer).
	checkpointEvery = 160
	// checkpointIdle is how often the checkpointer runs anyway, for writes
	// that did not count (migrations, housekeeping) and quiet periods.
	checkpointIdle = time.Second
	// restartFrames is the WAL length (in pages) past which a background
	// pass asks the writer to sweep: SQLite's own checkpoint threshold.
	restartFrames = 1000
)

// checkpointer runs PASSIVE checkpoints off the write path.
type checkpointer struct {
	db     *sql.DB
	writes atomic.Int64 // commits (or other write transactions) counted so far
	// sweep is set by a pass that found the WAL past restartFrames and
	// taken by the writer (Store.sweepWAL).
	sweep   atomic.Bool
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
		c.pass()
	}
}

// pass runs one background checkpoint and asks the writer to sweep when
// it ended behind a WAL past restartFrames (see judge).
func (c *checkpointer) pass() {
	before := c.writes.Load()
	frames, copied, err := c.checkpoint()
	if err != nil {
		slog.Warn("sqlite: checkpoint", "err", err)
		return
	}
	c.judge(before, frames, copied)
}

// judge asks the writer to sweep after a pass that found frames in a WAL
// of restartFrames or more and copied copied of them, the write count
// being before when it started, unless the pass left nothing behind: it
// copied every frame it saw and no write was counted meanwhile. Then the
// next write transaction starts the WAL over by itself, and a sweep would
// only cost the writer two fsyncs.
func (c *checkpointer) judge(before, frames, copied int64) {
	if frames < restartFrames {
		return
	}
	if copied < frames || c.writes.Load() != before {
		c.sweep.Store(true)
	}
}

// checkpoint runs one PASSIVE checkpoint: it copies what it can without
// waiting for readers or the writer, and returns the WAL's frames and how
// many of them are in the database file now. A failure is left to the next
// one (the WAL only grows meanwhile; nothing is lost).
func (c *checkpointer) checkpoint() (frames, copied int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return scanCheckpoint(c.db.QueryRowContext(ctx, sqlPassiveCheckpoint))
}

// sqlPassiveCheckpoint checkpoints what no reader still needs.
const sqlPassiveCheckpoint = `PRAGMA wal_checkpoint(PASSIVE)`

// scanCheckpoint reads the row of sqlPassiveCheckpoint: the WAL's frames
// and how many of them are in the database file.
func scanCheckpoint(row *sql.Row) (frames, copied int64, err error) {
	var busy int64
	err = row.Scan(&busy, &frames, &copied)
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
