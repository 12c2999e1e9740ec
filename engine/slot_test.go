package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/storetest"
)

// heldUpdates is a store whose delivery updates in transactions of their
// own (DeliveryUpdateMany, the outcomes that write nothing) wait, once
// held, until released; entered receives one signal per update batch
// that starts waiting. Embedding the store.Store interface hides SQLite's
// store.SingleWriter, so on SQLite too the outcomes take this path
// instead of riding write groups.
type heldUpdates struct {
	store.Store
	mu      sync.Mutex
	gate    chan struct{} // nil: not held
	entered chan struct{}
}

func (h *heldUpdates) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gate = make(chan struct{})
}

// release lets the held updates go on, if any are held.
func (h *heldUpdates) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gate != nil {
		close(h.gate)
		h.gate = nil
	}
}

func (h *heldUpdates) DeliveryUpdateMany(ctx context.Context, us []store.DeliveryUpdate) ([]error, error) {
	h.mu.Lock()
	gate := h.gate
	h.mu.Unlock()
	if gate != nil {
		h.entered <- struct{}{}
		<-gate
	}
	return h.Store.DeliveryUpdateMany(ctx, us)
}

// slotEnv is a process whose trigger "t" (ordering and concurrency as
// given) on items calls a handler that reports each call's entity id on
// calls and returns what actions gives it (after a receive from proceed,
// when set).
type slotEnv struct {
	*env
	st    *heldUpdates
	calls chan string
	// proceed, when set before the first call, is received from by every
	// call before it returns.
	proceed chan struct{}
}

func newSlotEnv(t *testing.T, open opener, delivery string, actions func(id string) []changelog.Mutation) *slotEnv {
	t.Helper()
	st := &heldUpdates{Store: open(t), entered: make(chan struct{}, 16)}
	s := &slotEnv{env: newEnv(t, st, testOptions()), st: st, calls: make(chan string, 16)}
	t.Cleanup(st.release) // before the engine stops: a failed test leaves nothing held
	s.handler("record", func(_ context.Context, in functions.Input) ([]changelog.Mutation, error) {
		s.calls <- in.Row.EntityID
		if s.proceed != nil {
			<-s.proceed
		}
		return actions(in.Row.EntityID), nil
	}, "log")
	s.trigger("t", fmt.Sprintf(`{"source":{"changes":{"types":["item"]}},"function":"record","delivery":%s}`, delivery))
	return s
}

// call waits for the next call of the handler.
func (s *slotEnv) call() string {
	s.t.Helper()
	select {
	case id := <-s.calls:
		return id
	case <-time.After(10 * time.Second):
		s.t.Fatal("no call of the handler within 10s")
		return ""
	}
}

// noCallFor fails the test if the handler is called within d.
func (s *slotEnv) noCallFor(d time.Duration, why string) {
	s.t.Helper()
	select {
	case id := <-s.calls:
		s.t.Fatalf("the handler ran for %s: %s", id, why)
	case <-time.After(d):
	}
}

// TestSlotFreedWhileOutcomeRecorded: with concurrency 1, a delivery's
// function that returned no actions frees the slot while its outcome is
// still being recorded, so the next delivery's function runs meanwhile;
// both deliveries then end succeeded.
func TestSlotFreedWhileOutcomeRecorded(t *testing.T) {
	t.Parallel()
	bothDrivers(t, func(t *testing.T, open opener) {
		s := newSlotEnv(t, open, `{"ordering":"none","concurrency":1}`, func(string) []changelog.Mutation { return nil })
		s.st.hold()
		last := s.write(put("item", "a", map[string]any{"n": 1}), put("item", "b", map[string]any{"n": 2}))
		first := s.call()
		<-s.st.entered // the first outcome is being recorded, and held
		if second := s.call(); second == first {
			t.Fatalf("the handler ran for %s twice", first)
		}
		s.st.release()
		for _, seq := range []int64{last - 1, last} {
			s.eventually(fmt.Sprintf("the delivery of %d succeeded", seq), func() bool {
				return s.delivery("t", seq).Status == store.DeliverySucceeded
			})
		}
	})
}

// TestEntityWaitsForRecordedOutcome: with ordering "entity", a later
// delivery of the same entity does not start while the outcome of the
// one before is still being recorded, however many slots are free.
func TestEntityWaitsForRecordedOutcome(t *testing.T) {
	t.Parallel()
	bothDrivers(t, func(t *testing.T, open opener) {
		s := newSlotEnv(t, open, `{"ordering":"entity","concurrency":4}`, func(string) []changelog.Mutation { return nil })
		s.st.hold()
		s.write(put("item", "a", map[string]any{"n": 1}))
		last := s.write(patch("item", "a", map[string]any{"n": 2}))
		s.call()
		<-s.st.entered
		s.noCallFor(300*time.Millisecond, "the outcome of its entity's earlier delivery is not recorded yet")
		s.st.release()
		s.call()
		s.eventually("the later delivery succeeded", func() bool {
			return s.delivery("t", last).Status == store.DeliverySucceeded
		})
	})
}

// TestActionsKeepTheSlot: with concurrency 1, a function that returned
// actions keeps the slot until they and its outcome are committed: while
// that write waits behind a held write group, the next delivery's
// function does not run.
func TestActionsKeepTheSlot(t *testing.T) {
	t.Parallel()
	bothDrivers(t, func(t *testing.T, open opener) {
		s := newSlotEnv(t, open, `{"ordering":"none","concurrency":1}`, func(id string) []changelog.Mutation {
			return []changelog.Mutation{put("log", id, map[string]any{"seen": true})}
		})
		s.proceed = make(chan struct{})
		last := s.write(put("item", "a", map[string]any{"n": 1}), put("item", "b", map[string]any{"n": 2}))
		first := s.call()
		release, wait := storetest.HoldGroup(t, s.log, space, put("note", "n", map[string]any{"n": 1}))
		s.proceed <- struct{}{} // the first function returns its actions, which wait for the group
		s.noCallFor(300*time.Millisecond, "the actions of the delivery before are not committed yet")
		release()
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if second := s.call(); second == first {
			t.Fatalf("the handler ran for %s twice", first)
		}
		s.proceed <- struct{}{}
		for _, seq := range []int64{last - 1, last} {
			s.eventually(fmt.Sprintf("the delivery of %d succeeded", seq), func() bool {
				return s.delivery("t", seq).Status == store.DeliverySucceeded
			})
		}
		if s.get("log", "a") == nil || s.get("log", "b") == nil {
			t.Fatal("the deliveries' actions are missing")
		}
	})
}
