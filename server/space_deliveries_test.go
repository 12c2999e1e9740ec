package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/problem"
)

// chainScene saves the trigger bad (its function fails, one attempt) on
// task rows and loop (it answers its own ping rows, capped at depth 1),
// writes task t1 and ping p1, and waits for the failed and the parked
// delivery. It returns the seq of the ping row.
func chainScene(t *testing.T, e *env) int64 {
	t.Helper()
	fns := "/api/v1/spaces/default/functions/"
	e.call(t, "PUT", fns+"broken", map[string]any{"kind": "expr", "code": "1"}).want(http.StatusCreated)
	e.call(t, "PUT", "/api/v1/spaces/default/triggers/bad", map[string]any{
		"source": map[string]any{"changes": map[string]any{"types": []string{"task"}}}, "function": "broken",
		"delivery": map[string]any{"maxAttempts": 1},
	}).want(http.StatusCreated)
	e.call(t, "PUT", fns+"bump", map[string]any{"kind": "expr", "writes": []string{"ping"},
		"code": `patch("ping", entity.id, {"n": row.seq})`}).want(http.StatusCreated)
	e.call(t, "PUT", "/api/v1/spaces/default/triggers/loop", map[string]any{
		"source": map[string]any{"changes": map[string]any{"types": []string{"ping"}}}, "function": "bump",
		"echo": true, "causalityCap": 1,
	}).want(http.StatusCreated)
	e.putTask(t, "t1", map[string]any{"n": 1})
	ping := e.call(t, "PUT", "/api/v1/spaces/default/entities/ping/p1", map[string]any{"n": 0}).want(http.StatusCreated).seq()
	eventually(t, "a failed and a parked delivery", func() bool {
		return len(e.spaceDeliveries(t, "status=failed")) == 1 && len(e.spaceDeliveries(t, "status=parked")) == 1
	})
	return ping
}

// spaceDeliveries lists GET .../deliveries?q as the admin, page by page.
func (e *env) spaceDeliveries(t *testing.T, q string) []engine.DeliveryInfo {
	t.Helper()
	return e.spaceDeliveriesAs(t, e.admin, q)
}

func (e *env) spaceDeliveriesAs(t *testing.T, token, q string) []engine.DeliveryInfo {
	t.Helper()
	var out []engine.DeliveryInfo
	after := ""
	for range 100 {
		path := "/api/v1/spaces/default/deliveries?" + q
		if after != "" {
			path += "&after=" + url.QueryEscape(after)
		}
		var page engine.DeliveryPage
		e.do(t, req{Method: "GET", Path: path, Token: token}).want(http.StatusOK).decode(&page)
		out = append(out, page.Deliveries...)
		if page.Next == "" {
			return out
		}
		after = page.Next
	}
	t.Fatal("too many pages")
	return nil
}

func triggersOf(ds []engine.DeliveryInfo) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Trigger + ":" + string(d.Status)
	}
	return out
}

func TestSpaceDeliveries(t *testing.T) {
	t.Parallel()
	forEachDriverEngine(t, func(e *env) {
		t := e.t
		chainScene(t, e)
		all := e.spaceDeliveries(t, "")
		if got := triggersOf(all); !slices.Equal(got, []string{"bad:failed", "loop:succeeded", "loop:parked"}) {
			t.Fatalf("every delivery = %v", got)
		}
		for _, tc := range []struct{ q, want string }{
			{"trigger=bad", "[bad:failed]"},
			{"trigger=loop&status=parked", "[loop:parked]"},
			{"status=failed,parked", "[bad:failed loop:parked]"},
			{"status=succeeded&status=failed", "[bad:failed loop:succeeded]"},
			{"when=" + url.QueryEscape(`row.type == "ping"`), "[loop:succeeded loop:parked]"},
			{"when=" + url.QueryEscape(`row.actor != "owner"`), "[loop:parked]"},
			{"when=" + url.QueryEscape(`row.payload.nope == 1`), "[]"},
			{"limit=1", "[bad:failed loop:succeeded loop:parked]"},
			{"limit=1&when=" + url.QueryEscape(`row.type == "ping"`), "[loop:succeeded loop:parked]"},
		} {
			if got := fmt.Sprint(triggersOf(e.spaceDeliveries(t, tc.q))); got != tc.want {
				t.Errorf("?%s = %s, want %s", tc.q, got, tc.want)
			}
		}
		var page engine.DeliveryPage
		e.call(t, "GET", "/api/v1/spaces/default/deliveries?limit=1&when="+url.QueryEscape(`row.type == "nope"`), nil).want(http.StatusOK).decode(&page)
		if len(page.Deliveries) != 0 || page.Next != "" {
			t.Errorf("a filter that matches nothing = %+v, want the end", page)
		}

		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Types: []string{"task"}})
		if got := fmt.Sprint(triggersOf(e.spaceDeliveriesAs(t, reader, ""))); got != "[bad:failed]" {
			t.Errorf("a task reader sees %s", got)
		}
		e.do(t, req{Method: "GET", Path: "/api/v1/spaces/default/deliveries"}).problem(problem.Unauthorized)

		path := "/api/v1/spaces/default/deliveries?"
		e.call(t, "GET", path+"trigger=nope", nil).problem(problem.NotFound)
		wantDetail(t, "status", e.call(t, "GET", path+"status=done", nil).problem(problem.BadRequest), "parameter", "status")
		wantDetail(t, "statuses", e.call(t, "GET", path+"statuses=failed", nil).problem(problem.BadRequest), "suggestion", "status")
		wantDetail(t, "triggers", e.call(t, "GET", path+"triggers=bad", nil).problem(problem.BadRequest), "suggestion", "trigger")
		if pe := e.call(t, "GET", path+"when="+url.QueryEscape("row.seq >"), nil).problem(problem.BadRequest); pe.Details["position"] == nil {
			t.Errorf("a bad when: %+v", pe)
		}
		e.call(t, "GET", path+"after=garbage", nil).problem(problem.BadRequest)
		e.call(t, "GET", path+"trigger=bad&trigger=loop", nil).problem(problem.BadRequest)
		e.call(t, "GET", "/api/v1/spaces/nope/deliveries", nil).problem(problem.NotFound)
	})
}

