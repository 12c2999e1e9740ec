package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/client"
)

// The tests in this file run the client against scripted servers: the
// answers a real eddy gives only under load or failure (a stalled
// consumer cut off, a compacted stream, 429 with Retry-After, a silent
// connection, garbage), played line by line.

// script is one scripted connection: a status (0 = 200 ndjson), headers,
// and lines; hang keeps the stream open until the client leaves.
type script struct {
	status int
	header map[string]string
	lines  []string
	hang   bool
}

// scripted serves each request the next script (the last one repeats)
// and records each request's query.
type scripted struct {
	mu      sync.Mutex
	scripts []script
	queries []string
	srv     *httptest.Server
}

func newScripted(t *testing.T, scripts ...script) *scripted {
	t.Helper()
	s := &scripted{scripts: scripts}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scripted) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	i := min(len(s.queries), len(s.scripts)-1)
	s.queries = append(s.queries, r.URL.RawQuery)
	sc := s.scripts[i]
	s.mu.Unlock()
	for k, v := range sc.header {
		w.Header().Set(k, v)
	}
	if sc.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(sc.status)
		_, _ = io.WriteString(w, strings.Join(sc.lines, ""))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	for _, l := range sc.lines {
		_, _ = io.WriteString(w, l+"\n")
	}
	w.(http.Flusher).Flush()
	if sc.hang {
		<-r.Context().Done()
	}
}

// requests returns the recorded queries.
func (s *scripted) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}

// space returns the space "default" of a client of the scripted server.
func (s *scripted) space(t *testing.T, o client.Options) *client.Space {
	t.Helper()
	c, err := client.New(s.srv.URL, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c.Space("default")
}

func row(seq int) string {
	return fmt.Sprintf(`{"seq":%d,"ts":"2026-08-04T10:00:00.183742Z","actor":"owner","op":"put","entityId":"e%d","type":"task","payload":{"created":true}}`, seq, seq)
}

// events reads k events from w.
func events(t *testing.T, w *client.Watcher, k int) []string {
	t.Helper()
	var out []string
	for range k {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("after %v: %v", out, err)
		}
		out = append(out, fmt.Sprintf("%s@%d", ev.Kind, ev.Position))
	}
	return out
}

