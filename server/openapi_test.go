package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"mime"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// specPath is the API contract the server is checked against.
const specPath = "../docs/openapi.yaml"

// notYetServed are the routes DESIGN.md names and docs/openapi.yaml
// describes that this server does not register yet (none today).
// TestOpenAPIRoutes fails when one of them is served, so the list only
// shrinks: delete a route here when its handler lands.
var notYetServed = []string{}

// openAPI is the parsed spec with a ServeMux that finds the operation
// of a request.
type openAPI struct {
	doc map[string]any
	mux *http.ServeMux
	ops map[string]map[string]any // by mux pattern
}

var (
	specOnce sync.Once
	spec     *openAPI
	errSpec  error
)

// loadSpec parses docs/openapi.yaml once per test binary.
func loadSpec(t *testing.T) *openAPI {
	t.Helper()
	specOnce.Do(func() { spec, errSpec = parseSpec(specPath) })
	if errSpec != nil {
		t.Fatalf("%s: %v", specPath, errSpec)
	}
	return spec
}

func parseSpec(path string) (*openAPI, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, err
	}
	o := &openAPI{mux: http.NewServeMux(), ops: map[string]map[string]any{}}
	if err := json.Unmarshal(j, &o.doc); err != nil {
		return nil, err
	}
	paths, _ := o.doc["paths"].(map[string]any)
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		item, _ := paths[p].(map[string]any)
		for method, v := range item {
			operation, ok := v.(map[string]any)
			if !ok {
				continue
			}
			pattern := strings.ToUpper(method) + " " + p
			if mp, ok := operation["x-eddy-mux-pattern"].(string); ok {
				pattern = mp
			}
			if _, dup := o.ops[pattern]; dup {
				return nil, fmt.Errorf("route %s described twice", pattern)
			}
			o.ops[pattern] = operation
			o.mux.Handle(pattern, http.NotFoundHandler())
		}
	}
	return o, nil
}

// patterns are the spec's routes as ServeMux patterns.
func (o *openAPI) patterns() []string { return slices.Sorted(maps.Keys(o.ops)) }

// stubMetrics lets the route test build a server that serves /metrics.
type stubMetrics struct{}

func (stubMetrics) ObserveHTTP(string, string, int, time.Duration) {}
func (stubMetrics) Handler() http.Handler                          { return http.NotFoundHandler() }

func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	o := loadSpec(t)
	s := newServer(t, Config{Logger: slog.New(slog.DiscardHandler), Metrics: stubMetrics{}})
	served := map[string]bool{}
	for _, p := range s.patterns {
		served[p] = true
	}
	described := map[string]bool{}
	for _, p := range o.patterns() {
		described[p] = true
	}
	pending := map[string]bool{}
	for _, p := range notYetServed {
		pending[p] = true
		if served[p] {
			t.Errorf("%s is served now: delete it from notYetServed", p)
		}
		if !described[p] {
			t.Errorf("%s is in notYetServed but not in %s", p, specPath)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(served)) {
		if !described[p] {
			t.Errorf("the server serves %s, which %s does not describe", p, specPath)
		}
	}
	for _, p := range o.patterns() {
		if !served[p] && !pending[p] {
			t.Errorf("%s describes %s, which the server does not serve", specPath, p)
		}
	}
}

// checkResponse checks a response of the server against the spec: the
// route and status must be documented (error statuses fall to the
// operation's 4XX and 5XX, a problem object) and a JSON body must match the
// response's schema. env.do calls it for every request the HTTP tests
// make.
func checkResponse(t *testing.T, r *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if err := loadSpec(t).check(r, status, header, body); err != nil {
		t.Errorf("%s %s answered %d against %s: %v\nbody: %.2000s", r.Method, r.URL.Path, status, specPath, err, body)
	}
}

