package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// span is one run of a recorded handler.
type span struct {
	seq        int64
	entity     string
	start, end time.Time
}

// recorder is a Go handler that sleeps and records when it ran, for which
// row and entity, and how many runs overlapped.
type recorder struct {
	sleep time.Duration

	mu        sync.Mutex
	spans     []span
	running   int
	perEntity map[string]int
	maxAll    int
	maxEntity int
}

func newRecorder(sleep time.Duration) *recorder {
	return &recorder{sleep: sleep, perEntity: map[string]int{}}
}

func (r *recorder) handle(ctx context.Context, in functions.Input) ([]changelog.Mutation, error) {
	r.mu.Lock()
	r.running++
	r.perEntity[in.Row.EntityID]++
	r.maxAll = max(r.maxAll, r.running)
	r.maxEntity = max(r.maxEntity, r.perEntity[in.Row.EntityID])
	s := span{seq: in.Row.Seq, entity: in.Row.EntityID, start: time.Now()}
	r.mu.Unlock()
	select {
	case <-time.After(r.sleep):
	case <-ctx.Done():
	}
	r.mu.Lock()
	r.running--
	r.perEntity[in.Row.EntityID]--
	s.end = time.Now()
	r.spans = append(r.spans, s)
	r.mu.Unlock()
	return nil, ctx.Err()
}

// byEntity returns the recorded spans per entity, in start order.
func (r *recorder) byEntity() map[string][]span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]span{}
	for _, s := range r.spans {
		out[s.entity] = append(out[s.entity], s)
	}
	for _, ss := range out {
		slices.SortFunc(ss, func(a, b span) int { return a.start.Compare(b.start) })
	}
	return out
}

// With ordering entity and concurrency 4, deliveries of one entity never
// overlap and run in seq order while different entities run in
// parallel; with ordering none, one entity's deliveries overlap.
func TestOrdering(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		ordered, unordered := newRecorder(40*time.Millisecond), newRecorder(40*time.Millisecond)
		e.handler("ordered", ordered.handle)
		e.handler("unordered", unordered.handle)
		e.trigger("ordered", `{"source":{"changes":{"types":["job"]}},"function":"ordered","delivery":{"ordering":"entity","concurrency":4}}`)
		e.trigger("unordered", `{"source":{"changes":{"types":["free"]}},"function":"unordered","delivery":{"ordering":"none","concurrency":4}}`)
		var ms []changelog.Mutation
		for i := range 4 {
			for _, id := range []string{"j1", "j2", "j3"} {
				ms = append(ms, put("job", id, map[string]any{"i": i}))
			}
			ms = append(ms, put("free", "f1", map[string]any{"i": i}))
		}
		e.write(ms...)
		e.settle()
		spans := ordered.byEntity()
		if len(spans) != 3 {
			t.Fatalf("ordered ran for entities %v", spans)
		}
		for id, ss := range spans {
			if len(ss) != 4 {
				t.Fatalf("ordered ran %d times for %s, want 4", len(ss), id)
			}
			for i := 1; i < len(ss); i++ {
				if ss[i].seq <= ss[i-1].seq {
					t.Fatalf("%s: row %d ran after row %d", id, ss[i].seq, ss[i-1].seq)
				}
				if ss[i].start.Before(ss[i-1].end) {
					t.Fatalf("%s: rows %d and %d overlapped", id, ss[i-1].seq, ss[i].seq)
				}
			}
		}
		if ordered.maxEntity != 1 || ordered.maxAll < 2 || ordered.maxAll > 4 {
			t.Fatalf("ordered: %d in flight at most, %d per entity; want 2..4 and 1", ordered.maxAll, ordered.maxEntity)
		}
		if n := len(unordered.byEntity()["f1"]); n != 4 {
			t.Fatalf("unordered ran %d times, want 4", n)
		}
		if unordered.maxEntity < 2 || unordered.maxAll > 4 {
			t.Fatalf("unordered: %d in flight for one entity, %d in all; want >= 2 and <= 4", unordered.maxEntity, unordered.maxAll)
		}
		for _, name := range []string{"ordered", "unordered"} {
			for _, d := range e.deliveries(name) {
				if d.Status != store.DeliverySucceeded || d.Attempts != 1 {
					t.Fatalf("%s delivery %+v", name, d)
				}
			}
		}
	})
}

