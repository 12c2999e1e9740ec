package functions

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func TestParseFunctionValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
	}{
		{"expr", `{"kind": "expr", "writes": ["task"], "code": "patch(\"task\", entity.id, {\"completedAt\": now})"}`,
			`{"name":"f","kind":"expr","writes":["task"],"code":"patch(\"task\", entity.id, {\"completedAt\": now})"}`},
		{"expr writes sorted and distinct", `{"kind":"expr","writes":["user","task","user"],"code":"nil"}`,
			`{"name":"f","kind":"expr","writes":["task","user"],"code":"nil"}`},
		{"expr no writes", `{"kind":"expr","code":"nil"}`, `{"name":"f","kind":"expr","writes":[],"code":"nil"}`},
		{"webhook default timeout", `{"kind":"webhook","writes":["task"],"url":"http://127.0.0.1:9000/hook","secret":"` + testSecret + `"}`,
			`{"name":"f","kind":"webhook","writes":["task"],"url":"http://127.0.0.1:9000/hook","secret":"` + testSecret + `","timeout":"10s"}`},
		{"webhook timeout", `{"kind":"webhook","url":"https://example.com/h?a=1","timeout":"1500ms"}`,
			`{"name":"f","kind":"webhook","writes":[],"url":"https://example.com/h?a=1","timeout":"1.5s"}`},
		{"go", `{"kind":"go","handler":"sync-to-crm"}`, `{"name":"f","kind":"go","writes":[],"handler":"sync-to-crm"}`},
		{"name in body", `{"name":"f","kind":"go","handler":"h"}`, `{"name":"f","kind":"go","writes":[],"handler":"h"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := ParseFunction("f", []byte(tt.body))
			if err != nil {
				t.Fatalf("ParseFunction: %v", err)
			}
			got, err := json.Marshal(f)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			again, err := ParseFunction("f", got)
			if err != nil {
				t.Fatalf("round trip: %v", err)
			}
			if b, _ := json.Marshal(again); string(b) != tt.want {
				t.Fatalf("round trip changed it: %s", b)
			}
		})
	}
}

func TestParseFunctionErrors(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxCodeLen+1)
	tests := []struct {
		name, fname, body, field string
	}{
		{"bad name", "Bad Name", `{"kind":"go","handler":"h"}`, "name"},
		{"name mismatch", "f", `{"name":"g","kind":"go","handler":"h"}`, "name"},
		{"unknown field", "f", `{"kind":"go","handler":"h","color":"red"}`, "color"},
		{"wrong type", "f", `{"kind":"go","handler":7}`, "handler"},
		{"no kind", "f", `{"handler":"h"}`, "kind"},
		{"unknown kind", "f", `{"kind":"lua"}`, "kind"},
		{"bad writes", "f", `{"kind":"go","handler":"h","writes":["Task"]}`, "writes"},
		{"writes not a list", "f", `{"kind":"go","handler":"h","writes":"task"}`, "writes"},
		{"expr without code", "f", `{"kind":"expr"}`, "code"},
		{"expr blank code", "f", `{"kind":"expr","code":"  "}`, "code"},
		{"expr code too long", "f", `{"kind":"expr","code":"` + long + `"}`, "code"},
		{"expr with url", "f", `{"kind":"expr","code":"nil","url":"http://x"}`, "url"},
		{"expr with timeout", "f", `{"kind":"expr","code":"nil","timeout":"1s"}`, "timeout"},
		{"expr compile error", "f", `{"kind":"expr","code":"foo"}`, "code"},
		{"webhook without url", "f", `{"kind":"webhook"}`, "url"},
		{"webhook relative url", "f", `{"kind":"webhook","url":"/hook"}`, "url"},
		{"webhook ftp url", "f", `{"kind":"webhook","url":"ftp://example.com/"}`, "url"},
		{"webhook no host", "f", `{"kind":"webhook","url":"http:///x"}`, "url"},
		{"webhook credentials", "f", `{"kind":"webhook","url":"https://u:p@example.com/"}`, "url"},
		{"webhook bad url", "f", `{"kind":"webhook","url":"http://[::1"}`, "url"},
		{"webhook long url", "f", `{"kind":"webhook","url":"http://x/` + strings.Repeat("a", MaxURLLen) + `"}`, "url"},
		{"webhook secret prefix", "f", `{"kind":"webhook","url":"http://x","secret":"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, "secret"},
		{"webhook secret base64", "f", `{"kind":"webhook","url":"http://x","secret":"whsec_!!!"}`, "secret"},
		{"webhook secret empty key", "f", `{"kind":"webhook","url":"http://x","secret":"whsec_"}`, "secret"},
		{"webhook bad timeout", "f", `{"kind":"webhook","url":"http://x","timeout":"soon"}`, "timeout"},
		{"webhook zero timeout", "f", `{"kind":"webhook","url":"http://x","timeout":"0s"}`, "timeout"},
		{"webhook negative timeout", "f", `{"kind":"webhook","url":"http://x","timeout":"-1s"}`, "timeout"},
		{"webhook huge timeout", "f", `{"kind":"webhook","url":"http://x","timeout":"24h"}`, "timeout"},
		{"webhook with code", "f", `{"kind":"webhook","url":"http://x","code":"nil"}`, "code"},
		{"webhook with handler", "f", `{"kind":"webhook","url":"http://x","handler":"h"}`, "handler"},
		{"go without handler", "f", `{"kind":"go"}`, "handler"},
		{"go bad handler", "f", `{"kind":"go","handler":"a b"}`, "handler"},
		{"go with secret", "f", `{"kind":"go","handler":"h","secret":"` + testSecret + `"}`, "secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseFunction(tt.fname, []byte(tt.body))
			pe := badRequest(t, err)
			if pe.Details["field"] != tt.field {
				t.Fatalf("details.field = %v, want %q (%v)", pe.Details["field"], tt.field, err)
			}
		})
	}
}

