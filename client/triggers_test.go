package client_test

import (
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/eddy-run/eddy/client"
)

// stamp is an expr function stamping completedAt on a task.
var stamp = client.Function{Kind: client.FunctionExpr, Writes: []string{"task"},
	Code: `patch("task", entity.id, {"completedAt": now})`}

// stampTrigger runs stamp when a task's status becomes done.
var stampTrigger = client.Trigger{
	Source: client.TriggerSource{Changes: &client.ChangeSource{
		Types: []string{"task"}, Ops: []string{"patch"},
		When: `entity != null && entity.properties.status == "done" && before.properties.status != "done"`,
	}},
	Function: "stamp",
}

func TestFunctionsAndTriggers(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		f, created, err := e.sp.PutFunction(c, "stamp", stamp)
		if err != nil || !created || f.Name != "stamp" || f.Kind != "expr" || f.Code != stamp.Code {
			t.Fatalf("put function = %+v %v %v", f, created, err)
		}
		if fs := must(e.sp.Functions(c)); len(fs) != 1 || fs[0].Name != "stamp" {
			t.Fatalf("functions = %+v", fs)
		}
		_, _, err = e.sp.PutFunction(c, "broken", client.Function{Kind: "expr", Code: "patch(("})
		if ce := wantCode(t, err, "bad_request"); ce.Details["field"] != "code" || ce.Details["position"] == nil {
			t.Fatalf("bad code = %+v", ce)
		}

		saved, created, err := e.sp.PutTrigger(c, "stamp-completed", stampTrigger)
		if err != nil || !created || saved.Name != "stamp-completed" || saved.Start != client.StartHead ||
			saved.Enabled == nil || !*saved.Enabled || saved.Warnings == nil || saved.Delivery == nil || saved.Delivery.Ordering != "entity" {
			t.Fatalf("put trigger = %+v %v %v", saved, created, err)
		}
		must(e.sp.Put(c, "task", "t1", map[string]any{"title": "x", "status": "open"}))
		done := must(e.sp.Patch(c, "task", "t1", map[string]any{"status": "done"}))
		fence := must(e.sp.Fence(c, done.Seq, client.FenceParams{Triggers: []string{"stamp-completed"}, Timeout: 10 * time.Second}))
		if !fence.Done || fence.Seq != done.Seq {
			t.Fatalf("fence = %+v", fence)
		}
		rec := must(e.sp.Get(c, "task", "t1"))
		var props map[string]any
		if err := json.Unmarshal(rec.Properties, &props); err != nil || props["completedAt"] == nil {
			t.Fatalf("stamped = %s", rec.Properties)
		}
		st := must(e.sp.Stances(c, done.Seq))
		if st.Seq != done.Seq || len(st.Stances) != 1 || st.Stances[0].Stance != "matched" || st.Stances[0].Delivery == nil ||
			st.Stances[0].Delivery.Status != client.DeliverySucceeded {
			t.Fatalf("stances = %+v", st)
		}
		chain := must(e.sp.Causes(c, rec.Version))
		if len(chain.Chain) != 2 || chain.Chain[0].Depth != 1 || chain.Chain[0].Trigger != "stamp-completed" ||
			chain.Chain[0].Delivery == "" || chain.Chain[1].Seq != done.Seq || chain.Chain[1].Depth != 0 {
			t.Fatalf("causes = %+v", chain)
		}

		test := must(e.sp.TestFunction(c, "stamp", client.TestParams{Seq: done.Seq}))
		if test.Function != "stamp" || len(test.Actions) != 1 || test.Actions[0].Op != client.OpPatch || test.Actions[0].EntityID != "t1" {
			t.Fatalf("dry run = %+v", test)
		}
		bt := must(e.sp.BacktestTrigger(c, "stamp-completed", client.BacktestParams{}))
		if bt.Matched != 1 || bt.Scanned != 3 || len(bt.Samples) != 1 || bt.Samples[0].Stance != "matched" {
			t.Fatalf("backtest = %+v", bt)
		}
		changed := stampTrigger
		changed.Source.Changes = &client.ChangeSource{Types: []string{"task"}, When: "false"}
		if bt := must(e.sp.BacktestTrigger(c, "stamp-completed", client.BacktestParams{Trigger: changed})); bt.Matched != 0 || bt.NotMatched != 2 || bt.Echo != 1 {
			t.Fatalf("backtest of a change = %+v", bt)
		}
		run := must(e.sp.RunTrigger(c, "stamp-completed", client.EntityKey{Type: "task", ID: "t1"}))
		if run.Delivery == "" || run.Seq != rec.Version || run.Depth != 2 || len(run.Receipts) != 1 || run.LastSeq < rec.Version {
			t.Fatalf("run = %+v", run)
		}

		info := must(e.sp.GetTrigger(c, "stamp-completed"))
		if info.Status == nil || info.Status.Trigger != "stamp-completed" || !info.Status.Enabled || info.Status.Deliveries[client.DeliverySucceeded] < 1 {
			t.Fatalf("trigger info = %+v %+v", info.Trigger, info.Status)
		}
		if st := must(e.sp.DisableTrigger(c, "stamp-completed")); st.Enabled {
			t.Fatalf("disable = %+v", st)
		}
		must(e.sp.Put(c, "task", "t2", map[string]any{}))
		if st := must(e.sp.EnableTrigger(c, "stamp-completed", true)); !st.Enabled || len(st.Skipped) == 0 {
			t.Fatalf("enable skipping = %+v", st)
		}
		// The engine may evaluate the replayed rows before the status is
		// read: only its name and the head are certain.
		if st := must(e.sp.ReplayTrigger(c, "stamp-completed", 0)); st.Trigger != "stamp-completed" || st.Head < 4 {
			t.Fatalf("replay = %+v", st)
		}
		// Let the replay's deliveries finish before the reset reads the head.
		if f := must(e.sp.Fence(c, must(e.sp.Info(c)).Head, client.FenceParams{Timeout: 10 * time.Second})); !f.Done {
			t.Fatalf("fence after replay = %+v", f)
		}
		if st := must(e.sp.ResetTrigger(c, "stamp-completed")); st.Start != st.Head || st.Cursor != st.Head {
			t.Fatalf("reset = %+v", st)
		}
		if ts := must(e.sp.Triggers(c)); len(ts) != 1 || ts[0].Function != "stamp" {
			t.Fatalf("triggers = %+v", ts)
		}
		wantCode(t, e.sp.DeleteFunction(c, "stamp"), "conflict")
		if err := e.sp.DeleteTrigger(c, "stamp-completed"); err != nil {
			t.Fatal(err)
		}
		if err := e.sp.DeleteFunction(c, "stamp"); err != nil {
			t.Fatal(err)
		}
		_, err = e.sp.GetTrigger(c, "stamp-completed")
		wantCode(t, err, "not_found")
	})
}

