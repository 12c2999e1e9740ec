package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

func TestDeliveriesWithoutEngine(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	list := "/api/v1/spaces/default/triggers/on-task/deliveries"
	reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
	for _, q := range []string{"", "?status=failed", "?status=failed,parked&status=pending", "?status=,failed,,failed", "?limit=1000&after=abc"} {
		wantNoEngine(t, "list"+q, e.call(t, "GET", list+q, nil))
		wantNoEngine(t, "reader list"+q, e.do(t, req{Method: "GET", Path: list + q, Token: reader}))
	}
	ops := "/api/v1/spaces/default/deliveries/d_1/"
	for _, op := range []string{"retry", "release", "discard"} {
		wantNoEngine(t, op, e.call(t, "POST", ops+op, nil))
		wantNoEngine(t, op+" {}", e.call(t, "POST", ops+op, "{}"))
	}
}

func TestDeliveriesValidation(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	list := "/api/v1/spaces/default/triggers/on-task/deliveries"
	params := []struct{ query, param string }{
		{"?status=bogus", "status"},
		{"?status=failed,Failed", "status"},
		{"?status=failed&status=done", "status"},
		{"?statuses=failed", "statuses"},
		{"?limit=0", "limit"},
		{"?limit=1001", "limit"},
		{"?limit=x", "limit"},
		{"?limit=1&limit=2", "limit"},
		{"?after=a&after=b", "after"},
		{"?trigger=x", "trigger"},
	}
	for _, p := range params {
		wantDetail(t, p.query, e.call(t, "GET", list+p.query, nil).problem(problem.BadRequest), "parameter", p.param)
	}
	pe := e.call(t, "GET", list+"?statuses=failed", nil).problem(problem.BadRequest)
	wantDetail(t, "statuses", pe, "suggestion", "status")
	pe = e.call(t, "GET", list+"?status=done", nil).problem(problem.BadRequest)
	if allowed, _ := pe.Details["allowed"].([]any); len(allowed) != 7 {
		t.Errorf("unknown status details = %v", pe.Details)
	}

	ops := "/api/v1/spaces/default/deliveries/d_1/"
	reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
	writer := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter})
	for _, op := range []string{"retry", "release", "discard"} {
		wantDetail(t, op+" body", e.call(t, "POST", ops+op, map[string]any{"force": true}).problem(problem.BadRequest), "field", "force")
		wantDetail(t, op+" query", e.call(t, "POST", ops+op+"?force=1", nil).problem(problem.BadRequest), "parameter", "force")
		e.do(t, req{Method: "POST", Path: ops + op, Token: reader}).problem(problem.Forbidden)
		e.do(t, req{Method: "POST", Path: ops + op, Token: writer}).problem(problem.Forbidden)
		e.call(t, "GET", ops+op, nil).want(http.StatusMethodNotAllowed)
	}
	other := e.token(auth.CreateParams{Space: "other", Role: auth.RoleReader})
	e.do(t, req{Method: "GET", Path: list, Token: other}).problem(problem.Forbidden)
	e.do(t, req{Method: "GET", Path: list}).problem(problem.Unauthorized)
}

// deliveries lists every delivery of a trigger with the query q,
// following next, and checks that pages hold at most limit.
func (e *env) deliveries(t *testing.T, trigger, q string, limit int) []engine.DeliveryInfo {
	t.Helper()
	var out []engine.DeliveryInfo
	after := ""
	for range 100 {
		path := "/api/v1/spaces/default/triggers/" + trigger + "/deliveries?limit=" + strconv.Itoa(limit) + q
		if after != "" {
			path += "&after=" + url.QueryEscape(after)
		}
		var page engine.DeliveryPage
		r := e.call(t, "GET", path, nil).want(http.StatusOK)
		if raw := r.obj(); raw["deliveries"] == nil {
			t.Fatalf("page without deliveries: %s", r.body)
		}
		r.decode(&page)
		if len(page.Deliveries) > limit {
			t.Fatalf("page of %d deliveries, limit %d", len(page.Deliveries), limit)
		}
		out = append(out, page.Deliveries...)
		if page.Next == "" {
			return out
		}
		after = page.Next
	}
	t.Fatal("deliveries: too many pages")
	return nil
}

