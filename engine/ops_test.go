package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// deliveredRows returns the rows a trigger has deliveries for, sorted.
func (e *env) deliveredRows(trigger string) []int64 {
	e.t.Helper()
	var out []int64
	for _, d := range e.deliveries(trigger) {
		out = append(out, d.Seq)
	}
	slices.Sort(out)
	return out
}

// Replaying a trigger from before a row runs its deliveries again; the
// identical writes are no-ops, so the log gains no rows and the entity
// keeps its version.
func TestReplayIsIdempotent(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.function("mark", `{"kind":"expr","writes":["task"],"code":"patch(\"task\", entity.id, {\"seen\": true})"}`)
		e.write(put("note", "n1", map[string]any{"n": 1}))
		e.trigger("mark", `{"source":{"changes":{"types":["task"]}},"function":"mark"}`)
		row := e.write(put("task", "t1", map[string]any{"title": "x"}))
		head := e.settle()
		if head != row+1 {
			t.Fatalf("head %d, want %d (one mark row)", head, row+1)
		}
		version := must(e.log.Get(t.Context(), space, store.EntityKey{Type: "task", ID: "t1"})).Version
		first := e.delivery("mark", row)

		st, err := e.eng.Replay(t.Context(), space, "mark", row-1)
		if err != nil {
			t.Fatal(err)
		}
		// The engine may have judged the replayed rows again before the
		// status was read.
		if st.Cursor < row-1 || st.Cursor > head {
			t.Fatalf("cursor after replay %d, want %d..%d", st.Cursor, row-1, head)
		}
		e.eventually("the replayed delivery", func() bool { return len(e.deliveries("mark")) == 2 })
		if got := e.settle(); got != head {
			t.Fatalf("replay wrote rows: %+v", e.commits(head))
		}
		for _, d := range e.deliveries("mark") {
			if d.Seq != row || d.Status != store.DeliverySucceeded || d.Attempts != 1 {
				t.Fatalf("delivery after replay %+v", d)
			}
		}
		if v := must(e.log.Get(t.Context(), space, store.EntityKey{Type: "task", ID: "t1"})).Version; v != version {
			t.Fatalf("task t1 at version %d after replay, want %d", v, version)
		}
		s := e.stances(row)["mark"]
		if s.Stance != triggers.StanceMatched || s.Delivery == nil || s.Delivery.ID == first.ID || s.Delivery.Status != store.DeliverySucceeded {
			t.Fatalf("stance after replay %+v (first delivery %s)", s, first.ID)
		}
		if s := e.stances(row + 1)["mark"]; s.Stance != triggers.StanceEcho {
			t.Fatalf("stance on its own row after replay %+v", s)
		}
		if st := e.status("mark"); st.Cursor != head || st.Lag != 0 {
			t.Fatalf("status after replay %+v", st)
		}

		if _, err := e.eng.Replay(t.Context(), space, "mark", head+1); problemCode(err) != problem.BadRequest {
			t.Fatalf("replay from above the head: %v, want bad_request", err)
		}
		if _, err := e.log.Prune(t.Context(), space, row-1); err != nil {
			t.Fatal(err)
		}
		if _, err := e.eng.Replay(t.Context(), space, "mark", row-2); problemCode(err) != problem.Compacted {
			t.Fatalf("replay from below the horizon: %v, want compacted", err)
		}
		if _, err := e.eng.Replay(t.Context(), space, "nope", row); problemCode(err) != problem.NotFound {
			t.Fatalf("replay of an unknown trigger: %v, want not_found", err)
		}
	})
}

// A disabled trigger's cursor stands still; enabled again it catches up
// on the rows written meanwhile, or, enabled with skip, gives them stance
// disabled and no deliveries.
func TestDisableAndEnable(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.noop()
		e.trigger("watch", `{"source":{"changes":{"types":["task"]}},"function":"noop"}`)
		r1 := e.write(put("task", "t1", map[string]any{"n": 1}))
		e.settle()

		st, err := e.eng.Disable(t.Context(), space, "watch")
		if err != nil {
			t.Fatal(err)
		}
		if st.Enabled || st.Cursor != r1 {
			t.Fatalf("status after disable %+v", st)
		}
		r2 := e.write(put("task", "t2", map[string]any{"n": 1}))
		r3 := e.write(put("task", "t3", map[string]any{"n": 1}))
		time.Sleep(200 * time.Millisecond) // several polls of the engine
		if st := e.status("watch"); st.Enabled || st.Cursor != r1 || st.Lag != r3-r1 {
			t.Fatalf("a disabled trigger moved: %+v", st)
		}
		if got := e.deliveredRows("watch"); !slices.Equal(got, []int64{r1}) {
			t.Fatalf("deliveries of a disabled trigger for rows %v", got)
		}
		expectStances(e, "watch", map[int64]string{r1: "matched", r2: "pending", r3: "pending"})

		if st, err = e.eng.Enable(t.Context(), space, "watch", false); err != nil {
			t.Fatal(err)
		}
		if !st.Enabled {
			t.Fatalf("status after enable %+v", st)
		}
		e.settle()
		expectStances(e, "watch", map[int64]string{r1: "matched", r2: "matched", r3: "matched"})

		if _, err := e.eng.Disable(t.Context(), space, "watch"); err != nil {
			t.Fatal(err)
		}
		r4 := e.write(put("task", "t4", map[string]any{"n": 1}))
		r5 := e.write(put("task", "t5", map[string]any{"n": 1}))
		if st, err = e.eng.Enable(t.Context(), space, "watch", true); err != nil {
			t.Fatal(err)
		}
		if !st.Enabled || st.Cursor != r5 || !slices.Equal(st.Skipped, []store.SeqRange{{Lo: r4, Hi: r5}}) {
			t.Fatalf("status after enable with skip %+v", st)
		}
		r6 := e.write(put("task", "t6", map[string]any{"n": 1}))
		e.settle()
		expectStances(e, "watch", map[int64]string{
			r1: "matched", r2: "matched", r3: "matched", r4: "disabled", r5: "disabled", r6: "matched",
		})
	})
}

