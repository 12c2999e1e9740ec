package server

import (
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// probePathValues fill the path parameters of the spec's routes for
// TestOpenAPIQueryParameters.
var probePathValues = map[string]string{
	"space": "default", "type": "task", "id": "t1", "name": "t", "view": "v",
	"seq": "1", "token": "x", "clientId": "c", "consolePath": "x", "asset": "x",
}

// TestOpenAPIQueryParameters probes every served operation: each query
// parameter the spec documents is one the server knows (it is not
// refused as an unknown parameter), and a parameter the spec does not
// document is refused as one under /api/v1, as DESIGN section 5 says.
func TestOpenAPIQueryParameters(t *testing.T) {
	t.Parallel()
	o := loadSpec(t)
	e := newEnvConfig(t, Config{})
	e.call(t, "PUT", "/api/v1/spaces/default/entities/task/t1", map[string]any{"n": 1}).want(201)
	pending := map[string]bool{}
	for _, p := range notYetServed {
		pending[p] = true
	}
	var every []string
	for _, operation := range o.ops {
		for _, name := range o.queryParams(operation) {
			if !slices.Contains(every, name) {
				every = append(every, name)
			}
		}
	}
	slices.Sort(every)
	for _, pattern := range o.patterns() {
		operation := o.ops[pattern]
		if pending[pattern] || operation["x-eddy-mux-pattern"] != nil || pattern == "GET /metrics" {
			continue
		}
		method, path, _ := strings.Cut(pattern, " ")
		for name, value := range probePathValues {
			path = strings.ReplaceAll(path, "{"+name+"}", value)
		}
		if strings.Contains(path, "{") {
			t.Fatalf("%s: no probe value for a path parameter", pattern)
		}
		params := o.queryParams(operation)
		for _, name := range params {
			q := url.Values{name: {"1"}}
			switch {
			case name == "watch":
				q.Set(name, "0") // an ordinary page, not a stream
			case name == "from" && slices.Contains(params, "watch"):
				// from resumes a watch: a position above the head is
				// refused before the stream starts.
				q.Set(name, "999999999")
				q.Set("watch", "1")
			}
			r := e.do(t, req{Method: method, Path: path + "?" + q.Encode(), Token: e.admin, Body: "{}"})
			if unknownParam(r, name) {
				t.Errorf("%s: the spec documents %q, the server refuses it as unknown: %s", pattern, name, r.body)
			}
		}
		if !strings.HasPrefix(path, "/api/v1") {
			continue // the probes take no parameters and ignore any
		}
		// Every parameter the spec names anywhere but not here must be
		// unknown here: the spec misses none the server takes.
		for _, name := range append(slices.DeleteFunc(slices.Clone(every), func(n string) bool { return slices.Contains(params, n) }), "undocumented") {
			r := e.do(t, req{Method: method, Path: path + "?" + url.Values{name: {"1"}}.Encode(), Token: e.admin, Body: "{}"})
			if !unknownParam(r, name) {
				t.Errorf("%s: the server takes %q, which the spec does not document here: %d %s", pattern, name, r.status, r.body)
			}
		}
	}
}

// queryParams are the names of an operation's query parameters.
func (o *openAPI) queryParams(operation map[string]any) []string {
	names := map[string]bool{}
	params, _ := operation["parameters"].([]any)
	for _, p := range params {
		pm, _ := o.resolve(p).(map[string]any)
		if pm["in"] == "query" {
			names[pm["name"].(string)] = true
		}
	}
	return slices.Sorted(maps.Keys(names))
}

// unknownParam reports whether r refuses name as an unknown parameter.
func unknownParam(r *resp, name string) bool {
	if r.status != 400 {
		return false
	}
	var body struct {
		Error struct {
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	r.decode(&body)
	return body.Error.Details["parameter"] == name && strings.Contains(body.Error.Message, "unknown parameter")
}
