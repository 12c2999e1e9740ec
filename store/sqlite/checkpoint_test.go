package sqlite

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
)

// TestWriterLeavesCheckpoints: the write connection never checkpoints
// (wal_autocheckpoint is 0), so the WAL keeps every commit's frames until
// the checkpointer's own connection copies them into the database file.
func TestWriterLeavesCheckpoints(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var auto int
	if err := s.direct().QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto); err != nil {
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

// TestWriterSweepRestartsWAL: a background pass that ends behind the
// writer (here a reader holds it back, as the writer's own appends do
// under load) leaves the WAL to grow; once the pass asks for a sweep, the
// writer's next commit copies the frames left and the commit after it
// starts the WAL over from its beginning (the WAL header's checkpoint
// sequence moves on), so the file is rewritten in place instead of
// growing. Without a sweep nothing restarts it.
func TestWriterSweepRestartsWAL(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	newSpace(t, s, "s")
	s.ckpt.halt() // passes run only when the test says
	seq := int64(0)
	put := func() {
		t.Helper()
		seq++
		c, recs := upsertCommit(seq, nil, live("task", fmt.Sprintf("t%d", seq), seq, `{"n":1}`), "u", "")
		commitOne(t, s, "s", c, recs)
	}
	for walFrames(t, s) < restartFrames {
		put()
	}
	reader, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRow("SELECT count(*) FROM commits").Scan(&n); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		put() // frames the pass may not copy while the reader is open
	}
	start := walCheckpointSeq(t, s)
	s.ckpt.pass()
	_ = reader.Rollback()
	if !s.ckpt.sweep.Load() {
		t.Fatalf("a pass over %d commits' frames did not ask for a sweep", seq)
	}
	put() // begins behind the pass (no restart), then sweeps
	if s.ckpt.sweep.Load() {
		t.Fatal("the writer's commit did not take the sweep")
	}
	if got := walCheckpointSeq(t, s); got != start {
		t.Fatalf("WAL restarted by a commit that began before the sweep: checkpoint sequence %d, was %d", got, start)
	}
	put() // the first commit after the sweep restarts the WAL
	if got := walCheckpointSeq(t, s); got != start+1 {
		t.Fatalf("WAL checkpoint sequence %d after the sweep, want %d (restarted)", got, start+1)
	}
	for range 250 {
		put()
	}
	if got := walCheckpointSeq(t, s); got != start+1 {
		t.Fatalf("WAL restarted again without a pass: checkpoint sequence %d, want %d", got, start+1)
	}
	if sp, err := s.SpaceGet(ctx, "s"); err != nil || sp.Head != seq {
		t.Fatalf("SpaceGet = head %d, %v; want %d", sp.Head, err, seq)
	}
}

// walFrames returns how many frames s's WAL file holds (whether or not
// they are still live).
func walFrames(t *testing.T, s *Store) int64 {
	t.Helper()
	f, err := os.Open(walFile(t, s))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, walHeader)
	switch _, err := io.ReadFull(f, hdr); {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return 0 // no header yet: no frames
	case err != nil:
		t.Fatal(err)
	}
	pageSize := int64(binary.BigEndian.Uint32(hdr[8:12]))
	return (fi.Size() - walHeader) / (frameHeader + pageSize)
}

// walCheckpointSeq returns the checkpoint sequence number in the header
// of s's WAL file, which SQLite increments each time it starts the WAL
// over.
func walCheckpointSeq(t *testing.T, s *Store) uint32 {
	t.Helper()
	f, err := os.Open(walFile(t, s))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hdr := make([]byte, 16)
	if _, err := io.ReadFull(f, hdr); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint32(hdr[12:16])
}

// TestSweepOnlyBehind: a pass asks for a sweep only when it left frames
// of a long WAL behind: copied short of what it saw (a reader held it
// back) or a write counted while it ran.
func TestSweepOnlyBehind(t *testing.T) {
	for _, tc := range []struct {
		name           string
		frames, copied int64
		wrote          bool
		want           bool
	}{
		{"short WAL", restartFrames - 1, 10, true, false},
		{"all copied, no write", restartFrames, restartFrames, false, false},
		{"held back", restartFrames, restartFrames - 1, false, true},
		{"written meanwhile", restartFrames + 5, restartFrames + 5, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &checkpointer{wake: make(chan struct{}, 1)}
			before := c.writes.Load()
			if tc.wrote {
				c.committed(1)
			}
			c.judge(before, tc.frames, tc.copied)
			if got := c.sweep.Load(); got != tc.want {
				t.Fatalf("sweep = %v, want %v", got, tc.want)
			}
		})
	}
}
