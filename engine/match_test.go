package engine_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// expectStances checks trigger's stance on every row of want and that,
// among those rows, the trigger has a delivery for exactly the ones want
// says matched, each succeeded and shown by its stance.
func expectStances(e *env, trigger string, want map[int64]string) {
	e.t.Helper()
	byID := map[string]engine.DeliveryInfo{}
	var delivered []int64
	for _, d := range e.deliveries(trigger) {
		byID[d.ID] = d
		if _, ok := want[d.Seq]; ok {
			delivered = append(delivered, d.Seq)
		}
	}
	var matched []int64
	for seq, stance := range want {
		got := e.stances(seq)[trigger]
		if got.Stance.String() != stance {
			e.t.Errorf("%s on row %d: stance %q (%+v), want %q", trigger, seq, got.Stance, got, stance)
			continue
		}
		if stance != "matched" {
			if got.Delivery != nil {
				e.t.Errorf("%s on row %d: %s with a delivery %+v", trigger, seq, stance, got.Delivery)
			}
			continue
		}
		matched = append(matched, seq)
		if got.Delivery == nil {
			e.t.Errorf("%s on row %d: matched without a delivery", trigger, seq)
			continue
		}
		d, ok := byID[got.Delivery.ID]
		switch {
		case !ok:
			e.t.Errorf("%s on row %d: matched with delivery %s, which is not listed", trigger, seq, got.Delivery.ID)
		case d.Seq != seq || d.Status != store.DeliverySucceeded || d.Status != got.Delivery.Status || d.Attempts != got.Delivery.Attempts:
			e.t.Errorf("%s on row %d: delivery %+v, stance shows %+v", trigger, seq, d, got.Delivery)
		}
	}
	slices.Sort(matched)
	slices.Sort(delivered)
	if !slices.Equal(matched, delivered) {
		e.t.Errorf("%s: deliveries for rows %v, want %v", trigger, delivered, matched)
	}
}

// The prefilters types, ops, actors and excludeActors decide which rows
// a trigger matches.
func TestPrefilters(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.noop()
		e.trigger("by-type", `{"source":{"changes":{"types":["task"]}},"function":"noop"}`)
		e.trigger("by-op", `{"source":{"changes":{"ops":["patch"]}},"function":"noop"}`)
		e.trigger("by-actor", `{"source":{"changes":{"actors":["alice"]}},"function":"noop"}`)
		e.trigger("not-alice", `{"source":{"changes":{"excludeActors":["alice"]}},"function":"noop"}`)
		taskPut := e.write(put("task", "t1", map[string]any{"title": "x"}))
		notePut := e.write(put("note", "n1", map[string]any{"title": "x"}))
		alicePatch := e.writeAs("alice", patch("task", "t1", map[string]any{"title": "y"}))
		e.settle()
		expectStances(e, "by-type", map[int64]string{taskPut: "matched", notePut: "not_matched", alicePatch: "matched"})
		expectStances(e, "by-op", map[int64]string{taskPut: "not_matched", notePut: "not_matched", alicePatch: "matched"})
		expectStances(e, "by-actor", map[int64]string{taskPut: "not_matched", notePut: "not_matched", alicePatch: "matched"})
		expectStances(e, "not-alice", map[int64]string{taskPut: "matched", notePut: "matched", alicePatch: "not_matched"})
	})
}

// `when` decides after the prefilters: true matches, false and a missing
// key do not, and a runtime error is recorded as stance error with its
// text and creates no delivery.
func TestWhen(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.noop()
		e.trigger("done", `{"source":{"changes":{"types":["task"],"when":"entity.properties.status == 'done'"}},"function":"noop"}`)
		e.trigger("numeric", `{"source":{"changes":{"types":["task"],"when":"int(entity.properties.title) > 0"}},"function":"noop"}`)
		both := e.write(put("task", "t1", map[string]any{"status": "done", "title": "5"}))
		opened := e.write(put("task", "t2", map[string]any{"status": "open", "title": "abc"}))
		missing := e.write(put("task", "t3", map[string]any{"title": "7"}))
		e.settle()
		expectStances(e, "done", map[int64]string{both: "matched", opened: "not_matched", missing: "not_matched"})
		expectStances(e, "numeric", map[int64]string{both: "matched", opened: "error", missing: "matched"})
		if msg := e.stances(opened)["numeric"].Error; !strings.Contains(msg, "conversion") || !strings.Contains(msg, "int") {
			t.Fatalf("error stance text %q does not name the failed conversion", msg)
		}
		if s := e.stances(opened)["done"]; s.Error != "" {
			t.Fatalf("not_matched stance carries an error: %+v", s)
		}
	})
}

