package server

import (
	"net/http"
	"testing"
)

// TestBadInputRefused: each input readers would disagree on, or that
// names what no client may write, is a 400 problem object and stores
// nothing (issue 9, "bad input that is accepted today").
func TestBadInputRefused(t *testing.T) {
	t.Parallel()
	const ent = "/api/v1/spaces/default/entities/task/"
	forEachDriver(t, func(e *env) {
		for _, tc := range []struct {
			name, method, path string
			body               any
			detail             string // a details key the problem must carry
		}{
			{"number out of range", "PUT", ent + "t1", `{"n": 1e400}`, "offset"},
			{"number out of range, nested", "PUT", ent + "t1", `{"a": {"b": [1, -2e308]}}`, "offset"},
			{"invalid UTF-8", "PUT", ent + "t1", "{\"s\": \"a\xffb\"}", "offset"},
			{"lone surrogate", "PUT", ent + "t1", `{"s": "\ud800"}`, "offset"},
			{"duplicate key", "PUT", ent + "t1", `{"a": 1, "a": 2}`, "offset"},
			{"duplicate key, nested", "PUT", ent + "t1", `{"x": [{"a": 1, "\u0061": 2}]}`, "offset"},
			{"duplicate key in a patch", "PATCH", ent + "t1", `{"a": 1, "a": 2}`, "offset"},
			{"duplicate key in mutations", "POST", "/api/v1/spaces/default/mutations",
				`{"mutations": [{"op": "put", "type": "task", "entityId": "t1", "properties": {"a": 1, "a": 2}}]}`, "offset"},
			{"number out of range in mutations", "POST", "/api/v1/spaces/default/mutations",
				`{"mutations": [{"op": "put", "type": "task", "entityId": "t1", "properties": {"a": 1e999}}]}`, "offset"},
			{"duplicate top-level field", "POST", "/api/v1/spaces/default/mutations",
				`{"mutations": [], "mutations": [{"op": "put", "type": "task", "entityId": "t1", "properties": {}}]}`, "offset"},
			{"duplicate key in a push", "POST", "/api/v1/spaces/default/push",
				`{"clientId": "c1", "clientId": "c2", "mutations": [{"ordinal": 1, "op": "put", "type": "task", "entityId": "t1", "properties": {}}]}`, "offset"},
			{"number out of range in a push", "POST", "/api/v1/spaces/default/push",
				`{"clientId": "c1", "mutations": [{"ordinal": 1, "op": "put", "type": "task", "entityId": "t1", "properties": {"n": 1e400}}]}`, "offset"},
			{"duplicate key in a type definition", "PUT", "/api/v1/spaces/default/types/task", `{"properties": {}, "properties": {}}`, "offset"},
			{"engine type eddy.trigger", "PUT", "/api/v1/spaces/default/entities/eddy.trigger/t1", `{}`, "field"},
			{"engine type eddy.delivery", "PUT", "/api/v1/spaces/default/entities/eddy.delivery/d1", `{}`, "field"},
			{"any eddy. type", "PUT", "/api/v1/spaces/default/entities/eddy.other/x", `{}`, "field"},
			{"engine type in mutations", "POST", "/api/v1/spaces/default/mutations",
				`{"mutations": [{"op": "put", "type": "eddy.trigger", "entityId": "t1", "properties": {}}]}`, "field"},
			{"engine type definition", "PUT", "/api/v1/spaces/default/types/eddy.delivery", `{}`, "parameter"},
			{"id .", "POST", "/api/v1/spaces/default/mutations",
				`{"mutations": [{"op": "put", "type": "task", "entityId": ".", "properties": {}}]}`, "field"},
			{"id ..", "POST", "/api/v1/spaces/default/mutations",
				`{"mutations": [{"op": "put", "type": "task", "entityId": "..", "properties": {}}]}`, "field"},
			{"id . in the path", "PUT", ent + "%2E", `{}`, "parameter"},
			{"id .. in the path", "PUT", ent + "%2E%2E", `{}`, "parameter"},
			{"malformed percent-encoding", "GET", "/api/v1/spaces/default/changes?from=0&types=%zz", nil, "query"},
			{"truncated percent-encoding", "GET", "/api/v1/spaces/default/changes?limit=1%", nil, "query"},
			{"invalid space name", "GET", "/api/v1/spaces/Bad_Space/changes", nil, "parameter"},
			{"invalid space name on a write", "PUT", "/api/v1/spaces/Bad_Space/entities/task/t1", `{}`, "parameter"},
		} {
			e.t.Run(tc.name, func(t *testing.T) {
				pe := e.do(t, req{Method: tc.method, Path: tc.path, Token: e.admin, Body: tc.body,
					Header: map[string]string{"Content-Type": "application/merge-patch+json"}}).want(http.StatusBadRequest).problem("bad_request")
				if _, ok := pe.Details[tc.detail]; !ok {
					t.Errorf("problem %+v: want details.%s", pe, tc.detail)
				}
			})
		}
		if h := e.head(e.t, "default"); h != 0 {
			e.t.Errorf("head = %d after refused writes, want 0 (nothing stored)", h)
		}
	})
}

// TestStrictJSONAccepts: what the gate refuses is only what readers
// disagree on; ordinary bodies still pass.
func TestStrictJSONAccepts(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		e.call(e.t, "PUT", "/api/v1/spaces/default/entities/task/t.1",
			`{"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}], "n": 1.7e308, "s": "\u00e9\ud83d\ude00", "tiny": 1e-400}`).want(http.StatusCreated)
		e.call(e.t, "GET", "/api/v1/spaces/default/changes?from=0&types=task%2Cother", nil).want(http.StatusOK)
	})
}