func TestWatchProtocol(t *testing.T) {
	t.Parallel()
	t.Run("stalled consumer", func(t *testing.T) {
		t.Parallel()
		// The server cuts a stalled stream with a resumable terminal
		// frame; the watch resumes from its last row and drops the row
		// the new stream repeats.
		s := newScripted(t,
			script{lines: []string{`{"bookmark":0}`, row(1), row(2), `{"error":{"code":"rate_limited","message":"consumer stalled"}}`}},
			script{lines: []string{`{"bookmark":2}`, row(2), row(3)}, hang: true})
		var drops []client.Drop
		o := fastResume(client.WatchOptions{From: 0})
		o.OnDrop = func(d client.Drop) { drops = append(drops, d) }
		w := mustWatch(t)(s.space(t, client.Options{}).Watch(ctx(t), o))
		defer w.Close()
		got := events(t, w, 4)
		if fmt.Sprint(got) != "[bookmark@0 row@1 row@2 row@3]" {
			t.Fatalf("events = %v", got)
		}
		q := s.requests()
		if len(q) != 2 || !strings.Contains(q[0], "from=0") || !strings.Contains(q[1], "from=2") || !strings.Contains(q[1], "watch=1") {
			t.Fatalf("requests = %v", q)
		}
		if len(drops) != 1 || client.CodeOf(drops[0].Err) != "rate_limited" || drops[0].From != 2 || drops[0].Attempt != 1 {
			t.Fatalf("drops = %+v", drops)
		}
	})
	t.Run("compacted mid-stream", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t, script{lines: []string{`{"bookmark":0}`, row(1), `{"error":{"code":"compacted","message":"fell behind","details":{"horizon":5}}}`}})
		w := mustWatch(t)(s.space(t, client.Options{}).Watch(ctx(t), client.WatchOptions{}))
		defer w.Close()
		events(t, w, 2)
		_, err := w.Next()
		var ce *client.CompactedError
		if !errors.As(err, &ce) || ce.From != 1 || ce.Horizon != 5 || ce.Err.Status != 0 {
			t.Fatalf("err = %v", err)
		}
		if len(s.requests()) != 1 {
			t.Fatalf("reconnected after compacted: %v", s.requests())
		}
	})
	t.Run("final terminal frame", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t, script{lines: []string{`{"bookmark":3}`, `{"error":{"code":"forbidden","message":"token revoked"}}`}})
		w := mustWatch(t)(s.space(t, client.Options{}).Watch(ctx(t), client.WatchOptions{From: 3}))
		defer w.Close()
		events(t, w, 1)
		_, err := w.Next()
		wantCode(t, err, "forbidden")
		if len(s.requests()) != 1 {
			t.Fatalf("reconnected after forbidden: %v", s.requests())
		}
	})
	t.Run("retry-after on reconnect", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t,
			script{lines: []string{`{"bookmark":0}`, row(1)}}, // ends without a terminal frame
			script{status: 429, header: map[string]string{"Retry-After": "1"}, lines: []string{`{"error":{"code":"rate_limited","message":"too many streams"}}`}},
			script{lines: []string{`{"bookmark":1}`, row(2)}, hang: true})
		var drops []client.Drop
		o := fastResume(client.WatchOptions{From: 0})
		o.OnDrop = func(d client.Drop) { drops = append(drops, d) }
		w := mustWatch(t)(s.space(t, client.Options{}).Watch(ctx(t), o))
		defer w.Close()
		if got := events(t, w, 3); fmt.Sprint(got) != "[bookmark@0 row@1 row@2]" {
			t.Fatalf("events = %v", got)
		}
		if len(drops) != 2 || !errors.Is(drops[0].Err, client.ErrStreamEnded) || client.CodeOf(drops[1].Err) != "rate_limited" ||
			drops[1].Wait < time.Second || drops[1].Attempt != 2 {
			t.Fatalf("drops = %+v", drops)
		}
	})
	t.Run("idle connection", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t,
			script{lines: []string{`{"bookmark":0}`}, hang: true},
			script{lines: []string{`{"bookmark":0}`, row(1)}, hang: true})
		var drops []client.Drop
		o := fastResume(client.WatchOptions{From: 0, IdleTimeout: 100 * time.Millisecond})
		o.OnDrop = func(d client.Drop) { drops = append(drops, d) }
		w := mustWatch(t)(s.space(t, client.Options{}).Watch(ctx(t), o))
		defer w.Close()
		if got := events(t, w, 2); fmt.Sprint(got) != "[bookmark@0 row@1]" {
			t.Fatalf("events = %v", got)
		}
		if len(drops) != 1 || !errors.Is(drops[0].Err, client.ErrIdle) {
			t.Fatalf("drops = %+v", drops)
		}
	})
	t.Run("control frames", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t, script{lines: []string{`{"bookmark":0}`, `{"bookmark":5}`, `{"future":{"x":1}}`, `{}`, `{"bookmark":5}`, row(6)}, hang: true})
		w := mustWatch(t)(s.space(t, client.Options{}).Watch(ctx(t), client.WatchOptions{}))
		defer w.Close()
		if got := events(t, w, 4); fmt.Sprint(got) != "[bookmark@0 bookmark@5 heartbeat@5 row@6]" {
			t.Fatalf("events = %v", got)
		}
	})
	t.Run("long frame", func(t *testing.T) {
		t.Parallel()
		big := strings.Replace(row(1), `{"created":true}`, `{"properties":["`+strings.Repeat("p", 200<<10)+`"]}`, 1)
		s := newScripted(t, script{lines: []string{`{"bookmark":0}`, big, row(2)}, hang: true})
		w := mustWatch(t)(s.space(t, client.Options{}).Watch(ctx(t), client.WatchOptions{}))
		defer w.Close()
		if got := events(t, w, 3); fmt.Sprint(got) != "[bookmark@0 row@1 row@2]" {
			t.Fatalf("events = %v", got)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t, script{lines: []string{`{"bookmark":0}`, `<html>`}})
		w := mustWatch(t)(s.space(t, client.Options{}).Watch(ctx(t), client.WatchOptions{}))
		defer w.Close()
		events(t, w, 1)
		if _, err := w.Next(); !errors.Is(err, client.ErrBadFrame) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("close", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t, script{lines: []string{`{"bookmark":0}`}, hang: true})
		w := mustWatch(t)(s.space(t, client.Options{}).Watch(ctx(t), client.WatchOptions{}))
		events(t, w, 1)
		done := make(chan error)
		go func() {
			_, err := w.Next()
			done <- err
		}()
		_ = w.Close()
		if err := <-done; !errors.Is(err, client.ErrClosed) {
			t.Fatalf("next after close = %v", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t, script{lines: []string{`{"bookmark":0}`}, hang: true})
		c, cancel := context.WithCancel(ctx(t))
		w := mustWatch(t)(s.space(t, client.Options{}).Watch(c, client.WatchOptions{}))
		events(t, w, 1)
		cancel()
		if _, err := w.Next(); !errors.Is(err, context.Canceled) {
			t.Fatalf("next after cancel = %v", err)
		}
	})
	t.Run("first answer is not retried", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t, script{status: 503, header: map[string]string{"Retry-After": "0"}, lines: []string{`{"error":{"code":"unavailable","message":"down"}}`}})
		_, err := s.space(t, client.Options{}).Watch(ctx(t), client.WatchOptions{})
		if ce := wantCode(t, err, "unavailable"); ce.Status != 503 || len(s.requests()) != 1 {
			t.Fatalf("err = %+v after %d requests", ce, len(s.requests()))
		}
	})
}