func (o *openAPI) check(r *http.Request, status int, header http.Header, body []byte) error {
	ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if r.Method == http.MethodOptions && status == http.StatusNoContent {
		return nil // a CORS preflight, answered for every route (operations.md)
	}
	_, pattern := o.mux.Handler(r)
	operation := o.ops[pattern]
	var schema any
	switch {
	case operation == nil && status >= 400:
		schema = map[string]any{"$ref": "#/components/schemas/Problem"}
	case operation == nil:
		return fmt.Errorf("no operation describes this route")
	default:
		responses, _ := operation["responses"].(map[string]any)
		resp, ok := responses[strconv.Itoa(status)]
		if !ok {
			resp, ok = responses[strconv.Itoa(status/100)+"XX"]
		}
		if !ok {
			resp, ok = responses["default"]
		}
		if !ok {
			return fmt.Errorf("status %d is not documented for %s", status, pattern)
		}
		resp = o.resolve(resp)
		content, _ := resp.(map[string]any)["content"].(map[string]any)
		if len(body) == 0 || r.Method == http.MethodHead {
			return nil
		}
		media, ok := content[ct].(map[string]any)
		if !ok {
			media, ok = content["*/*"].(map[string]any)
		}
		if !ok {
			return fmt.Errorf("content type %q is not documented for %d (documented: %v)", ct, status, slices.Sorted(maps.Keys(content)))
		}
		schema = media["schema"]
	}
	if ct != "application/json" {
		return nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	return o.validate(schema, v, "$")
}

// resolve follows a $ref within the spec.
func (o *openAPI) resolve(v any) any {
	for {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		var cur any = o.doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur, _ = cur.(map[string]any)[part]
		}
		v = cur
	}
}