// deadURL returns an http URL on which nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/hook"
}

func TestDeliveries(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		secret := "whsec_MtFyHMxEpqTeFK1JXztiwh0eg2iwNXDKjSAJAEwuFxE="
		must2(e.sp.PutFunction(c, "hook", client.Function{Kind: client.FunctionWebhook, URL: deadURL(t), Timeout: "1s", Secret: secret}))
		if f := must(e.sp.GetFunction(c, "hook")); f.Secret != "" || f.Kind != client.FunctionWebhook || f.Timeout != "1s" {
			t.Fatalf("get function = %+v", f)
		}
		notes := client.TriggerSource{Changes: &client.ChangeSource{Types: []string{"note"}}}
		notify, _ := must2(e.sp.PutTrigger(c, "notify", client.Trigger{Source: notes, Function: "hook", Start: client.StartAt(0),
			Delivery: &client.DeliveryPolicy{MaxAttempts: 1}}))
		if notify.Start != client.StartAt(0) || notify.Delivery.MaxAttempts != 1 {
			t.Fatalf("saved trigger = %+v", notify)
		}
		must2(e.sp.PutTrigger(c, "patient", client.Trigger{Source: notes, Function: "hook",
			Delivery: &client.DeliveryPolicy{MaxAttempts: 5, Backoff: &client.Backoff{Initial: "1h", Max: "1h"}}}))
		w := must(e.sp.Put(c, "note", "n1", map[string]any{}))

		failed := func() client.Delivery {
			var d client.Delivery
			eventually(t, "notify fails", func() (bool, error) {
				page, err := e.sp.Deliveries(c, "notify", client.DeliveriesParams{Status: []string{client.DeliveryFailed}})
				if err != nil || len(page.Deliveries) == 0 {
					return false, err
				}
				d = page.Deliveries[0]
				return true, nil
			})
			return d
		}
		d := failed()
		if d.Trigger != "notify" || d.Seq != w.Seq || d.Entity.ID != "n1" || d.Attempts != 1 || d.LastError == "" || d.CreatedAt.IsZero() {
			t.Fatalf("failed delivery = %+v", d)
		}
		if r := must(e.sp.RetryDelivery(c, d.ID)); r.Status != client.DeliveryPending || r.Attempts != 0 {
			t.Fatalf("retry = %+v", r)
		}
		d = failed()
		if x := must(e.sp.DiscardDelivery(c, d.ID)); x.Status != client.DeliveryDiscarded {
			t.Fatalf("discard = %+v", x)
		}
		_, err := e.sp.ReleaseDelivery(c, d.ID)
		if ce := wantCode(t, err, "conflict"); ce.Details["status"] != client.DeliveryDiscarded {
			t.Fatalf("release of a discarded delivery = %+v", ce)
		}
		_, err = e.sp.Deliveries(c, "notify", client.DeliveriesParams{Status: []string{"lost"}})
		wantCode(t, err, "bad_request")

		var open []client.Delivery
		for page, err := range e.sp.DeliveryPages(c, "patient", client.DeliveriesParams{Limit: 1}) {
			if err != nil {
				t.Fatal(err)
			}
			open = append(open, page.Deliveries...)
		}
		if len(open) != 1 {
			t.Fatalf("patient deliveries = %+v", open)
		}
		// The patient trigger's open delivery still needs its row.
		_, err = e.sp.Prune(c, client.PruneParams{Through: w.Seq})
		ce := wantCode(t, err, "conflict")
		if ce.Reason != "triggers_behind" || client.ReasonOf(err) != "triggers_behind" {
			t.Fatalf("prune past an open delivery = %+v", ce)
		}
		if limit, ok := ce.DetailInt("limit"); !ok || limit != w.Seq-1 {
			t.Fatalf("details.limit = %v %v", ce.Details["limit"], ok)
		}
		if sp := must(e.sp.Prune(c, client.PruneParams{Through: w.Seq, Force: true})); sp.Horizon != w.Seq {
			t.Fatalf("forced prune = %+v", sp)
		}
	})
}

// must2 is must for calls that answer two values and an error.
func must2[T, U any](v T, u U, err error) (T, U) {
	if err != nil {
		return must(v, err), u
	}
	return v, u
}
