package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// Two processes share one PostgreSQL database: a cron trigger fires once
// per slot, also across a hand-over when the lease holder stops, and
// with catchUp "all" no slot is lost.
func TestCronOncePerSlotAcrossProcesses(t *testing.T) {
	open := openPostgres(pgtest.NewDatabase(t))
	a := newEnv(t, open(t), engine.Options{Owner: "a", LeaseTTL: time.Second, Poll: 20 * time.Millisecond})
	b := newEnv(t, open(t), engine.Options{Owner: "b", LeaseTTL: time.Second, Poll: 20 * time.Millisecond})
	a.function("tick", `{"kind":"expr","code":"nil"}`)
	a.trigger("tick", `{"source":{"cron":{"schedule":"@every 1s","catchUp":"all"}},"function":"tick"}`)
	time.Sleep(2500 * time.Millisecond) // real time: a few slots of the @every 1s schedule pass
	st, err := a.eng.Status(t.Context(), space, "tick")
	if err != nil {
		t.Fatal(err)
	}
	first := a
	if st.Owner == "b" {
		first = b
	}
	_ = first.eng.Stop(context.Background()) // hands the lease over at once
	time.Sleep(2500 * time.Millisecond)      // real time: a few slots of the @every 1s schedule pass
	slots := map[string]int{}
	var times []time.Time
	fired := map[int64]bool{} // the fire rows counted here, by seq
	for _, c := range b.commits(0) {
		if c.Op != "fire" {
			continue
		}
		fired[c.Seq] = true
		var p struct {
			ScheduledAt time.Time `json:"scheduledAt"`
		}
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			t.Fatal(err)
		}
		slots[p.ScheduledAt.String()]++
		times = append(times, p.ScheduledAt)
		if c.Actor != "engine" || c.Type != "eddy.trigger" || c.EntityID != "tick" {
			t.Fatalf("fire row %+v", c.Row)
		}
	}
	if len(times) < 4 {
		t.Fatalf("%d firings in 5s of a 1s schedule", len(times))
	}
	for s, n := range slots {
		if n != 1 {
			t.Fatalf("slot %s fired %d times", s, n)
		}
	}
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d != time.Second {
			t.Fatalf("slots %v and %v: a slot was skipped or reordered", times[i-1], times[i])
		}
	}
	// The schedule keeps firing while this reads: deliveries of rows
	// fired after the commits above were read are not counted.
	perRow := func() map[int64]int {
		n := map[int64]int{}
		for _, d := range b.deliveries("tick") {
			if fired[d.Seq] {
				n[d.Seq]++
			}
		}
		return n
	}
	b.eventually("a delivery for every firing", func() bool { return len(perRow()) == len(fired) })
	for seq, n := range perRow() {
		if n != 1 {
			t.Fatalf("fire row %d has %d deliveries", seq, n)
		}
	}
}

// A process that lost its lease writes nothing more for the trigger: its
// next advance is fenced; the new holder carries on.
func TestLeaseLossFencesTheStaleOwner(t *testing.T) {
	open := openPostgres(pgtest.NewDatabase(t))
	a := newEnv(t, open(t), engine.Options{Owner: "a", LeaseTTL: 2 * time.Second, Poll: 20 * time.Millisecond})
	a.function("noop", `{"kind":"expr","code":"nil"}`)
	a.trigger("watch", `{"source":{"changes":{"types":["task"]}},"function":"noop"}`)
	// Saving the trigger starts a lease round; wait until it took it.
	a.eventually("a holds the lease", func() bool { return a.status("watch").Owner == "a" })
	before := a.status("watch")
	// An intruder takes the lease as if a's had expired, and holds it for
	// a while without evaluating anything.
	ts := a.st.(store.TriggerStore)
	stolen, ok, err := ts.LeaseAcquire(t.Context(), store.LeaseParams{Space: space, Trigger: "watch", Owner: "intruder",
		Now: time.Now().Add(time.Hour), TTL: time.Hour})
	if err != nil || !ok || stolen.Epoch != before.Epoch+1 {
		t.Fatalf("steal: ok %v epoch %d (%v)", ok, stolen.Epoch, err)
	}
	seq := a.write(put("task", "t1", map[string]any{"title": "x"}))
	time.Sleep(500 * time.Millisecond) // an interval in which the stale owner must not advance
	now := must(a.eng.Status(t.Context(), space, "watch"))
	if now.Cursor >= seq || now.Owner != "intruder" {
		t.Fatalf("the stale owner advanced: cursor %d owner %s", now.Cursor, now.Owner)
	}
	if ds := a.deliveries("watch"); len(ds) != 0 {
		t.Fatalf("the stale owner created deliveries: %+v", ds)
	}
	// The intruder gives the lease up; a takes it back and catches up.
	if err := ts.LeaseRelease(t.Context(), space, "watch", "intruder", stolen.Epoch); err != nil {
		t.Fatal(err)
	}
	a.eng.Notify("", -1)
	a.eventually("a takes the lease back", func() bool {
		st := must(a.eng.Status(t.Context(), space, "watch"))
		return st.Cursor >= seq && st.Owner == "a" && st.Epoch > stolen.Epoch
	})
	a.settle()
	if ds := a.deliveries("watch"); len(ds) != 1 || ds[0].Status != store.DeliverySucceeded {
		t.Fatalf("deliveries after the hand-back: %+v", ds)
	}
}

// A commit of another process wakes this process's engine through its
// changelog subscription (PostgreSQL NOTIFY), not its poll or its lease
// rounds: with both an hour long, the delivery still follows another
// process's write.
func TestOtherProcessCommitWakesEngine(t *testing.T) {
	t.Parallel()
	open := openPostgres(pgtest.NewDatabase(t))
	b := newEnv(t, open(t), engine.Options{Owner: "b", LeaseTTL: time.Hour, Poll: time.Hour})
	b.noop()
	b.trigger("on-task", `{"source":{"changes":{"types":["task"]}},"function":"noop"}`)
	b.eventually("b holds the trigger", func() bool { return b.status("on-task").Owner == "b" })

	// Another process: its own store connection and changelog, no engine.
	other := changelog.New(open(t), changelog.Options{})
	t.Cleanup(func() { _ = other.Close() })
	res, err := other.Write(t.Context(), changelog.WriteRequest{Space: space,
		Mutations: []changelog.Mutation{put("task", "t1", map[string]any{"n": 1})}, Provenance: store.Provenance{Actor: "owner", Via: "api"}})
	if err != nil {
		t.Fatal(err)
	}
	b.eventually("b delivers the other process's row", func() bool {
		ds := b.deliveries("on-task", store.DeliverySucceeded)
		return len(ds) == 1 && ds[0].Seq == res.LastSeq
	})
}
