package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// TestWriterLeavesCheckpoints: the write connection never checkpoints
// (wal_autocheckpoint is 0), so the WAL keeps every commit's frames until
// the checkpointer's own connection copies them into the database file.
func TestWriterLeavesCheckpoints(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var auto int
	if err := s.w.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto); err != nil {
		t.Fatal(err)
	}
	if auto != 0 {
		t.Fatalf("writer's wal_autocheckpoint = %d, want 0", auto)
	}
	newSpace(t, s, "s")
	s.ckpt.halt() // the WAL now holds whatever the writer wrote

	for seq := int64(1); seq <= 300; seq++ {
		c, recs := upsertCommit(seq, nil, live("task", fmt.Sprintf("t%d", seq), seq, `{"n":1}`), "u", "")
		commitOne(t, s, "s", c, recs)
	}
	frames, copied, err := s.ckpt.checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	// SQLite's default would have checkpointed past 1,000 pages and
	// restarted the WAL; here every commit's frames are still in it.
	if frames < 1000 {
		t.Fatalf("WAL has %d frames after 300 commits, want the writer not to have checkpointed (>= 1000)", frames)
	}
	if copied != frames {
		t.Fatalf("checkpoint copied %d of %d frames with no reader open", copied, frames)
	}
}

// TestCheckpointerWakes: every checkpointEvery commits wake the
// checkpointer once, without blocking the writer when it is busy.
func TestCheckpointerWakes(t *testing.T) {
	c := newCheckpointer(nil)
	for range checkpointEvery - 1 {
		c.committed(1)
	}
	if len(c.wake) != 0 {
		t.Fatalf("woken after %d writes", checkpointEvery-1)
	}
	c.committed(0) // a write that appends nothing counts once
	if len(c.wake) != 1 {
		t.Fatalf("not woken after %d writes", checkpointEvery)
	}
	for range 3 * checkpointEvery {
		c.committed(1) // the wake-up is pending: never blocks
	}
	if len(c.wake) != 1 {
		t.Fatalf("%d wake-ups pending, want 1", len(c.wake))
	}
	<-c.wake
	c.since.Swap(0) // as the run loop does before each checkpoint
	// A group commit counts every commit it holds.
	c.committed(checkpointEvery - 1)
	if len(c.wake) != 0 {
		t.Fatal("woken one commit short of the count")
	}
	c.committed(2)
	if len(c.wake) != 1 {
		t.Fatal("a group reaching the count did not wake it")
	}
}

// TestCheckpointerAdapts: the count of commits that wake the checkpointer
// follows the WAL pages they wrote, once a checkpoint has copied the
// whole WAL (so the next one's frames are the commits' own), within its
// bounds.
func TestCheckpointerAdapts(t *testing.T) {
	c := newCheckpointer(nil)
	c.adapt(160, 230) // the WAL had not restarted: frames tell nothing
	if got := c.every.Load(); got != checkpointEvery {
		t.Fatalf("every = %d before a whole checkpoint, want %d", got, checkpointEvery)
	}
	c.restarted = true
	for _, tc := range []struct{ commits, frames, want int64 }{
		{160, 230, 695}, // groups of ~14 share pages
		{160, 960, 166}, // single puts, ~6 pages each
		{10, 1, 166},    // too few commits to tell: unchanged
		{160, 100000, minCheckpointEvery},
		{5000, 10, maxCheckpointEvery},
	} {
		c.adapt(tc.commits, tc.frames)
		if got := c.every.Load(); got != tc.want {
			t.Errorf("adapt(%d commits, %d frames): every = %d, want %d", tc.commits, tc.frames, got, tc.want)
		}
	}
}

// TestCheckpointerRunAdapts: on a real store, group-sized write
// transactions raise the count above checkpointEvery once a checkpoint
// has restarted the WAL.
func TestCheckpointerRunAdapts(t *testing.T) {
	s := newStore(t)
	newSpace(t, s, "s")
	s.ckpt.halt()
	c := newCheckpointer(s.ckpt.db)
	ctx := context.Background()
	commit := func(from int64, n int) {
		tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		for seq := from; seq < from+int64(n); seq++ {
			cm, recs := upsertCommit(seq, nil, live("task", fmt.Sprintf("t%d", seq), seq, `{"n":1}`), "u", "")
			if err := tx.Append(ctx, cm, recs); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	seq := int64(1)
	for round := range 3 {
		for range 20 { // 20 transactions of 16 commits
			commit(seq, 16)
			seq += 16
		}
		frames, copied, err := c.checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		c.adapt(320, frames)
		c.restarted = copied == frames
		t.Logf("round %d: %d frames, every %d", round, frames, c.every.Load())
	}
	if got := c.every.Load(); got <= checkpointEvery {
		t.Fatalf("every = %d after group commits, want more than %d", got, checkpointEvery)
	}
}
