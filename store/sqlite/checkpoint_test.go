package sqlite

import (
	"context"
	"fmt"
	"testing"
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
	c := &checkpointer{wake: make(chan struct{}, 1)}
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
	// A group commit counts every commit it holds.
	c.committed(checkpointEvery - 1)
	if len(c.wake) != 0 {
		t.Fatal("woken one commit short of the next multiple")
	}
	c.committed(2)
	if len(c.wake) != 1 {
		t.Fatal("a group crossing the next multiple did not wake it")
	}
}
