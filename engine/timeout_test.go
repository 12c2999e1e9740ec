package engine_test

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// deadlines is a transport recording how far each request's deadline
// was from its start.
type deadlines struct {
	mu   sync.Mutex
	left []time.Duration
}

func (d *deadlines) RoundTrip(r *http.Request) (*http.Response, error) {
	if dl, ok := r.Context().Deadline(); ok {
		d.mu.Lock()
		d.left = append(d.left, time.Until(dl))
		d.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (d *deadlines) seen() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Duration(nil), d.left...)
}

// A webhook's own timeout bounds its deliveries when the trigger sets
// none; a trigger's delivery.timeout overrides it.
func TestFunctionTimeoutHonoured(t *testing.T) {
	t.Parallel()
	rec := &deadlines{}
	opts := testOptions()
	opts.Client = &http.Client{Transport: rec}
	e := newEnv(t, openSQLite(t), opts)
	h := newHook(t, status(200))
	e.function("hook", `{"kind":"webhook","url":"`+h.srv.URL+`","timeout":"2s"}`)
	e.trigger("own", `{"source":{"changes":{"types":["task"]}},"function":"hook"}`)
	e.write(put("task", "t1", map[string]any{}))
	e.settle()
	e.trigger("over", `{"source":{"changes":{"types":["note"]}},"function":"hook","delivery":{"timeout":"7s"}}`)
	e.write(put("note", "n1", map[string]any{}))
	e.settle()
	got := rec.seen()
	if len(got) != 2 {
		t.Fatalf("%d requests with a deadline, want 2", len(got))
	}
	for i, want := range []time.Duration{2 * time.Second, 7 * time.Second} {
		if got[i] > want || got[i] < want-time.Second {
			t.Errorf("request %d: deadline %v after it started, want about %v", i, got[i], want)
		}
	}
}