func TestParseFunctionMalformed(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `[]`, `{"kind":`, `{"kind":"go","handler":"h"} {}`, `null x`} {
		_, err := ParseFunction("f", []byte(body))
		badRequest(t, err)
	}
}

// badRequest asserts err is a bad_request *problem.Error and returns it.
func badRequest(t *testing.T, err error) *problem.Error {
	t.Helper()
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != problem.BadRequest {
		t.Fatalf("got %v, want a bad_request *problem.Error", err)
	}
	return pe
}

func TestParseFunctionCompilePosition(t *testing.T) {
	t.Parallel()
	_, err := ParseFunction("f", []byte(`{"kind":"expr","code":"nil ??\n  missing"}`))
	pe := badRequest(t, err)
	pos, ok := pe.Details["position"].(map[string]int)
	if !ok || pos["line"] != 2 || pos["column"] != 3 {
		t.Fatalf("position = %v, want line 2 column 3 (%v)", pe.Details["position"], err)
	}
}

func TestFunctionPublic(t *testing.T) {
	t.Parallel()
	f, err := ParseFunction("hook", []byte(`{"kind":"webhook","url":"http://x","secret":"`+testSecret+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(f.Public())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "whsec_") || strings.Contains(string(b), "secret") {
		t.Fatalf("public view shows the secret: %s", b)
	}
	if f.Secret != testSecret {
		t.Fatal("Public changed the original")
	}
	if f.Timeout != 10*time.Second {
		t.Fatalf("timeout = %v, want the default", f.Timeout)
	}
}

func TestFunctionUnmarshalJSON(t *testing.T) {
	t.Parallel()
	var f Function
	if err := json.Unmarshal([]byte(`{"name":"g","kind":"expr","code":"nil"}`), &f); err != nil {
		t.Fatal(err)
	}
	if f.Name != "g" || f.Program() == nil {
		t.Fatalf("got %+v", f)
	}
	named := Function{Name: "h"}
	if err := json.Unmarshal([]byte(`{"kind":"go","handler":"x"}`), &named); err != nil || named.Handler != "x" {
		t.Fatalf("got %+v, %v", named, err)
	}
	var nameless Function
	if err := json.Unmarshal([]byte(`{"kind":"go","handler":"x"}`), &nameless); err == nil {
		t.Fatal("decoded a definition without a name")
	}
}

func TestCheckWrites(t *testing.T) {
	t.Parallel()
	put := changelog.Mutation{Op: "put", Type: "task", EntityID: "t1"}
	link := changelog.Mutation{Op: "link", Type: "task", EntityID: "t1", Rel: "owner", Target: &store.EntityKey{Type: "user", ID: "u"}}
	merge := changelog.Mutation{Op: "merge", Type: "task", EntityID: "a", From: &store.EntityKey{Type: "note", ID: "b"}}
	tests := []struct {
		name    string
		writes  []string
		actions []changelog.Mutation
		wantErr bool
	}{
		{"none", nil, nil, false},
		{"declared", []string{"task"}, []changelog.Mutation{put}, false},
		{"undeclared", []string{"user"}, []changelog.Mutation{put}, true},
		{"nothing declared", nil, []changelog.Mutation{put}, true},
		{"link writes its source only", []string{"task"}, []changelog.Mutation{link}, false},
		{"merge writes both", []string{"task"}, []changelog.Mutation{merge}, true},
	}
	for _, tt := range tests {
		err := CheckWrites(tt.writes, tt.actions)
		if (err != nil) != tt.wantErr || err != nil && !errors.Is(err, ErrUndeclaredWrite) {
			t.Errorf("%s: CheckWrites = %v, want error %v", tt.name, err, tt.wantErr)
		}
	}
}

func TestFunctionRunExpr(t *testing.T) {
	t.Parallel()
	in := Input{Entity: &store.Record{Type: "task", ID: "t1"}}
	tests := []struct {
		name, def string
		wantErr   error
	}{
		{"declared", `{"kind":"expr","writes":["task"],"code":"put(\"task\", entity.id, {})"}`, nil},
		{"undeclared", `{"kind":"expr","writes":["user"],"code":"put(\"task\", entity.id, {})"}`, ErrUndeclaredWrite},
	}
	for _, tt := range tests {
		f, err := ParseFunction("f", []byte(tt.def))
		if err != nil {
			t.Fatal(err)
		}
		ms, err := f.RunExpr(t.Context(), in)
		if !errors.Is(err, tt.wantErr) || err == nil && len(ms) != 1 {
			t.Errorf("%s: got %v, %v; want error %v", tt.name, ms, err, tt.wantErr)
		}
	}
	g, _ := ParseFunction("g", []byte(`{"kind":"go","handler":"h"}`))
	if _, err := g.RunExpr(t.Context(), in); err == nil {
		t.Error("RunExpr ran a go function")
	}
}
