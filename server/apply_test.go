package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

// applyDoc is a document of every kind: a type, two functions, a view
// and a trigger naming one of the functions.
func applyDoc() map[string]any {
	return map[string]any{
		"types": map[string]any{"task": map[string]any{"properties": map[string]any{"title": map[string]any{"kind": "string"}}}},
		"functions": map[string]any{
			"stamp": map[string]any{"kind": "expr", "writes": []string{"task"}, "code": `patch("task", entity.id, {"a": 1})`},
			"hook":  map[string]any{"kind": "webhook", "url": "https://example.com/h"},
		},
		"triggers": map[string]any{"on-task": map[string]any{"source": map[string]any{"changes": map[string]any{"types": []string{"task"}}}, "function": "stamp"}},
		"views":    map[string]any{"open": map[string]any{"version": "v1", "types": []string{"task"}, "filter": map[string]any{"cel": "true"}}},
	}
}

// actions returns "kind/name=action" of each result, in order.
func actions(t *testing.T, r *resp) []string {
	t.Helper()
	var ans applyAnswer
	r.decode(&ans)
	out := make([]string, len(ans.Results))
	for i, res := range ans.Results {
		out[i] = res.Kind + "/" + res.Name + "=" + res.Action
	}
	return out
}

func TestApplyAPI(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		path := "/api/v1/spaces/default/apply"
		doc := applyDoc()

		// A dry run says what would happen and writes nothing.
		dry := map[string]any{"dryRun": true}
		for k, v := range doc {
			dry[k] = v
		}
		want := "[type/task=created function/hook=created function/stamp=created view/open=created trigger/on-task=created]"
		if got := fmt.Sprint(actions(t, e.call(t, "POST", path, dry).want(http.StatusOK))); got != want {
			t.Fatalf("dry run = %s, want %s", got, want)
		}
		e.call(t, "GET", "/api/v1/spaces/default/functions/stamp", nil).problem(problem.NotFound)

		if got := fmt.Sprint(actions(t, e.call(t, "POST", path, doc).want(http.StatusOK))); got != want {
			t.Fatalf("apply = %s", got)
		}
		e.call(t, "GET", "/api/v1/spaces/default/triggers/on-task", nil).want(http.StatusOK)

		// The export is an apply body: applied back, it changes nothing.
		export := e.call(t, "GET", path, nil).want(http.StatusOK)
		var exported map[string]map[string]map[string]any
		export.decode(&exported)
		if len(exported["functions"]) != 2 || exported["functions"]["stamp"]["name"] != nil || exported["triggers"]["on-task"]["function"] != "stamp" {
			t.Fatalf("export = %s", export.body)
		}
		if got := fmt.Sprint(actions(t, e.call(t, "POST", path, json.RawMessage(export.body)).want(http.StatusOK))); got !=
			"[type/task=unchanged function/hook=unchanged function/stamp=unchanged view/open=unchanged trigger/on-task=unchanged]" {
			t.Fatalf("applying the export = %s", got)
		}

		// Applying the same document again writes nothing.
		head := e.call(t, "GET", "/api/v1/spaces/default", nil).want(http.StatusOK).obj()["head"]
		again := fmt.Sprint(actions(t, e.call(t, "POST", path, doc).want(http.StatusOK)))
		if again != "[type/task=unchanged function/hook=unchanged function/stamp=unchanged view/open=unchanged trigger/on-task=unchanged]" {
			t.Fatalf("re-apply = %s", again)
		}
		if h := e.call(t, "GET", "/api/v1/spaces/default", nil).want(http.StatusOK).obj()["head"]; h != head {
			t.Fatalf("head moved from %v to %v", head, h)
		}

		// One bad definition applies nothing and is named.
		bad := applyDoc()
		bad["types"].(map[string]any)["task"] = map[string]any{"strict": true}
		bad["functions"].(map[string]any)["broken"] = map[string]any{"kind": "expr", "writes": []string{"task"}, "code": "patch("}
		pe := e.call(t, "POST", path, bad).problem(problem.BadRequest)
		if pe.Details["section"] != "functions" || pe.Details["name"] != "broken" || pe.Details["field"] != "code" {
			t.Fatalf("bad definition problem = %+v", pe)
		}
		if got := e.call(t, "GET", "/api/v1/spaces/default/types/task", nil).want(http.StatusOK).obj(); got["definition"].(map[string]any)["strict"] == true {
			t.Fatalf("the good definition beside the bad one was applied: %v", got)
		}

		// A trigger may not be left naming a function the apply removes.
		orphan := map[string]any{"functions": map[string]any{"hook": doc["functions"].(map[string]any)["hook"]}, "prune": true}
		pe = e.call(t, "POST", path, orphan).problem(problem.BadRequest)
		if pe.Details["section"] != "triggers" || pe.Details["name"] != "on-task" || pe.Details["field"] != "function" {
			t.Fatalf("orphaned trigger problem = %+v", pe)
		}

		// A change shows before and after; prune deletes what the given
		// sections no longer declare, triggers before their functions.
		changed := applyDoc()
		changed["functions"].(map[string]any)["hook"] = map[string]any{"kind": "webhook", "url": "https://example.com/other"}
		delete(changed["functions"].(map[string]any), "stamp")
		changed["triggers"] = map[string]any{}
		changed["prune"] = true
		r := e.call(t, "POST", path, changed).want(http.StatusOK)
		got := fmt.Sprint(actions(t, r))
		if got != "[type/task=unchanged function/hook=changed view/open=unchanged trigger/on-task=deleted function/stamp=deleted]" {
			t.Fatalf("prune = %s", got)
		}
		var ans applyAnswer
		r.decode(&ans)
		var before, after struct {
			URL string `json:"url"`
		}
		if json.Unmarshal(ans.Results[1].Before, &before) != nil || json.Unmarshal(ans.Results[1].After, &after) != nil ||
			before.URL != "https://example.com/h" || after.URL != "https://example.com/other" {
			t.Fatalf("change = %s -> %s", ans.Results[1].Before, ans.Results[1].After)
		}
		e.call(t, "GET", "/api/v1/spaces/default/functions/stamp", nil).problem(problem.NotFound)
		e.call(t, "GET", "/api/v1/spaces/default/triggers/on-task", nil).problem(problem.NotFound)

		// Bad bodies, and only admins.
		e.call(t, "POST", path, map[string]any{"types": []string{"x"}}).problem(problem.BadRequest)
		e.call(t, "POST", path, map[string]any{"other": 1}).problem(problem.BadRequest)
		e.call(t, "POST", path, `{"types": {"Bad!": {}}}`).problem(problem.BadRequest)
		writer := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter})
		e.do(t, req{Method: "POST", Path: path, Token: writer, Body: doc}).problem(problem.Forbidden)
		e.call(t, "POST", "/api/v1/spaces/nowhere/apply", doc).problem(problem.NotFound)
	})
}