// statuses returns the statuses of ds.
func statuses(ds []engine.DeliveryInfo) []store.DeliveryStatus {
	out := make([]store.DeliveryStatus, len(ds))
	for i, d := range ds {
		out[i] = d.Status
	}
	return out
}

func TestDeliveriesListing(t *testing.T) {
	t.Parallel()
	forEachDriverEngine(t, func(e *env) {
		t := e.t
		saveTrigger(t, e, "on-task")
		var last int64
		for i := range 5 {
			last = e.putTask(t, fmt.Sprintf("t%d", i), map[string]any{"n": i})
		}
		e.fenced(t, last, "on-task")

		all := e.deliveries(t, "on-task", "", 2)
		if len(all) != 5 {
			t.Fatalf("deliveries = %+v", all)
		}
		for i, d := range all {
			if d.Trigger != "on-task" || d.Status != "succeeded" || d.Attempts != 1 || d.Depth != 1 ||
				d.Entity.Type != "task" || d.Entity.ID != fmt.Sprintf("t%d", i) || d.ID == "" || d.CreatedAt.IsZero() {
				t.Errorf("delivery %d = %+v", i, d)
			}
			if i > 0 && d.Seq <= all[i-1].Seq {
				t.Errorf("deliveries out of seq order: %d after %d", d.Seq, all[i-1].Seq)
			}
		}
		if one := e.deliveries(t, "on-task", "", 100); len(one) != 5 {
			t.Errorf("one page = %d deliveries", len(one))
		}
		if got := e.deliveries(t, "on-task", "&status=succeeded", 3); len(got) != 5 {
			t.Errorf("succeeded = %d deliveries", len(got))
		}
		if got := e.deliveries(t, "on-task", "&status=failed,parked&status=pending", 3); len(got) != 0 {
			t.Errorf("failed, parked, pending = %+v", got)
		}
		raw := e.call(t, "GET", "/api/v1/spaces/default/triggers/on-task/deliveries?status=failed", nil).want(http.StatusOK).obj()
		if k := keys(raw); !slices.Equal(k, []string{"deliveries"}) {
			t.Errorf("empty page keys = %v", k)
		}

		e.call(t, "GET", "/api/v1/spaces/default/triggers/on-task/deliveries?after=garbage", nil).problem(problem.BadRequest)
		e.call(t, "GET", "/api/v1/spaces/default/triggers/nope/deliveries", nil).problem(problem.NotFound)
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.do(t, req{Method: "GET", Path: "/api/v1/spaces/default/triggers/on-task/deliveries", Token: reader}).want(http.StatusOK)
	})
}