// bulk posts a bulk operation as the admin.
func (e *env) bulk(t *testing.T, body map[string]any) bulkAnswer {
	t.Helper()
	var out bulkAnswer
	e.call(t, "POST", "/api/v1/spaces/default/deliveries/bulk", body).want(http.StatusOK).decode(&out)
	return out
}

func TestBulkDeliveries(t *testing.T) {
	t.Parallel()
	forEachDriverEngine(t, func(e *env) {
		t := e.t
		chainScene(t, e)
		path := "/api/v1/spaces/default/deliveries/bulk"

		dry := e.bulk(t, map[string]any{"action": "retry", "dryRun": true})
		if !dry.DryRun || dry.Matched != 1 || dry.Done != 0 || len(dry.Sample) != 1 || dry.Sample[0].Trigger != "bad" {
			t.Fatalf("dry retry = %+v", dry)
		}
		// Discard applies to failed and parked deliveries: parked first.
		if d := e.bulk(t, map[string]any{"action": "discard", "dryRun": true}); fmt.Sprint(triggersOf(d.Sample)) != "[loop:parked bad:failed]" {
			t.Errorf("dry discard = %+v", d)
		}
		pe := e.call(t, "POST", path, map[string]any{"action": "retry", "expect": 3}).problem(problem.Conflict)
		if pe.Details["matched"] != float64(1) {
			t.Errorf("expect 3: %+v", pe)
		}
		if got := triggersOf(e.spaceDeliveries(t, "status=failed")); len(got) != 1 {
			t.Fatalf("a refused bulk changed deliveries: %v", got)
		}
		done := e.bulk(t, map[string]any{"action": "retry", "trigger": "bad", "expect": 1})
		if done.DryRun || done.Matched != 1 || done.Done != 1 || done.Skipped != 0 || done.Sample != nil {
			t.Errorf("retry = %+v", done)
		}
		eventually(t, "the retried delivery to fail again", func() bool {
			ds := e.spaceDeliveries(t, "trigger=bad")
			return len(ds) == 1 && ds[0].Status == "failed" && ds[0].Attempts == 1
		})
		if got := e.bulk(t, map[string]any{"action": "release", "when": `row.type == "task"`, "dryRun": true}); got.Matched != 0 {
			t.Errorf("release of task rows' deliveries = %+v", got)
		}
		if got := e.bulk(t, map[string]any{"action": "release", "status": []string{"parked"}}); got.Done != 1 {
			t.Errorf("release = %+v", got)
		}
		eventually(t, "the released chain to park again", func() bool {
			return len(e.spaceDeliveries(t, "trigger=loop&status=parked")) == 1 && len(e.spaceDeliveries(t, "trigger=loop&status=pending,running")) == 0
		})
		if got := e.bulk(t, map[string]any{"action": "discard", "status": []string{"failed"}}); got.Done != 1 {
			t.Errorf("discard failed = %+v", got)
		}
		if got := fmt.Sprint(triggersOf(e.spaceDeliveries(t, "trigger=bad"))); got != "[bad:discarded]" {
			t.Errorf("after discard: %s", got)
		}

		for _, tc := range []struct {
			body  any
			field string
		}{
			{map[string]any{}, "action"},
			{map[string]any{"action": "rerun"}, "action"},
			{map[string]any{"action": "retry", "status": []string{"succeeded"}}, "status"},
			{map[string]any{"action": "retry", "status": []string{"done"}}, "status"},
			{map[string]any{"action": "retry", "limit": 3}, "limit"},
		} {
			wantDetail(t, fmt.Sprint(tc.body), e.call(t, "POST", path, tc.body).problem(problem.BadRequest), "field", tc.field)
		}
		e.call(t, "POST", path, map[string]any{"action": "retry", "when": "row.seq >"}).problem(problem.BadRequest)
		e.call(t, "POST", path, `[]`).problem(problem.BadRequest)
		e.call(t, "POST", path+"?dryRun=1", map[string]any{"action": "retry"}).problem(problem.BadRequest)
		e.call(t, "POST", path, map[string]any{"action": "retry", "trigger": "nope"}).problem(problem.NotFound)
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.do(t, req{Method: "POST", Path: path, Token: reader, Body: map[string]any{"action": "retry", "dryRun": true}}).problem(problem.Forbidden)
		e.do(t, req{Method: "POST", Path: path, Body: map[string]any{"action": "retry"}}).problem(problem.Unauthorized)
	})
}

func TestBulkWithoutEngine(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	wantNoEngine(t, "bulk", e.call(t, "POST", "/api/v1/spaces/default/deliveries/bulk", map[string]any{"action": "retry"}))
	wantNoEngine(t, "list", e.call(t, "GET", "/api/v1/spaces/default/deliveries", nil))
}
