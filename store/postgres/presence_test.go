package postgres

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// mark sends a notification "mark:<n>" on NotifyChannel through s's pool
// and returns what calls delivered before it: every notification sent
// before the mark, in commit order.
func mark(t *testing.T, s *Store, calls <-chan notice, n int64) []notice {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), "SELECT pg_notify($1, $2)", NotifyChannel, "mark:"+strconv.FormatInt(n, 10)); err != nil {
		t.Fatal(err)
	}
	var before []notice
	for {
		got := next(t, calls)
		if got == (notice{"mark", n}) {
			return before
		}
		before = append(before, got)
	}
}

// heardNothingOf fails the test if a notice of space was delivered before
// the next mark.
func heardNothingOf(t *testing.T, s *Store, calls <-chan notice, n int64, space string) {
	t.Helper()
	for _, got := range mark(t, s, calls, n) {
		if got.space == space {
			t.Fatalf("a quiet store's commit notified %+v", got)
		}
	}
}

// quietAlone starts s's listener, the only one in the database, and
// checks that s's commits went quiet once it counted nobody else (its own
// notice on PresenceChannel does not count).
func quietAlone(t *testing.T, s *Store) <-chan notice {
	t.Helper()
	calls, _ := listening(t, s)
	mark(t, s, calls, 0) // the listener's own presence notice came before
	if !s.presence.quiet.Load() {
		t.Fatal("a lone listener's store still notifies its commits")
	}
	return calls
}

// A store whose listener is alone sends no NOTIFY: its commits reach
// this process in memory, and nobody else listens.
func TestPresenceAloneIsQuiet(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	mustSpace(t, s, "sp")
	calls := quietAlone(t, s)
	appendPut(t, s, "sp", "t1", 1)
	heardNothingOf(t, s, calls, 1, "sp")
}

// A listener joining while a quiet commit is in flight hears about it:
// the quiet store turns loud on the newcomer's notice, and the commit,
// the last quiet one in flight, asks every listener to re-check every
// head as it ends; later commits notify again.
func TestPresenceJoinDuringQuietCommit(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a := openURL(t, url)
	mustSpace(t, a, "sp")
	quietAlone(t, a)

	entered, release, committed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a.beforeSend = func() {
		close(entered)
		<-release
	}
	go func() {
		defer close(committed)
		appendPut(t, a, "sp", "t1", 1)
	}()
	<-entered

	b := openURL(t, url)
	callsB, _ := listening(t, b)
	// a heard b's notice; the re-check waits for the quiet commit.
	polltest.Until(t, "the quiet store turns loud", func() bool { return !a.presence.quiet.Load() })
	close(release)
	<-committed

	// The commit did not notify; the re-check that followed it did, and
	// what b re-reads then includes the commit.
	expect(t, callsB, notice{"", -1})
	var head int64
	if err := b.pool.QueryRow(context.Background(), "SELECT head FROM spaces WHERE id = 'sp'").Scan(&head); err != nil {
		t.Fatal(err)
	}
	if head != 1 {
		t.Fatalf("head read after the re-check = %d, want 1", head)
	}

	a.beforeSend = nil
	appendPut(t, a, "sp", "t2", 2)
	expect(t, callsB, notice{"sp", 2})
}

// shrink sets the package tunable *v to d until the test and its
// cleanups (the listeners it started) are done; the test must not be
// parallel.
func shrink(t *testing.T, v *time.Duration, d time.Duration) {
	t.Helper()
	old := *v
	t.Cleanup(func() { *v = old })
	*v = d
}

// Once the other listener leaves, the store goes quiet again at its
// next count.
func TestPresenceQuietAfterLeave(t *testing.T) {
	shrink(t, &presenceInterval, 20*time.Millisecond)
	url := pgtest.NewDatabase(t)
	a, b := openURL(t, url), openURL(t, url)
	mustSpace(t, a, "sp")
	callsA, _ := listening(t, a)
	callsB, stopB := listening(t, b)

	// Both count the other: a's commits notify b.
	polltest.Until(t, "the first store turns loud", func() bool { return !a.presence.quiet.Load() })
	appendPut(t, a, "sp", "t1", 1)
	for got := next(t, callsB); got != (notice{"sp", 1}); got = next(t, callsB) {
		if got != (notice{"", -1}) { // a's re-check as it turned loud
			t.Fatalf("listen callback = %+v, want a re-check or sp:1", got)
		}
	}

	if err := stopB(); err == nil {
		t.Fatal("the second listener returned nil after cancel")
	}
	polltest.Until(t, "the last listener's store goes quiet", func() bool { return a.presence.quiet.Load() })
	mark(t, a, callsA, 1) // what a heard while b was there
	appendPut(t, a, "sp", "t2", 2)
	heardNothingOf(t, a, callsA, 2, "sp")
}

// A store whose listener stopped notifies its commits again: it can no
// longer hear a newcomer.
func TestPresenceLoudAfterListenStops(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	mustSpace(t, s, "sp")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	heard := make(chan struct{}, 16)
	go func() {
		done <- s.Listen(ctx, func(string, int64) { heard <- struct{}{} })
	}()
	<-heard
	polltest.Until(t, "the lone listener's store goes quiet", func() bool { return s.presence.quiet.Load() })
	cancel()
	<-done
	if s.presence.quiet.Load() {
		t.Fatal("the store stays quiet after its listener returned")
	}
}
