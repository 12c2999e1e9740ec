package definitions

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// commitAtSeq returns the commit at seq of space s.
func (f *fixture) commitAtSeq(seq int64) store.Commit {
	f.t.Helper()
	c, err := f.svc.commitAt(context.Background(), "s", seq)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// checkRunWrite fails unless res wrote one applied commit authored by the
// delivery of trigger at depth, caused by cause.
func (f *fixture) checkRunWrite(res RunResult, trigger string, cause int64, depth int) {
	f.t.Helper()
	if !strings.HasPrefix(res.Delivery, RunDeliveryPrefix) || len(res.Delivery) != len(RunDeliveryPrefix)+12 {
		f.t.Fatalf("delivery = %q", res.Delivery)
	}
	if res.Trigger != trigger || res.Seq != cause || res.Depth != depth || len(res.Receipts) != 1 ||
		res.Receipts[0].Status != store.ReceiptApplied || res.LastSeq != res.Receipts[0].Seq {
		f.t.Fatalf("run = %+v", res)
	}
	p := f.commitAtSeq(res.LastSeq).Provenance
	if p.Actor != "trigger:"+trigger || p.Via != "trigger" || p.Trigger != trigger || p.Delivery != res.Delivery ||
		p.CausedBy != cause || p.Depth != depth || p.RequestID != "req-1" {
		f.t.Fatalf("provenance = %+v", p)
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(f *fixture) {
		t := f.t
		ctx := context.Background()
		f.putFunction("complete", `{"kind": "expr", "writes": ["task"],
			"code": "patch('task', entity.id, {'seen': before == nil ? 'new' : before.properties.status})"}`)
		f.putFunction("quiet", `{"kind": "expr", "code": "nil"}`)
		f.putTrigger("done", `{"source": {"changes": {"types": ["task"]}}, "function": "complete"}`)
		f.putTrigger("idle", `{"source": {"changes": {}}, "function": "quiet"}`)
		f.write(putTask("a", `{"status": "todo"}`))
		cause := f.write(putTask("a", `{"status": "done"}`))
		f.write(putTask("b", `{"status": "todo"}`))
		a := store.EntityKey{Type: "task", ID: "a"}

		res, err := f.svc.Run(ctx, "s", "done", a, "req-1")
		if err != nil {
			t.Fatal(err)
		}
		f.checkRunWrite(res, "done", cause, 1)
		rec, err := f.log.Get(ctx, "s", a)
		if err != nil || !strings.Contains(string(rec.Properties), `"seen":"todo"`) {
			t.Fatalf("entity = %s, %v", rec.Properties, err)
		}

		// Nothing returned: nothing written, the head stays.
		head := f.write(putTask("c", `{}`))
		res, err = f.svc.Run(ctx, "s", "idle", a, "req-1")
		if err != nil || len(res.Receipts) != 0 || res.LastSeq != 0 || res.Depth != 2 || res.Seq != head-1 {
			t.Fatalf("quiet run = %+v, %v", res, err)
		}
		if sp, _ := f.log.Space(ctx, "s"); sp.Head != head {
			t.Fatalf("head = %d, want %d", sp.Head, head)
		}

		f.write(changelog.Mutation{Op: changelog.OpDelete, Type: "task", EntityID: "b"})
		for _, tc := range []struct {
			name, trigger string
			key           store.EntityKey
			code, field   string
		}{
			{"missing entity", "done", store.EntityKey{Type: "task", ID: "zz"}, problem.NotFound, ""},
			{"deleted entity", "done", store.EntityKey{Type: "task", ID: "b"}, problem.NotFound, ""},
			{"missing trigger", "nope", a, problem.NotFound, ""},
			{"no entity", "done", store.EntityKey{}, problem.BadRequest, "entity"},
		} {
			_, err := f.svc.Run(ctx, "s", tc.trigger, tc.key, "")
			wantProblem(t, err, tc.code, tc.field)
		}
	})
}

func TestRunGoAndCap(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(f *fixture) {
		t := f.t
		ctx := context.Background()
		var got functions.Input
		err := f.handlers.Register("mark", func(_ context.Context, in functions.Input) ([]changelog.Mutation, error) {
			got = in
			return []changelog.Mutation{{Op: changelog.OpPatch, Type: "task", EntityID: in.Entity.ID,
				Patch: json.RawMessage(`{"marked": true}`)}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		f.putFunction("mark", `{"kind": "go", "handler": "mark", "writes": ["task"]}`)
		f.putFunction("ghost", `{"kind": "go", "handler": "ghost", "writes": ["task"]}`)
		f.putTrigger("mark", `{"source": {"changes": {}}, "function": "mark"}`)
		f.putTrigger("low", `{"source": {"changes": {}}, "function": "mark", "causalityCap": 3}`)
		f.putTrigger("ghost", `{"source": {"changes": {}}, "function": "ghost"}`)
		cause := f.writeAs(store.Provenance{Actor: "trigger:x", Via: "trigger", Trigger: "x", CausedBy: 1, Depth: 2},
			putTask("a", `{"status": "done"}`))

		res, err := f.svc.Run(ctx, "s", "mark", store.EntityKey{Type: "task", ID: "a"}, "req-1")
		if err != nil {
			t.Fatal(err)
		}
		f.checkRunWrite(res, "mark", cause, 3)
		if got.Trigger != "mark" || got.Row.Seq != cause || got.Entity == nil || got.Entity.ID != "a" || got.Before != nil {
			t.Fatalf("input = %+v", got)
		}
		_, err = f.svc.Run(ctx, "s", "ghost", store.EntityKey{Type: "task", ID: "a"}, "")
		if pe := wantProblem(t, err, problem.Unprocessable, ""); pe.Details["handler"] != "ghost" {
			t.Fatalf("details = %v", pe.Details)
		}

		// A commit already at the cap: the run is refused, nothing written.
		for _, tc := range []struct {
			trigger string
			depth   int
			cap     int
		}{{"mark", 16, 16}, {"low", 3, 3}} {
			f.writeAs(store.Provenance{Actor: "trigger:x", Via: "trigger", Trigger: "x", CausedBy: 1, Depth: tc.depth},
				putTask("deep", `{"depth": `+jsonInt(tc.depth)+`}`))
			sp, _ := f.log.Space(ctx, "s")
			_, err = f.svc.Run(ctx, "s", tc.trigger, store.EntityKey{Type: "task", ID: "deep"}, "")
			pe := wantProblem(t, err, problem.Conflict, "")
			if pe.Details["reason"] != "causality_cap" || pe.Details["cap"] != tc.cap || pe.Details["depth"] != tc.depth+1 {
				t.Fatalf("%s: details = %v", tc.trigger, pe.Details)
			}
			if after, _ := f.log.Space(ctx, "s"); after.Head != sp.Head {
				t.Fatalf("%s: head moved %d -> %d", tc.trigger, sp.Head, after.Head)
			}
		}
	})
}

func jsonInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestRunWebhook(t *testing.T) {
	t.Parallel()
	secret := "whsec_" + strings.Repeat("QUJD", 8)
	forEachDriver(t, func(f *fixture) {
		t := f.t
		// Each driver's subtest has its own hook: the subtests run in
		// parallel, and a cause token is signed with its store's key.
		hook, causes := newCauseHook(t, secret)
		ctx := context.Background()
		f.putFunction("hook", `{"kind": "webhook", "url": "`+hook.URL+`/ok", "secret": "`+secret+`", "writes": ["task"], "timeout": "5s"}`)
		f.putFunction("fail", `{"kind": "webhook", "url": "`+hook.URL+`/fail", "secret": "`+secret+`", "writes": ["task"]}`)
		f.putFunction("unsigned", `{"kind": "webhook", "url": "`+hook.URL+`/ok", "writes": ["task"]}`)
		f.putTrigger("hook", `{"source": {"changes": {}}, "function": "hook"}`)
		f.putTrigger("fail", `{"source": {"changes": {}}, "function": "fail"}`)
		f.putTrigger("unsigned", `{"source": {"changes": {}}, "function": "unsigned"}`)
		cause := f.write(putTask("a", `{"status": "done"}`))
		a := store.EntityKey{Type: "task", ID: "a"}

		res, err := f.svc.Run(ctx, "s", "hook", a, "req-1")
		if err != nil {
			t.Fatal(err)
		}
		f.checkRunWrite(res, "hook", cause, 1)
		key, err := causality.Key(ctx, f.log.Store())
		if err != nil {
			t.Fatal(err)
		}
		claims, err := causality.Verify(key, <-causes, "s", clock) // minted on the engine's clock, the fixture's
		if err != nil || claims.Trigger != "hook" || claims.CausedBy != cause || claims.Depth != 1 || claims.Delivery != res.Delivery {
			t.Fatalf("Eddy-Cause claims %+v (%v)", claims, err)
		}
		for name, status := range map[string]int{"fail": http.StatusServiceUnavailable, "unsigned": http.StatusUnauthorized} {
			_, err = f.svc.Run(ctx, "s", name, a, "")
			if pe := wantProblem(t, err, problem.Unprocessable, ""); pe.Details["status"] != status {
				t.Fatalf("%s: details = %v", name, pe.Details)
			}
		}
	})
}

// newCauseHook starts a webhook that checks each request's signature
// with secret and body, fails on /fail, and on any other path sends the
// request's Eddy-Cause token on causes and answers with a patch of the
// entity.
func newCauseHook(t *testing.T, secret string) (*httptest.Server, <-chan string) {
	t.Helper()
	causes := make(chan string, 8)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := functions.Verify(secret, r.Header, body, 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var req functions.Request
		if err := json.Unmarshal(body, &req); err != nil || req.Delivery != r.Header.Get(functions.HeaderID) || req.Entity == nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get("Eddy-Cause") == "" {
			http.Error(w, "no Eddy-Cause token", http.StatusBadRequest)
			return
		}
		causes <- r.Header.Get("Eddy-Cause")
		_, _ = io.WriteString(w, `{"actions": [{"op": "patch", "type": "task", "entityId": "`+req.Entity.ID+`", "patch": {"hooked": true}}]}`)
	}))
	t.Cleanup(hook.Close)
	return hook, causes
}