// mustWatch returns a function that fails t unless a Watch call
// succeeded and returns its Watcher.
func mustWatch(t *testing.T) func(*client.Watcher, error) *client.Watcher {
	t.Helper()
	return func(w *client.Watcher, err error) *client.Watcher {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	unavailable := script{status: 503, header: map[string]string{"Retry-After": "0"}, lines: []string{`{"error":{"code":"unavailable","message":"store down"}}`}}
	okSpace := script{status: 200, lines: []string{`{"space":"default","head":3}`}}
	okWrite := script{status: 200, lines: []string{`{"receipt":{"status":"applied"},"entity":null}`}}
	okBatch := script{status: 200, lines: []string{`{"receipts":[]}`}}
	cases := []struct {
		name     string
		scripts  []script
		call     func(sp *client.Space) error
		requests int
		code     string
	}{
		{"GET retried", []script{unavailable, unavailable, okSpace},
			func(sp *client.Space) error { _, err := sp.Info(context.Background()); return err }, 3, ""},
		{"GET gives up after MaxRetries", []script{unavailable},
			func(sp *client.Space) error { _, err := sp.Info(context.Background()); return err }, 1 + client.DefaultMaxRetries, "unavailable"},
		{"503 without Retry-After", []script{{status: 503, lines: []string{`{"error":{"code":"unavailable","message":"no engine"}}`}}},
			func(sp *client.Space) error { _, err := sp.Info(context.Background()); return err }, 1, "unavailable"},
		{"write without key not retried", []script{unavailable, okWrite},
			func(sp *client.Space) error {
				_, err := sp.Put(context.Background(), "task", "a", map[string]any{})
				return err
			}, 1, "unavailable"},
		{"write with key retried", []script{unavailable, okWrite},
			func(sp *client.Space) error {
				_, err := sp.Put(context.Background(), "task", "a", map[string]any{}, client.WriteOptions{IdempotencyKey: "k"})
				return err
			}, 2, ""},
		{"429 with key retried", []script{{status: 429, header: map[string]string{"Retry-After": "0"}, lines: []string{`{"error":{"code":"rate_limited","message":"slow down"}}`}}, okWrite},
			func(sp *client.Space) error {
				_, err := sp.Delete(context.Background(), "task", "a", client.WriteOptions{IdempotencyKey: "k"})
				return err
			}, 2, ""},
		{"batch with ids retried", []script{unavailable, okBatch},
			func(sp *client.Space) error {
				_, err := sp.Mutate(context.Background(), client.Batch{Mutations: []client.Mutation{{MutationID: "m1", Op: "delete", Type: "task", EntityID: "a"}}})
				return err
			}, 2, ""},
		{"batch without ids not retried", []script{unavailable, okBatch},
			func(sp *client.Space) error {
				_, err := sp.Mutate(context.Background(), client.Batch{Mutations: []client.Mutation{{Op: "delete", Type: "task", EntityID: "a"}}})
				return err
			}, 1, "unavailable"},
		{"Retry-After beyond MaxRetryWait", []script{{status: 429, header: map[string]string{"Retry-After": "120"}, lines: []string{`{"error":{"code":"rate_limited","message":"later"}}`}}},
			func(sp *client.Space) error { _, err := sp.Info(context.Background()); return err }, 1, "rate_limited"},
		{"not a problem object", []script{{status: 502, lines: []string{"<html>bad gateway</html>"}}},
			func(sp *client.Space) error { _, err := sp.Info(context.Background()); return err }, 1, "http_502"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScripted(t, tc.scripts...)
			err := tc.call(s.space(t, client.Options{}))
			if n := len(s.requests()); n != tc.requests {
				t.Fatalf("%d requests, want %d (err %v)", n, tc.requests, err)
			}
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tc.code != "":
				wantCode(t, err, tc.code)
			}
		})
	}
	t.Run("RetryAfter reported", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t, script{status: 429, header: map[string]string{"Retry-After": "120"}, lines: []string{`{"error":{"code":"rate_limited","message":"later"}}`}})
		_, err := s.space(t, client.Options{}).Info(context.Background())
		if ce := wantCode(t, err, "rate_limited"); ce.RetryAfter != 2*time.Minute || ce.Status != 429 {
			t.Fatalf("err = %+v", ce)
		}
	})
	t.Run("no wait past the timeout", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t, script{status: 503, header: map[string]string{"Retry-After": "5"}, lines: []string{`{"error":{"code":"unavailable","message":"later"}}`}})
		_, err := s.space(t, client.Options{Timeout: time.Second}).Info(context.Background())
		if ce := wantCode(t, err, "unavailable"); ce.RetryAfter != 5*time.Second || len(s.requests()) != 1 {
			t.Fatalf("err = %+v after %d requests", ce, len(s.requests()))
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t, script{lines: []string{}, hang: true})
		_, err := s.space(t, client.Options{Timeout: 50 * time.Millisecond}).Info(context.Background())
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestClientOptions covers New's checks and FromEnv.
func TestClientOptions(t *testing.T) {
	for _, bad := range []string{"", "127.0.0.1:7070", "ftp://x", "http://"} {
		if _, err := client.New(bad, client.Options{}); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "Bearer env-token" || r.URL.Path != "/prefix/api/v1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"version":"x","spaces":[]}`)
	}))
	defer srv.Close()
	t.Setenv("EDDY_SERVER", srv.URL+"/prefix/")
	t.Setenv("EDDY_TOKEN", "env-token")
	c, err := client.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	if d, err := c.Discover(context.Background()); err != nil || d.Version != "x" || hits.Load() != 1 {
		t.Fatalf("discover = %+v %v", d, err)
	}
}