// With ordering entity, a delivery waiting to retry holds back the later
// deliveries of its entity, not those of other entities.
func TestOrderingWaitsBehindRetry(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		var mu sync.Mutex
		var runs []string
		// The first run of j1 fails; every other run succeeds.
		e.handler("once-failing", func(_ context.Context, in functions.Input) ([]changelog.Mutation, error) {
			mu.Lock()
			defer mu.Unlock()
			run := fmt.Sprintf("%s@%d", in.Row.EntityID, in.Row.Seq)
			failed := in.Row.EntityID == "j1" && !slices.ContainsFunc(runs, func(r string) bool { return strings.HasPrefix(r, "j1@") })
			runs = append(runs, run)
			if failed {
				return nil, errors.New("first attempt fails")
			}
			return nil, nil
		})
		e.trigger("jobs", `{"source":{"changes":{"types":["job"]}},"function":"once-failing",
			"delivery":{"ordering":"entity","concurrency":4,"backoff":{"initial":"150ms","max":"150ms"}}}`)
		last := e.write(
			put("job", "j1", map[string]any{"n": 1}),
			put("job", "j1", map[string]any{"n": 2}),
			put("job", "j2", map[string]any{"n": 1}),
		)
		e.settle()
		j1a, j1b, j2 := fmt.Sprintf("j1@%d", last-2), fmt.Sprintf("j1@%d", last-1), fmt.Sprintf("j2@%d", last)
		mu.Lock()
		defer mu.Unlock()
		var j1 []string
		for _, r := range runs {
			if strings.HasPrefix(r, "j1@") {
				j1 = append(j1, r)
			}
		}
		if !slices.Equal(j1, []string{j1a, j1a, j1b}) {
			t.Fatalf("j1 ran %v, want %v", j1, []string{j1a, j1a, j1b})
		}
		retry := slices.Index(runs, j1a) + 1 + slices.Index(runs[slices.Index(runs, j1a)+1:], j1a)
		if i := slices.Index(runs, j2); i < 0 || i > retry {
			t.Fatalf("j2 waited for j1's retry: %v", runs)
		}
		if d := e.delivery("jobs", last-2); d.Status != store.DeliverySucceeded || d.Attempts != 2 {
			t.Fatalf("retried delivery %+v", d)
		}
	})
}