// fakeKind is a defKind over a map, whose put fails for one name.
func fakeKind(stored map[string][]byte, failOn string) defKind {
	return defKind{
		kind: "type", section: "types",
		put: func(_ context.Context, _, name string, raw []byte) ([]string, error) {
			if name == failOn {
				return nil, errors.New("disk full")
			}
			stored[name] = raw
			return nil, nil
		},
		del: func(_ context.Context, _, name string) error {
			delete(stored, name)
			return nil
		},
	}
}

func TestApplyUndoesAFailedRun(t *testing.T) {
	t.Parallel()
	stored := map[string][]byte{"b": []byte(`{"v":1}`), "c": []byte(`{"v":1}`)}
	k := fakeKind(stored, "d")
	steps := []applyStep{
		{k: k, raw: []byte(`{"v":2}`), result: applyResult{Name: "a", Action: applyCreated}},
		{k: k, raw: []byte(`{"v":2}`), stored: []byte(`{"v":1}`), result: applyResult{Name: "b", Action: applyChanged}},
		{k: k, stored: []byte(`{"v":1}`), result: applyResult{Name: "c", Action: applyDeleted}},
		{k: k, raw: []byte(`{"v":2}`), result: applyResult{Name: "d", Action: applyCreated}},
	}
	err := (&Server{}).runApply(context.Background(), "s", steps)
	if err == nil || !strings.Contains(err.Error(), "type d: disk full") {
		t.Fatalf("err = %v", err)
	}
	// Everything before the failure is as it was.
	if len(stored) != 2 || string(stored["b"]) != `{"v":1}` || string(stored["c"]) != `{"v":1}` {
		t.Fatalf("after the undo: %s", stored)
	}
}

func TestApplyConcurrent(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		path := "/api/v1/spaces/default/apply"
		// Two documents that each replace the other's function under one
		// trigger: whichever applies last wins whole.
		doc := func(fn string) map[string]any {
			return map[string]any{
				"functions": map[string]any{fn: map[string]any{"kind": "expr", "writes": []string{"task"}, "code": `patch("task", entity.id, {"a": 1})`}},
				"triggers":  map[string]any{"t": map[string]any{"source": map[string]any{"changes": map[string]any{}}, "function": fn}},
				"prune":     true,
			}
		}
		done := make(chan int, 2)
		for _, fn := range []string{"one", "two"} {
			go func() {
				r := e.do(t, req{Method: "POST", Path: path, Token: e.admin, Body: doc(fn)})
				done <- r.status
			}()
		}
		for range 2 {
			if status := <-done; status != http.StatusOK {
				t.Fatalf("a concurrent apply answered %d", status)
			}
		}
		var exported map[string]map[string]map[string]any
		e.call(t, "GET", path, nil).want(http.StatusOK).decode(&exported)
		fns := exported["functions"]
		if len(fns) != 1 || fns[fmt.Sprint(exported["triggers"]["t"]["function"])] == nil {
			t.Fatalf("after two applies: functions %v, trigger %v", fns, exported["triggers"]["t"])
		}
	})
}