// Engine rows (a cron trigger's fire rows) are matched only by a trigger
// that names their op.
func TestEngineOpsMatchedOnlyWhenNamed(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.noop()
		e.trigger("on-fire", `{"source":{"changes":{"ops":["fire"]}},"function":"noop"}`)
		e.trigger("everything", `{"source":{"changes":{}},"function":"noop"}`)
		row := e.write(put("task", "t1", map[string]any{"title": "x"}))
		e.trigger("tick", `{"source":{"cron":{"schedule":"@every 1s"}},"function":"noop"}`)
		var fire int64
		e.eventually("a fire row", func() bool {
			for _, c := range e.commits(row) {
				if c.Op == "fire" {
					fire = c.Seq
					return true
				}
			}
			return false
		})
		e.fence(fire)
		expectStances(e, "on-fire", map[int64]string{row: "not_matched", fire: "matched"})
		expectStances(e, "everything", map[int64]string{row: "matched", fire: "not_matched"})
		if s := e.stances(fire)["tick"]; s.Stance != triggers.StanceMatched || s.Delivery == nil {
			t.Fatalf("the cron trigger's stance on its fire row: %+v", s)
		}
		if s := e.stances(row)["tick"]; s.Stance != triggers.StanceNotMatched {
			t.Fatalf("the cron trigger's stance on a change row: %+v", s)
		}
	})
}

// Stances below and above a trigger's start and cursor: not_started for
// rows <= start (start head and a numeric start), pending above the
// cursor of a disabled trigger, matched with its delivery otherwise.
func TestStancesStartAndPending(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.noop()
		r1 := e.write(put("task", "t1", map[string]any{"n": 1}))
		r2 := e.write(put("task", "t2", map[string]any{"n": 1}))
		e.trigger("from-head", `{"source":{"changes":{"types":["task"]}},"function":"noop","start":"head"}`)
		e.trigger("from-seq", `{"source":{"changes":{"types":["task"]}},"function":"noop","start":1}`)
		e.trigger("off", `{"source":{"changes":{"types":["task"]}},"function":"noop","enabled":false}`)
		if s := e.status("from-seq"); s.Start != r1 {
			t.Fatalf("from-seq starts at %d, want %d", s.Start, r1)
		}
		if s := e.status("from-head"); s.Start != r2 || s.Cursor < r2 {
			t.Fatalf("from-head: start %d cursor %d, want start %d", s.Start, s.Cursor, r2)
		}
		r3 := e.write(put("task", "t3", map[string]any{"n": 1}))
		e.settle()
		expectStances(e, "from-head", map[int64]string{r1: "not_started", r2: "not_started", r3: "matched"})
		expectStances(e, "from-seq", map[int64]string{r1: "not_started", r2: "matched", r3: "matched"})
		expectStances(e, "off", map[int64]string{r1: "not_started", r2: "not_started", r3: "pending"})
		if s := e.status("off"); s.Enabled || s.Cursor != r2 || s.Lag != r3-r2 {
			t.Fatalf("disabled trigger's status: %+v", s)
		}
	})
}

