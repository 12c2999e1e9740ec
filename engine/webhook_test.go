package engine_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
)

// hookCall is one request a test webhook received.
type hookCall struct {
	at     time.Time
	header http.Header
	body   []byte
}

// hook is a webhook receiver answering from a script of responses (the
// last one repeats).
type hook struct {
	mu      sync.Mutex
	calls   []hookCall
	answers []func(w http.ResponseWriter)
	srv     *httptest.Server
}

func newHook(t *testing.T, answers ...func(w http.ResponseWriter)) *hook {
	t.Helper()
	h := &hook{answers: answers}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.calls = append(h.calls, hookCall{at: time.Now(), header: r.Header.Clone(), body: body})
		answer := h.answers[min(len(h.calls), len(h.answers))-1]
		h.mu.Unlock()
		answer(w)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) received() []hookCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookCall(nil), h.calls...)
}

func status(code int, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

func actions(body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// A webhook gets signed requests: a 503 with Retry-After is retried no
// sooner than asked, then a 2xx answer's actions are written by the
// delivery, with the cause and the delivery id as webhook-id.
func TestWebhookRetryAfterThenActions(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		h := newHook(t, status(503, "Retry-After", "1"),
			actions(`{"actions":[{"op":"patch","type":"task","entityId":"t1","patch":{"synced":true}}]}`))
		e := newEnv(t, open(t), testOptions())
		e.function("sync", `{"kind":"webhook","writes":["task"],"url":"`+h.srv.URL+`","secret":"`+hookSecret+`"}`)
		e.trigger("sync", `{"source":{"changes":{"types":["task"],"ops":["put"]}},"function":"sync","delivery":{"backoff":{"initial":"10ms","max":"20ms"}}}`)
		seq := e.write(put("task", "t1", map[string]any{"title": "x"}))
		e.settle()
		calls := h.received()
		if len(calls) != 2 {
			t.Fatalf("%d calls, want 2", len(calls))
		}
		if gap := calls[1].at.Sub(calls[0].at); gap < 900*time.Millisecond {
			t.Fatalf("retried after %v, want >= Retry-After 1s", gap)
		}
		ds := e.deliveries("sync")
		if len(ds) != 1 || ds[0].Status != store.DeliverySucceeded || ds[0].Attempts != 2 {
			t.Fatalf("deliveries: %+v", ds)
		}
		for _, c := range calls {
			if err := functions.Verify(hookSecret, c.header, c.body, time.Minute); err != nil {
				t.Fatalf("signature: %v", err)
			}
			if c.header.Get("webhook-id") != ds[0].ID {
				t.Fatalf("webhook-id %q, want the delivery id %q", c.header.Get("webhook-id"), ds[0].ID)
			}
			checkCauseToken(t, e, c.header.Get("Eddy-Cause"), seq)
		}
		var req functions.Request
		if err := json.Unmarshal(calls[0].body, &req); err != nil || req.Delivery != ds[0].ID || req.Row.Seq != seq || req.Entity == nil || req.Before != nil {
			t.Fatalf("request body %s (%v)", calls[0].body, err)
		}
		if e.get("task", "t1")["synced"] != true {
			t.Fatal("the answer's action was not written")
		}
		c := e.commits(seq)[0]
		if c.Actor != "trigger:sync" || c.Provenance.CausedBy != seq || c.Provenance.Delivery != ds[0].ID {
			t.Fatalf("action row provenance %+v", c.Provenance)
		}
	})
}

// checkCauseToken verifies a webhook's Eddy-Cause token: this space, the
// trigger, caused by seq at depth 1.
func checkCauseToken(t *testing.T, e *env, token string, seq int64) {
	t.Helper()
	key, err := causality.Key(t.Context(), e.st)
	if err != nil {
		t.Fatal(err)
	}
	c, err := causality.Verify(key, token, space, time.Now())
	if err != nil {
		t.Fatalf("Eddy-Cause %q: %v", token, err)
	}
	if c.Trigger != "sync" || c.CausedBy != seq || c.Depth != 1 {
		t.Fatalf("cause claims %+v", c)
	}
}