// Reset moves a trigger's cursor to its start (the current head for
// start head) and discards its open deliveries: a delivery under way when
// it happened writes nothing.
func TestReset(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		started := make(chan int64, 10)
		release := make(chan struct{})
		e.handler("block", func(ctx context.Context, in functions.Input) ([]changelog.Mutation, error) {
			started <- in.Row.Seq
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return []changelog.Mutation{put("note", "after-"+in.Row.EntityID, map[string]any{"seq": in.Row.Seq})}, nil
		}, "note")
		e.trigger("block", `{"source":{"changes":{"types":["task"]}},"function":"block"}`)
		r1 := e.write(put("task", "t1", map[string]any{"n": 1}))
		select {
		case seq := <-started:
			if seq != r1 {
				t.Fatalf("handler started for row %d, want %d", seq, r1)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the handler did not start")
		}
		r2 := e.write(patch("task", "t1", map[string]any{"n": 2}))
		e.eventually("the second delivery", func() bool { return len(e.deliveries("block")) == 2 })
		head := e.head()

		st, err := e.eng.Reset(t.Context(), space, "block")
		if err != nil {
			t.Fatal(err)
		}
		if st.Cursor != head || st.Start != head || st.Lag != 0 {
			t.Fatalf("status after reset %+v, want cursor and start %d", st, head)
		}
		if n := st.Deliveries[store.DeliveryPending] + st.Deliveries[store.DeliveryRetrying] + st.Deliveries[store.DeliveryRunning]; n != 0 {
			t.Fatalf("open deliveries after reset: %v", st.Deliveries)
		}
		close(release)
		time.Sleep(200 * time.Millisecond) // the released handler returns and its completion is refused
		if got := e.head(); got != head {
			t.Fatalf("a discarded delivery wrote: %+v", e.commits(head))
		}
		for _, seq := range []int64{r1, r2} {
			if d := e.delivery("block", seq); d.Status != store.DeliveryDiscarded {
				t.Fatalf("delivery of row %d after reset %+v", seq, d)
			}
			if s := e.stances(seq)["block"]; s.Delivery == nil || s.Delivery.Status != store.DeliveryDiscarded {
				t.Fatalf("stance on row %d after reset %+v", seq, s)
			}
		}

		r3 := e.write(put("task", "t3", map[string]any{"n": 1}))
		e.settle()
		if d := e.delivery("block", r3); d.Status != store.DeliverySucceeded {
			t.Fatalf("delivery after reset %+v", d)
		}
		if n := e.get("note", "after-t3")["seq"]; n != float64(r3) {
			t.Fatalf("note after-t3 has seq %v, want %d", n, r3)
		}
		if _, err := e.log.Get(t.Context(), space, store.EntityKey{Type: "note", ID: "after-t1"}); err == nil {
			t.Fatal("the discarded delivery's note was written")
		}
	})
}

// Disable takes effect before it returns: rows written right after it are
// not evaluated, also when the lease round has many spaces to go through
// (here 100 spaces sorting before the trigger's).
func TestDisableTakesEffectAtOnce(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		for i := range 100 {
			if _, err := e.log.EnsureSpace(t.Context(), fmt.Sprintf("a%03d", i)); err != nil {
				t.Fatal(err)
			}
		}
		e.noop()
		e.trigger("watch", `{"source":{"changes":{"types":["task"]}},"function":"noop"}`)
		r1 := e.write(put("task", "t1", map[string]any{"n": 1}))
		e.settle()
		for i := range 3 {
			if _, err := e.eng.Disable(t.Context(), space, "watch"); err != nil {
				t.Fatal(err)
			}
			row := e.write(put("task", "t2", map[string]any{"n": i}))
			time.Sleep(100 * time.Millisecond) // several polls of the engine
			if st := e.status("watch"); st.Cursor != r1 {
				t.Fatalf("round %d: row %d was evaluated after Disable returned: %+v", i, row, st)
			}
			if _, err := e.eng.Enable(t.Context(), space, "watch", true); err != nil {
				t.Fatal(err)
			}
			r1 = e.head()
		}
	})
}

// Replay and reset answer the status right after the move, however fast
// the engine catches up afterwards.
func TestMoveAnswersItsOwnStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t, openSQLite(t), testOptions())
	e.noop()
	e.trigger("t", `{"source":{"changes":{"types":["task"]}},"function":"noop"}`)
	for i := range 5 {
		e.write(put("task", fmt.Sprint("t", i), map[string]any{}))
	}
	head := e.settle()
	for range 20 {
		st, err := e.eng.Replay(t.Context(), space, "t", 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.Cursor != 0 || st.Lag != head {
			t.Fatalf("replay answered cursor %d, lag %d; want 0, %d", st.Cursor, st.Lag, head)
		}
		e.settle()
	}
	if st, err := e.eng.Reset(t.Context(), space, "t"); err != nil || st.Cursor != head {
		t.Fatalf("reset answered %+v, %v", st, err)
	}
}