// validate checks v against the subset of JSON Schema the spec uses:
// $ref, type (one or a list), enum, properties, required,
// additionalProperties, items, oneOf, anyOf and allOf.
func (o *openAPI) validate(schema, v any, at string) error {
	s, ok := o.resolve(schema).(map[string]any)
	if !ok {
		return nil
	}
	if err := o.validateCombinators(s, v, at); err != nil {
		return err
	}
	if t, ok := s["type"]; ok && !typeMatches(t, v) {
		return fmt.Errorf("%s: %s is not of type %v", at, schemaKind(v), t)
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return equalJSON(e, v) }) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, enum)
	}
	switch v := v.(type) {
	case map[string]any:
		return o.validateObject(s, v, at)
	case []any:
		if items, ok := s["items"]; ok {
			for i, e := range v {
				if err := o.validate(items, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (o *openAPI) validateCombinators(s map[string]any, v any, at string) error {
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			if err := o.validate(sub, v, at); err != nil {
				return err
			}
		}
	}
	if anyOf, ok := s["anyOf"].([]any); ok && !slices.ContainsFunc(anyOf, func(sub any) bool { return o.validate(sub, v, at) == nil }) {
		return fmt.Errorf("%s: matches none of anyOf", at)
	}
	if oneOf, ok := s["oneOf"].([]any); ok {
		n, errs := 0, []string{}
		for _, sub := range oneOf {
			if err := o.validate(sub, v, at); err == nil {
				n++
			} else {
				errs = append(errs, err.Error())
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: matches %d of oneOf, want 1 (%s)", at, n, strings.Join(errs, "; "))
		}
	}
	return nil
}

func (o *openAPI) validateObject(s map[string]any, v map[string]any, at string) error {
	props, _ := s["properties"].(map[string]any)
	if req, ok := s["required"].([]any); ok {
		for _, k := range req {
			if _, ok := v[k.(string)]; !ok {
				return fmt.Errorf("%s: required property %q is missing", at, k)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(v)) {
		if ps, ok := props[k]; ok {
			if err := o.validate(ps, v[k], at+"."+k); err != nil {
				return err
			}
			continue
		}
		switch addl := s["additionalProperties"].(type) {
		case bool:
			if !addl {
				return fmt.Errorf("%s: property %q is not allowed", at, k)
			}
		case map[string]any:
			if err := o.validate(addl, v[k], at+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

// typeMatches reports whether v is of the schema type t (a name or a
// list of names).
func typeMatches(t, v any) bool {
	switch t := t.(type) {
	case string:
		k := schemaKind(v)
		return k == t || (t == "number" && k == "integer")
	case []any:
		return slices.ContainsFunc(t, func(e any) bool { return typeMatches(e, v) })
	}
	return false
}

// schemaKind names the JSON Schema type of a decoded value.
func schemaKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if f, err := v.Float64(); err == nil && f == math.Trunc(f) && !strings.ContainsAny(v.String(), ".eE") {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func equalJSON(a, b any) bool {
	if n, ok := b.(json.Number); ok {
		b = n.String()
		a = fmt.Sprint(a)
	}
	return reflect.DeepEqual(a, b)
}

// TestOpenAPISchemaCheck shows the checker rejects what it must.
func TestOpenAPISchemaCheck(t *testing.T) {
	t.Parallel()
	o := loadSpec(t)
	entity := `{"type":"task","id":"t1","version":1,"properties":{},"links":[],"createdAt":"x","updatedAt":"x"}`
	tests := []struct {
		name, method, path string
		status             int
		body               string
		ok                 bool
	}{
		{"an entity", "GET", "/api/v1/spaces/default/entities/task/t1", 200, entity, true},
		{"version missing", "GET", "/api/v1/spaces/default/entities/task/t1", 200, `{"type":"task","id":"t1","properties":{}}`, false},
		{"version a string", "GET", "/api/v1/spaces/default/entities/task/t1", 200, strings.Replace(entity, `"version":1`, `"version":"1"`, 1), false},
		{"version not an integer", "GET", "/api/v1/spaces/default/entities/task/t1", 200, strings.Replace(entity, `"version":1`, `"version":1.5`, 1), false},
		{"a property the spec does not name", "GET", "/api/v1/spaces/default/entities/task/t1", 200, strings.Replace(entity, `"version":1`, `"version":1,"colour":"red"`, 1), false},
		{"a receipt property the spec does not name", "PUT", "/api/v1/spaces/default/entities/task/t1", 200, `{"receipt":{"status":"applied","x":1},"entity":null}`, false},
		{"undocumented status", "GET", "/api/v1/spaces/default/entities/task/t1", 201, entity, false},
		{"a problem", "GET", "/api/v1/spaces/default/entities/task/t1", 404, `{"error":{"code":"not_found","message":"no"}}`, true},
		{"an unknown problem code", "GET", "/api/v1/spaces/default/entities/task/t1", 404, `{"error":{"code":"missing","message":"no"}}`, false},
		{"a problem on an unknown route", "GET", "/nowhere", 404, `{"error":{"code":"not_found","message":"no"}}`, true},
		{"success on an unknown route", "GET", "/nowhere", 200, `{}`, false},
		{"a write", "PUT", "/api/v1/spaces/default/entities/task/t1", 201, `{"receipt":{"status":"applied"},"entity":` + entity + `}`, true},
		{"a delete", "DELETE", "/api/v1/spaces/default/entities/task/t1", 200, `{"receipt":{"status":"applied"},"entity":null}`, true},
		{"a write without entity", "PUT", "/api/v1/spaces/default/entities/task/t1", 200, `{"receipt":{"status":"applied"}}`, false},
		{"a bad receipt status", "PUT", "/api/v1/spaces/default/entities/task/t1", 200, `{"receipt":{"status":"maybe"},"entity":null}`, false},
		{"a page item of the wrong shape", "GET", "/api/v1/spaces/default/entities/task", 200, `{"items":[{"id":"t1"}],"head":1}`, false},
	}
	for _, tc := range tests {
		r, _ := http.NewRequest(tc.method, "http://x"+tc.path, nil)
		h := http.Header{"Content-Type": {"application/json"}}
		err := o.check(r, tc.status, h, []byte(tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("%s: check = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
