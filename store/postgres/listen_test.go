package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// notice is one call of a Listen callback.
type notice struct {
	space string
	head  int64
}

// listenTimeout bounds every wait for a notification.
const listenTimeout = 15 * time.Second

// startListen runs s.Listen until the test ends and returns its calls and
// a stop function that cancels it and returns its error.
func startListen(t *testing.T, s *Store) (<-chan notice, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan notice, 256)
	done := make(chan error, 1)
	go func() {
		done <- s.Listen(ctx, func(space string, head int64) {
			select {
			case calls <- notice{space, head}:
			default:
				t.Errorf("listen callback: buffer full, dropped %s:%d", space, head)
			}
		})
	}()
	var stopped bool
	var stopErr error
	stop := func() error {
		if stopped {
			return stopErr
		}
		stopped = true
		cancel()
		select {
		case stopErr = <-done:
		case <-time.After(5 * time.Second):
			stopErr = errors.New("listen did not return within 5s of cancel")
		}
		return stopErr
	}
	t.Cleanup(func() { _ = stop() })
	return calls, stop
}

// listening is startListen once the listener has connected (its first
// call, the re-check of every head, is taken).
func listening(t *testing.T, s *Store) (<-chan notice, func() error) {
	t.Helper()
	calls, stop := startListen(t, s)
	expect(t, calls, notice{"", -1})
	return calls, stop
}

// next returns the next callback call or fails the test.
func next(t *testing.T, calls <-chan notice) notice {
	t.Helper()
	select {
	case n := <-calls:
		return n
	case <-time.After(listenTimeout):
		t.Fatal("no listen callback within", listenTimeout)
		return notice{}
	}
}

// expect fails the test unless the next call is want.
func expect(t *testing.T, calls <-chan notice, want notice) {
	t.Helper()
	if got := next(t, calls); got != want {
		t.Fatalf("listen callback = %+v, want %+v", got, want)
	}
}

// appendPut writes one put commit on space at its next seq.
func appendPut(t *testing.T, s *Store, space, id string, seq int64) {
	t.Helper()
	c, r := putCommit(seq, nil, rec("task", id, seq, `{}`), "o", "")
	write(t, s, space, ap(c, r))
}

func TestListenAcrossStores(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a, b := openURL(t, url), openURL(t, url)
	mustSpace(t, a, "core.teild-dev")
	mustSpace(t, a, "other")

	calls, stop := listening(t, b)

	appendPut(t, a, "core.teild-dev", "t1", 1)
	expect(t, calls, notice{"core.teild-dev", 1})

	// A transaction appending two commits notifies its last head once.
	c2, r2 := putCommit(2, nil, rec("task", "t2", 2, `{}`), "o", "")
	c3, r3 := putCommit(3, nil, rec("task", "t3", 3, `{}`), "o", "")
	write(t, a, "core.teild-dev", ap(c2, r2), ap(c3, r3))
	expect(t, calls, notice{"core.teild-dev", 3})

	appendPut(t, a, "other", "x", 1)
	expect(t, calls, notice{"other", 1})

	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("listen returned %v after cancel, want context.Canceled", err)
	}
}

func TestListenReconnects(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a, b := openURL(t, url), openURL(t, url)
	mustSpace(t, a, "sp")

	calls, stop := listening(t, b)
	appendPut(t, a, "sp", "t1", 1)
	expect(t, calls, notice{"sp", 1})

	for i := range 2 {
		if n := terminateListeners(t, a); n != 1 {
			t.Fatalf("terminated %d listener backends, want 1", n)
		}
		// The listener reconnects and says notifications may have been
		// missed; then they flow again.
		expect(t, calls, notice{"", -1})
		seq := int64(i + 2)
		appendPut(t, a, "sp", "t"+string(rune('2'+i)), seq)
		expect(t, calls, notice{"sp", seq})
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("listen returned %v after cancel, want context.Canceled", err)
	}
}

// terminateListeners kills this database's listener backends and returns
// how many it killed.
func terminateListeners(t *testing.T, s *Store) int {
	t.Helper()
	const q = `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`
	var n int
	if err := s.pool.QueryRow(context.Background(), q, ListenApplicationName).Scan(&n); err != nil {
		t.Fatalf("terminate listeners: %v", err)
	}
	return n
}

func TestListenCancel(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	_, stop := listening(t, s)
	start := time.Now()
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("listen returned %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("listen took %v to return after cancel", d)
	}
	// The dedicated connection is closed with it.
	deadline := time.Now().Add(5 * time.Second)
	for listeners(t, s) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the listener connection is still open after Listen returned")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listeners counts this database's listener backends.
func listeners(t *testing.T, s *Store) int {
	t.Helper()
	const q = `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`
	var n int
	if err := s.pool.QueryRow(context.Background(), q, ListenApplicationName).Scan(&n); err != nil {
		t.Fatalf("count listeners: %v", err)
	}
	return n
}

func TestListenCanceledBeforeConnect(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Listen(ctx, func(string, int64) { t.Error("callback called on a canceled context") })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("listen = %v, want context.Canceled", err)
	}
	if err := s.Listen(context.Background(), nil); err == nil {
		t.Fatal("listen with a nil callback succeeded")
	}
}

func TestParsePayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		space string
		head  int64
		ok    bool
	}{
		{"sp:2", "sp", 2, true},
		{"core.teild.dev:4190", "core.teild.dev", 4190, true},
		{"a-b.c:0", "a-b.c", 0, true},
		{"weird:name:7", "weird:name", 7, true},
		{":7", "", 0, false},
		{"sp:", "", 0, false},
		{"sp", "", 0, false},
		{"sp:x", "", 0, false},
		{"sp:-1", "", 0, false},
		{"", "", 0, false},
	}
	for _, tt := range tests {
		space, head, ok := parsePayload(tt.in)
		if space != tt.space || head != tt.head || ok != tt.ok {
			t.Errorf("parsePayload(%q) = %q, %d, %v; want %q, %d, %v", tt.in, space, head, ok, tt.space, tt.head, tt.ok)
		}
	}
}

// TestListenPings is not parallel: it shrinks a package tunable.
func TestListenPings(t *testing.T) {
	shrink(t, &listenPingInterval, 20*time.Millisecond)
	url := pgtest.NewDatabase(t)
	s, w := openURL(t, url), openURL(t, url)
	mustSpace(t, s, "sp")
	calls, stop := listening(t, s)

	// An idle listener pings its connection (pgx pings with "-- ping")
	// and keeps it: no reconnect follows.
	const q = `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND query = '-- ping'`
	deadline := time.Now().Add(listenTimeout)
	for {
		var n int
		if err := s.pool.QueryRow(context.Background(), q, ListenApplicationName).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle listener never pinged")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A store that does not listen always notifies.
	appendPut(t, w, "sp", "t1", 1)
	expect(t, calls, notice{"sp", 1})
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("listen returned %v", err)
	}
}