// A 4xx other than 408 and 429 fails the delivery at once; 5xx retries
// until maxAttempts, then fails.
func TestWebhookFailures(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		bad := newHook(t, status(400))
		down := newHook(t, status(500))
		e := newEnv(t, open(t), testOptions())
		e.function("bad", `{"kind":"webhook","url":"`+bad.srv.URL+`"}`)
		e.function("down", `{"kind":"webhook","url":"`+down.srv.URL+`"}`)
		e.trigger("bad", `{"source":{"changes":{"types":["task"]}},"function":"bad","delivery":{"maxAttempts":5,"backoff":{"initial":"10ms","max":"20ms"}}}`)
		e.trigger("down", `{"source":{"changes":{"types":["task"]}},"function":"down","delivery":{"maxAttempts":3,"backoff":{"initial":"10ms","max":"20ms"}}}`)
		e.write(put("task", "t1", map[string]any{"title": "x"}))
		e.settle()
		if ds := e.deliveries("bad"); len(ds) != 1 || ds[0].Status != store.DeliveryFailed || ds[0].Attempts != 1 || ds[0].LastError == "" {
			t.Fatalf("4xx delivery: %+v", ds)
		}
		if n := len(bad.received()); n != 1 {
			t.Fatalf("4xx webhook called %d times", n)
		}
		if ds := e.deliveries("down"); len(ds) != 1 || ds[0].Status != store.DeliveryFailed || ds[0].Attempts != 3 {
			t.Fatalf("5xx delivery: %+v", ds)
		}
		if n := len(down.received()); n != 3 {
			t.Fatalf("5xx webhook called %d times, want 3", n)
		}
	})
}

// A delivery discarded while it waits behind another of its entity is
// never sent, even by a dispatcher that still holds it in its queue: the
// running mark comes before the request, and it is refused.
func TestDiscardedDeliveryNeverSent(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	h := newHook(t, func(w http.ResponseWriter) { <-gate; w.WriteHeader(http.StatusOK) }, status(200))
	var open sync.Once
	release := func() { open.Do(func() { close(gate) }) }
	t.Cleanup(release) // before the hook server closes, whatever failed
	opts := testOptions()
	// No lease round in the test: a round's refresh reloads the queue and
	// drops the discarded delivery, and the stale dispatch under test
	// never happens.
	opts.LeaseTTL = time.Hour
	var attempts atomic.Int32
	opts.Observe = func(ev engine.Event) {
		if ev.Kind == "delivery" {
			attempts.Add(1)
		}
	}
	e := newEnv(t, openSQLite(t), opts)
	e.function("hook", `{"kind":"webhook","url":"`+h.srv.URL+`"}`)
	e.trigger("hook", `{"source":{"changes":{"types":["task"]}},"function":"hook"}`)
	e.write(put("task", "t1", map[string]any{"n": 1}))
	second := e.write(patch("task", "t1", map[string]any{"n": 2}))
	e.eventually("the first request", func() bool { return len(h.received()) == 1 })
	e.eventually("the second delivery", func() bool { return len(e.deliveries("hook")) == 2 })
	d := e.delivery("hook", second)
	// Behind the engine's back: its dispatcher still queues the delivery.
	if _, err := e.st.DeliveryUpdate(t.Context(), store.DeliveryUpdate{Space: space, ID: d.ID,
		From: []store.DeliveryStatus{store.DeliveryPending}, Status: store.DeliveryDiscarded}); err != nil {
		t.Fatal(err)
	}
	release()
	e.settle()
	// The first attempt, then the stale one, which ends fenced.
	e.eventually("both attempts ended", func() bool { return attempts.Load() == 2 })
	if n := len(h.received()); n != 1 {
		t.Fatalf("the webhook was called %d times, want 1 (the discarded delivery was sent)", n)
	}
	if got := e.delivery("hook", second); got.Status != store.DeliveryDiscarded || got.Attempts != 0 {
		t.Fatalf("discarded delivery: %+v", got)
	}
}

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines(substr string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

// Retrying and failed deliveries are logged with their trigger, delivery
// id and reason, rate-limited per trigger: two retries in quick
// succession log one line.
func TestDeliveryOutcomesLogged(t *testing.T) {
	t.Parallel()
	down := newHook(t, status(500))
	logs := &lockedBuffer{}
	opts := testOptions()
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e := newEnv(t, openSQLite(t), opts)
	e.function("down", `{"kind":"webhook","url":"`+down.srv.URL+`"}`)
	e.trigger("down", `{"source":{"changes":{"types":["task"]}},"function":"down","delivery":{"maxAttempts":3,"backoff":{"initial":"10ms","max":"20ms"}}}`)
	seq := e.write(put("task", "t1", map[string]any{}))
	e.settle()
	d := e.delivery("down", seq)
	retrying, failed := logs.lines("engine: delivery retrying"), logs.lines("engine: delivery failed")
	if len(retrying) != 1 || len(failed) != 1 {
		t.Fatalf("%d retrying and %d failed lines, want 1 and 1:\n%s", len(retrying), len(failed), strings.Join(append(retrying, failed...), "\n"))
	}
	for _, l := range append(retrying, failed...) {
		if !strings.Contains(l, "trigger=down") || !strings.Contains(l, "delivery="+d.ID) || !strings.Contains(l, "reason=") {
			t.Errorf("log line %q lacks the trigger, delivery or reason", l)
		}
	}
}