// A function's actions and the delivery's completion commit together: when
// the second action is rejected, neither is written, and the delivery
// fails with the rejection as its last error.
func TestRejectedActionWritesNothing(t *testing.T) {
	cases := []struct {
		name    string
		actions func(t1Version int64) []changelog.Mutation
		want    []string // substrings of lastError
	}{{
		name: "ifVersion",
		actions: func(v int64) []changelog.Mutation {
			wrong := v + 100
			p := patch("task", "t1", map[string]any{"touched": true})
			p.IfVersion = &wrong
			return []changelog.Mutation{put("note", "n1", map[string]any{"title": "ok"}), p}
		},
		want: []string{"action rejected", "conflict", "task/t1"},
	}, {
		name: "typedef",
		actions: func(int64) []changelog.Mutation {
			return []changelog.Mutation{
				patch("task", "t1", map[string]any{"touched": true}),
				put("note", "n1", map[string]any{"title": 5}),
			}
		},
		want: []string{"action rejected", "title"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bothDrivers(t, func(t *testing.T, open opener) {
				e := newEnv(t, open(t), engine.Options{})
				if _, err := e.log.PutType(t.Context(), space, "note", []byte(`{"properties":{"title":{"kind":"string"}},"strict":true}`)); err != nil {
					t.Fatal(err)
				}
				t1 := e.write(put("task", "t1", map[string]any{"title": "x"}))
				e.handler("two", func(context.Context, functions.Input) ([]changelog.Mutation, error) {
					return tc.actions(t1), nil
				}, "note", "task")
				e.trigger("two", `{"source":{"changes":{"types":["order"]}},"function":"two",
					"delivery":{"maxAttempts":2,"backoff":{"initial":"10ms","max":"20ms"}}}`)
				row := e.write(put("order", "o1", map[string]any{"n": 1}))
				if head := e.settle(); head != row {
					t.Fatalf("the log grew: %+v", e.commits(row))
				}
				if _, err := e.log.Get(t.Context(), space, store.EntityKey{Type: "note", ID: "n1"}); err == nil {
					t.Fatal("note n1 was written")
				}
				if v := must(e.log.Get(t.Context(), space, store.EntityKey{Type: "task", ID: "t1"})).Version; v != t1 {
					t.Fatalf("task t1 at version %d, want %d", v, t1)
				}
				d := e.delivery("two", row)
				if d.Status != store.DeliveryFailed || d.Attempts != 2 {
					t.Fatalf("delivery %+v, want failed after 2 attempts", d)
				}
				for _, w := range tc.want {
					if !strings.Contains(d.LastError, w) {
						t.Errorf("lastError %q does not mention %q", d.LastError, w)
					}
				}
				if strings.Contains(d.LastError, "rolled back") {
					t.Errorf("lastError %q names the rollback, not the rejected action", d.LastError)
				}
			})
		})
	}
}

// A failing function is retried with backoff up to maxAttempts, then
// fails; Retry runs it again with a fresh budget. Discard gives up a
// failed delivery; an action on a delivery in the wrong status is a
// conflict, on an unknown one not_found.
func TestRetriesThenFailed(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		var failing atomic.Bool
		var calls atomic.Int32
		failing.Store(true)
		e.handler("flaky", func(context.Context, functions.Input) ([]changelog.Mutation, error) {
			calls.Add(1)
			if failing.Load() {
				return nil, errors.New("the flaky backend is down")
			}
			return nil, nil
		})
		e.function("broken", `{"kind":"expr","writes":["task"],"code":"patch(\"task\", entity.id, {\"n\": int(entity.properties.title)})"}`)
		backoff := `"delivery":{"maxAttempts":3,"backoff":{"initial":"10ms","max":"20ms"}}`
		e.trigger("flaky", `{"source":{"changes":{"types":["job"]}},"function":"flaky",`+backoff+`}`)
		e.trigger("broken", `{"source":{"changes":{"types":["task"]}},"function":"broken",`+backoff+`}`)
		job := e.write(put("job", "j1", map[string]any{"n": 1}))
		task := e.write(put("task", "t1", map[string]any{"title": "abc"}))
		if head := e.settle(); head != task {
			t.Fatalf("the log grew: %+v", e.commits(task))
		}
		fd := e.delivery("flaky", job)
		if fd.Status != store.DeliveryFailed || fd.Attempts != 3 || !strings.Contains(fd.LastError, "the flaky backend is down") {
			t.Fatalf("flaky delivery %+v", fd)
		}
		if n := calls.Load(); n != 3 {
			t.Fatalf("flaky ran %d times, want 3", n)
		}
		bd := e.delivery("broken", task)
		if bd.Status != store.DeliveryFailed || bd.Attempts != 3 || bd.LastError == "" {
			t.Fatalf("broken delivery %+v", bd)
		}
		if s := e.stances(job)["flaky"]; s.Delivery == nil || s.Delivery.Status != store.DeliveryFailed || s.Delivery.Attempts != 3 {
			t.Fatalf("stance of the failed delivery: %+v", s)
		}

		failing.Store(false)
		retried, err := e.eng.Retry(t.Context(), space, fd.ID)
		if err != nil {
			t.Fatal(err)
		}
		if retried.Status != store.DeliveryPending || retried.Attempts != 0 {
			t.Fatalf("retried delivery %+v", retried)
		}
		e.settle()
		if d := e.delivery("flaky", job); d.Status != store.DeliverySucceeded || d.Attempts != 1 {
			t.Fatalf("flaky delivery after retry %+v", d)
		}
		if n := calls.Load(); n != 4 {
			t.Fatalf("flaky ran %d times, want 4", n)
		}

		discarded, err := e.eng.Discard(t.Context(), space, bd.ID)
		if err != nil {
			t.Fatal(err)
		}
		if discarded.Status != store.DeliveryDiscarded {
			t.Fatalf("discarded delivery %+v", discarded)
		}
		if d := e.delivery("broken", task); d.Status != store.DeliveryDiscarded {
			t.Fatalf("broken delivery after discard %+v", d)
		}
		wrong := []struct {
			name string
			op   func(context.Context, string, string) (engine.DeliveryInfo, error)
			id   string
		}{
			{"retry a succeeded delivery", e.eng.Retry, fd.ID},
			{"release a succeeded delivery", e.eng.Release, fd.ID},
			{"discard a succeeded delivery", e.eng.Discard, fd.ID},
			{"retry a discarded delivery", e.eng.Retry, bd.ID},
			{"discard a discarded delivery", e.eng.Discard, bd.ID},
		}
		for _, w := range wrong {
			_, err := w.op(t.Context(), space, w.id)
			if problemCode(err) != problem.Conflict || problem.Status(problemCode(err)) != 409 {
				t.Fatalf("%s: %v, want conflict", w.name, err)
			}
		}
		if _, err := e.eng.Retry(t.Context(), space, "dlv_nosuchdelivery"); problemCode(err) != problem.NotFound {
			t.Fatalf("retry of an unknown delivery: %v", err)
		}
		if d := e.delivery("flaky", job); d.Status != store.DeliverySucceeded {
			t.Fatalf("a refused action changed the delivery: %+v", d)
		}
	})
}