// Stances of a row above the head are not_found; of a pruned row,
// compacted.
func TestStancesNotFoundAndCompacted(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.noop()
		e.trigger("watch", `{"source":{"changes":{"types":["task"]}},"function":"noop"}`)
		r1 := e.write(put("task", "t1", map[string]any{"n": 1}))
		r2 := e.write(put("task", "t2", map[string]any{"n": 1}))
		r3 := e.write(put("task", "t3", map[string]any{"n": 1}))
		e.settle()
		for _, seq := range []int64{0, r3 + 1, r3 + 100} {
			if _, err := e.eng.Stances(t.Context(), space, seq); problemCode(err) != problem.NotFound {
				t.Fatalf("stances of row %d (head %d): %v, want not_found", seq, r3, err)
			}
		}
		if _, err := e.log.Prune(t.Context(), space, r2); err != nil {
			t.Fatal(err)
		}
		for _, seq := range []int64{r1, r2} {
			_, err := e.eng.Stances(t.Context(), space, seq)
			if problemCode(err) != problem.Compacted || problem.Status(problemCode(err)) != 410 {
				t.Fatalf("stances of pruned row %d: %v, want compacted", seq, err)
			}
		}
		expectStances(e, "watch", map[int64]string{r3: "matched"})
	})
}

// A trigger does not see the rows its own deliveries author (stance
// echo) unless it sets echo; then it does, and a function that is a no-op
// on its second pass ends the loop.
func TestEcho(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.function("mark-a", `{"kind":"expr","writes":["a"],"code":"patch(\"a\", entity.id, {\"seen\": true})"}`)
		e.function("mark-b", `{"kind":"expr","writes":["b"],"code":"patch(\"b\", entity.id, {\"seen\": true})"}`)
		e.trigger("quiet", `{"source":{"changes":{"types":["a"]}},"function":"mark-a"}`)
		e.trigger("loud", `{"source":{"changes":{"types":["b"]}},"function":"mark-b","echo":true}`)
		a := e.write(put("a", "x", map[string]any{"n": 1}))
		b := e.write(put("b", "x", map[string]any{"n": 1}))
		head := e.settle()
		// quiet's row may land before b: its delivery of a can run as
		// soon as a commits.
		var aOwn, bOwn int64
		for _, c := range e.commits(a) {
			switch c.Actor {
			case "trigger:quiet":
				aOwn = c.Seq
			case "trigger:loud":
				bOwn = c.Seq
			}
		}
		if aOwn == 0 || bOwn == 0 || head != a+3 {
			t.Fatalf("rows after %d: %+v (want b and one by each trigger)", a, e.commits(a))
		}
		expectStances(e, "quiet", map[int64]string{a: "matched", b: "not_matched", aOwn: "echo", bOwn: "not_matched"})
		expectStances(e, "loud", map[int64]string{a: "not_matched", b: "matched", aOwn: "not_matched", bOwn: "matched"})
		if d := e.delivery("loud", bOwn); d.Depth != 2 {
			t.Fatalf("delivery of loud's own row has depth %d, want 2", d.Depth)
		}
		if e.get("b", "x")["seen"] != true {
			t.Fatal("b/x not marked")
		}
		e.stillHead(head, 200*time.Millisecond)
	})
}

// With coalesce, the rows of one entity judged in one batch get one
// delivery, for the last row; the others are coalesced. Other entities
// and triggers without coalesce are unaffected.
func TestCoalesce(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.noop()
		e.trigger("every", `{"source":{"changes":{"types":["task"]}},"function":"noop"}`)
		e.trigger("latest", `{"source":{"changes":{"types":["task"]}},"function":"noop","coalesce":true,"enabled":false}`)
		last := e.write(
			put("task", "t1", map[string]any{"n": 1}),
			patch("task", "t1", map[string]any{"n": 2}),
			patch("task", "t1", map[string]any{"n": 3}),
			put("task", "t2", map[string]any{"n": 1}),
			patch("task", "t1", map[string]any{"n": 4}),
		)
		first := last - 4
		if _, err := e.eng.Enable(t.Context(), space, "latest", false); err != nil {
			t.Fatal(err)
		}
		e.settle()
		expectStances(e, "latest", map[int64]string{
			first: "coalesced", first + 1: "coalesced", first + 2: "coalesced", first + 3: "matched", last: "matched",
		})
		expectStances(e, "every", map[int64]string{
			first: "matched", first + 1: "matched", first + 2: "matched", first + 3: "matched", last: "matched",
		})
		if d := e.delivery("latest", last); d.Entity != (store.EntityKey{Type: "task", ID: "t1"}) {
			t.Fatalf("coalesced delivery is for %+v", d.Entity)
		}
	})
}