func TestDeliveryTransitions(t *testing.T) {
	t.Parallel()
	forEachDriverEngine(t, func(e *env) {
		t := e.t
		fns := "/api/v1/spaces/default/functions/"
		e.call(t, "PUT", fns+"broken", map[string]any{"kind": "expr", "code": "1"}).want(http.StatusCreated)
		e.call(t, "PUT", "/api/v1/spaces/default/triggers/bad", map[string]any{
			"source": map[string]any{"changes": map[string]any{"types": []string{"task"}}}, "function": "broken",
			"delivery": map[string]any{"maxAttempts": 1},
		}).want(http.StatusCreated)
		// A trigger that answers its own writes, capped at depth 1: its
		// second delivery is parked.
		e.call(t, "PUT", fns+"bump", map[string]any{"kind": "expr", "writes": []string{"ping"},
			"code": `patch("ping", entity.id, {"n": row.seq})`}).want(http.StatusCreated)
		e.call(t, "PUT", "/api/v1/spaces/default/triggers/loop", map[string]any{
			"source": map[string]any{"changes": map[string]any{"types": []string{"ping"}}}, "function": "bump",
			"echo": true, "causalityCap": 1,
		}).want(http.StatusCreated)

		e.putTask(t, "t1", map[string]any{"n": 1})
		e.call(t, "PUT", "/api/v1/spaces/default/entities/ping/p1", map[string]any{"n": 0}).want(http.StatusCreated)

		var failed, parked []engine.DeliveryInfo
		eventually(t, "a failed delivery", func() bool {
			failed = e.deliveries(t, "bad", "&status=failed", 10)
			return len(failed) == 1
		})
		eventually(t, "a parked delivery", func() bool {
			parked = e.deliveries(t, "loop", "&status=parked", 10)
			return len(parked) == 1
		})
		if f := failed[0]; f.Attempts != 1 || f.LastError == "" {
			t.Errorf("failed delivery = %+v", f)
		}
		if p := parked[0]; p.Depth != 2 || p.Attempts != 0 {
			t.Errorf("parked delivery = %+v", p)
		}

		ops := "/api/v1/spaces/default/deliveries/"
		var d engine.DeliveryInfo
		// Retry: failed → pending with a fresh budget; it fails again.
		r := e.call(t, "POST", ops+failed[0].ID+"/retry", nil).want(http.StatusOK)
		r.decode(&d)
		if d.ID != failed[0].ID || d.Status != "pending" || d.Attempts != 0 || r.header.Get("Eddy-Seq") == "" {
			t.Errorf("retry = %+v", d)
		}
		eventually(t, "the retried delivery to fail again", func() bool {
			return len(e.deliveries(t, "bad", "&status=failed", 10)) == 1
		})
		// Only a parked delivery is released, only a failed one retried.
		pe := e.call(t, "POST", ops+failed[0].ID+"/release", nil).problem(problem.Conflict)
		if pe.Details["status"] != "failed" {
			t.Errorf("release of a failed delivery: details = %v", pe.Details)
		}
		e.call(t, "POST", ops+parked[0].ID+"/retry", nil).problem(problem.Conflict)

		// Discard: failed → discarded, and then nothing more.
		e.call(t, "POST", ops+failed[0].ID+"/discard", "{}").want(http.StatusOK).decode(&d)
		if d.Status != "discarded" {
			t.Errorf("discard = %+v", d)
		}
		for _, op := range []string{"retry", "release", "discard"} {
			if pe := e.call(t, "POST", ops+failed[0].ID+"/"+op, nil).problem(problem.Conflict); pe.Details["status"] != "discarded" {
				t.Errorf("%s of a discarded delivery: details = %v", op, pe.Details)
			}
		}

		// Release: parked → pending; it runs past the cap, and its write
		// parks the next one.
		e.call(t, "POST", ops+parked[0].ID+"/release", nil).want(http.StatusOK).decode(&d)
		if d.Status != "pending" {
			t.Errorf("release = %+v", d)
		}
		eventually(t, "the released delivery to succeed", func() bool {
			ds := e.deliveries(t, "loop", "", 10)
			return len(ds) == 3 && slices.Equal(statuses(ds), []store.DeliveryStatus{"succeeded", "succeeded", "parked"})
		})
		next := e.deliveries(t, "loop", "&status=parked", 10)[0]
		e.call(t, "POST", ops+next.ID+"/discard", nil).want(http.StatusOK).decode(&d)
		if d.Status != "discarded" || d.Depth != 3 {
			t.Errorf("discard parked = %+v", d)
		}

		e.call(t, "POST", ops+"dlv_nope/retry", nil).problem(problem.NotFound)
		e.call(t, "POST", "/api/v1/spaces/nowhere/deliveries/"+next.ID+"/discard", nil).problem(problem.NotFound)
	})
}