// A fence on a row returns done only once the row's delivery succeeded;
// at its timeout it names the triggers still waiting; an unknown trigger
// is not_found.
func TestFence(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		gate := make(chan struct{})
		e.handler("slow", func(ctx context.Context, _ functions.Input) ([]changelog.Mutation, error) {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			select {
			case <-time.After(300 * time.Millisecond):
			case <-ctx.Done():
			}
			return nil, ctx.Err()
		})
		e.noop()
		e.trigger("slow", `{"source":{"changes":{"types":["task"]}},"function":"slow"}`)
		e.trigger("fast", `{"source":{"changes":{"types":["task"]}},"function":"noop"}`)
		row := e.write(put("task", "t1", map[string]any{"n": 1}))
		e.fence(row, "fast")

		res, err := e.eng.Fence(t.Context(), space, row, nil, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if res.Done || res.Seq != row || !slices.Equal(res.Waiting, []string{"slow"}) {
			t.Fatalf("fence with a 100ms timeout: %+v, want waiting [slow]", res)
		}
		close(gate)
		began := time.Now()
		res, err = e.eng.Fence(t.Context(), space, row, []string{"slow"}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Done || len(res.Waiting) != 0 {
			t.Fatalf("fence: %+v", res)
		}
		if took := time.Since(began); took < 250*time.Millisecond {
			t.Fatalf("fence returned after %v, before the 300ms delivery ended", took)
		}
		if d := e.delivery("slow", row); d.Status != store.DeliverySucceeded {
			t.Fatalf("fence returned done with the delivery %+v", d)
		}
		if _, err := e.eng.Fence(t.Context(), space, row, []string{"slow", "nope"}, time.Second); problemCode(err) != problem.NotFound {
			t.Fatalf("fence on an unknown trigger: %v, want not_found", err)
		}
	})
}
