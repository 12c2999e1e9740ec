package changelog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/problem"
)

// designBatch is the example body of DESIGN.md section 2.
const designBatch = `{"atomic": false, "mutations": [
  {"mutationId": "m-1", "op": "put", "type": "task", "entityId": "t1", "properties": {"title": "x"}},
  {"op": "patch", "type": "task", "entityId": "t1", "patch": {"status": "done", "note": null}, "ifVersion": 7},
  {"op": "patch", "type": "task", "entityId": "t1", "patch": {"dueAt": "2026-12-01"}, "baseVersion": 5},
  {"op": "delete", "type": "task", "entityId": "t2"},
  {"op": "link", "type": "task", "entityId": "t1", "rel": "assignee", "target": {"type": "user", "id": "u1"}},
  {"op": "unlink", "type": "task", "entityId": "t1", "rel": "assignee", "target": {"type": "user", "id": "u1"}},
  {"op": "merge", "type": "task", "entityId": "a", "from": {"type": "task", "id": "b"}},
  {"op": "split", "type": "task", "entityId": "a", "into": {"id": "c"}, "properties": ["y"]}]}`

func TestMutationNames(t *testing.T) {
	t.Parallel()
	types := map[string]bool{
		"task": true, "task.tasks.teild.dev": true, "a-b.c-1": true, "a": true, "x1": true,
		"": false, "Task": false, "1task": false, "task.": false, ".task": false, "task..x": false,
		"ta_sk": false, "-task": false, strings.Repeat("a", 128): true, strings.Repeat("a", 129): false,
	}
	for s, want := range types {
		if got := ValidTypeName(s); got != want {
			t.Errorf("ValidTypeName(%q) = %v, want %v", s, got, want)
		}
	}
	ids := map[string]bool{
		"t1": true, "kq3v9x2m41pf": true, "A.b_c:d-E": true, "": false, "a b": false, "a/b": false,
		"é": false, ".": false, "..": false, "...": true, ".a": true, strings.Repeat("x", 128): true, strings.Repeat("x", 129): false,
	}
	for s, want := range ids {
		if got := ValidID(s); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", s, got, want)
		}
	}
}

// The names' grammars as regular expressions: ValidTypeName and ValidID
// must agree with them on every string.
var (
	typeNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*(\.[a-z0-9-]+)*$`)
	idRE       = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
)

// FuzzNames checks ValidTypeName and ValidID against their grammars.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"task", "a.b-c.d1", "a..b", "a.", ".", "..", "...", "A.b_c:d-E", "é", "\xff", strings.Repeat("a", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidTypeName(s), len(s) <= MaxNameLen && typeNameRE.MatchString(s); got != want {
			t.Errorf("ValidTypeName(%q) = %v, want %v", s, got, want)
		}
		if got, want := ValidID(s), s != "." && s != ".." && idRE.MatchString(s); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", s, got, want)
		}
	})
}

func TestValidateMutation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, mut, field string // field "" = valid
	}{
		{"put", `{"op":"put","type":"task","entityId":"t1","properties":{"a":1}}`, ""},
		{"put empty object", `{"op":"put","type":"task","entityId":"t1","properties":{}}`, ""},
		{"patch", `{"op":"patch","type":"task","entityId":"t1","patch":{"a":null},"ifVersion":0,"baseVersion":3}`, ""},
		{"delete", `{"op":"delete","type":"task","entityId":"t1","ifVersion":2}`, ""},
		{"link", `{"op":"link","type":"task","entityId":"t1","rel":"assignee","target":{"type":"user","id":"u1"}}`, ""},
		{"merge", `{"op":"merge","type":"task","entityId":"a","from":{"type":"task","id":"b"}}`, ""},
		{"merge other type", `{"op":"merge","type":"task","entityId":"a","from":{"type":"note","id":"a"}}`, ""},
		{"split", `{"op":"split","type":"task","entityId":"a","into":{"id":"c","type":"note"},"properties":["y","z"]}`, ""},
		{"no op", `{"type":"task","entityId":"t1"}`, "op"},
		{"unknown op", `{"op":"upsert","type":"task","entityId":"t1"}`, "op"},
		{"fire", `{"op":"fire","type":"eddy.trigger","entityId":"t1"}`, "op"},
		{"park", `{"op":"park","type":"eddy.delivery","entityId":"d1"}`, "op"},
		{"bad type", `{"op":"delete","type":"Task","entityId":"t1"}`, "type"},
		{"bad id", `{"op":"delete","type":"task","entityId":"a/b"}`, "entityId"},
		{"empty id", `{"op":"delete","type":"task","entityId":""}`, "entityId"},
		{"long mutation id", `{"mutationId":"` + strings.Repeat("m", 129) + `","op":"delete","type":"task","entityId":"t1"}`, "mutationId"},
		{"negative ifVersion", `{"op":"delete","type":"task","entityId":"t1","ifVersion":-1}`, "ifVersion"},
		{"negative baseVersion", `{"op":"patch","type":"task","entityId":"t1","patch":{},"baseVersion":-2}`, "baseVersion"},
		{"put without properties", `{"op":"put","type":"task","entityId":"t1"}`, "properties"},
		{"put null properties", `{"op":"put","type":"task","entityId":"t1","properties":null}`, "properties"},
		{"put array properties", `{"op":"put","type":"task","entityId":"t1","properties":[1]}`, "properties"},
		{"patch without patch", `{"op":"patch","type":"task","entityId":"t1"}`, "patch"},
		{"patch not object", `{"op":"patch","type":"task","entityId":"t1","patch":"x"}`, "patch"},
		{"patch on delete", `{"op":"delete","type":"task","entityId":"t1","patch":{"a":1}}`, "patch"},
		{"properties on patch", `{"op":"patch","type":"task","entityId":"t1","patch":{},"properties":{}}`, "properties"},
		{"baseVersion on delete", `{"op":"delete","type":"task","entityId":"t1","baseVersion":1}`, "baseVersion"},
		{"rel on put", `{"op":"put","type":"task","entityId":"t1","properties":{},"rel":"x"}`, "rel"},
		{"from on split", `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":["y"],"from":{"type":"task","id":"b"}}`, "from"},
		{"link without rel", `{"op":"link","type":"task","entityId":"t1","target":{"type":"user","id":"u1"}}`, "rel"},
		{"link bad rel", `{"op":"link","type":"task","entityId":"t1","rel":"a b","target":{"type":"user","id":"u1"}}`, "rel"},
		{"link without target", `{"op":"unlink","type":"task","entityId":"t1","rel":"x"}`, "target"},
		{"link bad target type", `{"op":"link","type":"task","entityId":"t1","rel":"x","target":{"type":"","id":"u1"}}`, "target.type"},
		{"link bad target id", `{"op":"link","type":"task","entityId":"t1","rel":"x","target":{"type":"user","id":""}}`, "target.id"},
		{"merge without from", `{"op":"merge","type":"task","entityId":"a"}`, "from"},
		{"merge into itself", `{"op":"merge","type":"task","entityId":"a","from":{"type":"task","id":"a"}}`, "from"},
		{"merge bad from id", `{"op":"merge","type":"task","entityId":"a","from":{"type":"task","id":"?"}}`, "from.id"},
		{"split without into", `{"op":"split","type":"task","entityId":"a","properties":["y"]}`, "into"},
		{"split bad into id", `{"op":"split","type":"task","entityId":"a","into":{"id":""},"properties":["y"]}`, "into.id"},
		{"split bad into type", `{"op":"split","type":"task","entityId":"a","into":{"id":"c","type":"X"},"properties":["y"]}`, "into.type"},
		{"split without properties", `{"op":"split","type":"task","entityId":"a","into":{"id":"c"}}`, "properties"},
		{"split empty properties", `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":[]}`, "properties"},
		{"split object properties", `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":{"y":1}}`, "properties"},
		{"split duplicate", `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":["y","y"]}`, "properties"},
		{"engine type eddy.trigger", `{"op":"put","type":"eddy.trigger","entityId":"t1","properties":{}}`, "type"},
		{"engine type eddy.delivery", `{"op":"delete","type":"eddy.delivery","entityId":"d1"}`, "type"},
		{"any eddy. type", `{"op":"patch","type":"eddy.x","entityId":"d1","patch":{}}`, "type"},
		{"split into an engine type", `{"op":"split","type":"task","entityId":"a","into":{"id":"c","type":"eddy.trigger"},"properties":["y"]}`, "into.type"},
		{"id .", `{"op":"delete","type":"task","entityId":"."}`, "entityId"},
		{"id ..", `{"op":"delete","type":"task","entityId":".."}`, "entityId"},
		{"duplicate property", `{"op":"put","type":"task","entityId":"t1","properties":{"a":1,"a":2}}`, "properties"},
		{"nested duplicate in a patch", `{"op":"patch","type":"task","entityId":"t1","patch":{"x":{"a":1,"a":null}}}`, "patch"},
		{"number out of range", `{"op":"put","type":"task","entityId":"t1","properties":{"a":-1e400}}`, "properties"},
		{"invalid UTF-8", "{\"op\":\"put\",\"type\":\"task\",\"entityId\":\"t1\",\"properties\":{\"a\":\"\xff\"}}", "properties"},
		{"split empty name", `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":[""]}`, "properties"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var m Mutation
			if err := json.Unmarshal([]byte(tt.mut), &m); err != nil {
				t.Fatal(err)
			}
			err := ValidateMutation(&m)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("ValidateMutation: %v", err)
				}
				return
			}
			pe := asProblem(t, err, problem.BadRequest)
			if got := pe.Details["field"]; got != tt.field {
				t.Errorf("field = %v, want %s (%v)", got, tt.field, pe)
			}
		})
	}
}

func TestDecodeMutations(t *testing.T) {
	t.Parallel()
	ms, atomic, err := DecodeMutations(strings.NewReader(designBatch))
	if err != nil {
		t.Fatalf("DecodeMutations: %v", err)
	}
	if atomic || len(ms) != 8 {
		t.Fatalf("got atomic %v, %d mutations", atomic, len(ms))
	}
	if ms[0].MutationID != "m-1" || *ms[1].IfVersion != 7 || *ms[2].BaseVersion != 5 || ms[4].Target.ID != "u1" ||
		ms[6].From.ID != "b" || ms[7].Into.ID != "c" {
		t.Errorf("decoded = %+v", ms)
	}
	_, atomic, err = DecodeMutations(strings.NewReader(`{"mutations":[{"op":"delete","type":"t","entityId":"x"}],"atomic":true}`))
	if err != nil || !atomic {
		t.Errorf("atomic = %v, %v", atomic, err)
	}
}

func TestDecodeMutationsInvalid(t *testing.T) {
	t.Parallel()
	del := `{"op":"delete","type":"task","entityId":"t1"}`
	many := strings.TrimSuffix(strings.Repeat(del+",", MaxMutations+1), ",")
	tests := []struct {
		name, body, field string
		index             int // -1: none
	}{
		{"empty body", ``, "", -1},
		{"not json", `{"mutations":`, "", -1},
		{"array", `[]`, "", -1},
		{"unknown field", `{"mutations":[` + del + `],"extra":1}`, "extra", -1},
		{"unknown mutation field", `{"mutations":[{"op":"delete","type":"task","entityId":"t1","IfMatch":true}]}`, "IfMatch", -1},
		{"trailing data", `{"mutations":[` + del + `]} {}`, "", -1},
		{"no mutations", `{"atomic":true}`, "mutations", -1},
		{"empty mutations", `{"mutations":[]}`, "mutations", -1},
		{"too many", `{"mutations":[` + many + `]}`, "mutations", -1},
		{"atomic not bool", `{"atomic":"yes","mutations":[` + del + `]}`, "atomic", -1},
		{"invalid second", `{"mutations":[` + del + `,{"op":"put","type":"task","entityId":"t2"}]}`, "properties", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := DecodeMutations(strings.NewReader(tt.body))
			pe := asProblem(t, err, problem.BadRequest)
			if tt.field != "" && pe.Details["field"] != tt.field {
				t.Errorf("field = %v, want %s (%v)", pe.Details["field"], tt.field, pe)
			}
			if tt.index >= 0 && pe.Details["index"] != tt.index {
				t.Errorf("index = %v, want %d (%v)", pe.Details["index"], tt.index, pe)
			}
		})
	}
}

func FuzzDecodeMutations(f *testing.F) {
	f.Add([]byte(designBatch))
	var body struct {
		Mutations []json.RawMessage `json:"mutations"`
	}
	if err := json.Unmarshal([]byte(designBatch), &body); err != nil {
		f.Fatal(err)
	}
	for _, m := range body.Mutations {
		f.Add([]byte(fmt.Sprintf(`{"atomic": true, "mutations": [%s]}`, m)))
	}
	f.Add([]byte(`{"mutations": []}`))
	f.Add([]byte(`{"mutations": [{"op": "fire", "type": "eddy.trigger", "entityId": "t"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, _, err := DecodeMutations(bytes.NewReader(data))
		if err != nil {
			if problem.CodeOf(err) != problem.BadRequest {
				t.Fatalf("error is not bad_request: %v", err)
			}
			return
		}
		if len(ms) == 0 || len(ms) > MaxMutations {
			t.Fatalf("accepted %d mutations", len(ms))
		}
		for i := range ms {
			if err := ValidateMutation(&ms[i]); err != nil {
				t.Fatalf("accepted an invalid mutation: %v", err)
			}
			// A decoded mutation re-encodes and decodes to itself.
			raw, err := json.Marshal(ms[i])
			if err != nil {
				t.Fatal(err)
			}
			again, _, err := DecodeMutations(bytes.NewReader([]byte(`{"mutations":[` + string(raw) + `]}`)))
			if err != nil {
				t.Fatalf("re-decoding %s: %v", raw, err)
			}
			if _, err := json.Marshal(again[0]); err != nil {
				t.Fatal(err)
			}
			// Applying a valid mutation never panics.
			_ = Apply(ms[i], ApplyEnv{Seq: 1})
		}
	})
}

// TestValidateObjectKinds: a properties value the strict gate accepts
// but that is not an object is refused naming the kind decoding it would
// give, without decoding it.
func TestValidateObjectKinds(t *testing.T) {
	t.Parallel()
	for _, text := range []string{`[1]`, ` "x"`, `1.5`, `-0`, `true`, `false`, "\n[]", `{"a":[1]}`, ` {}`} {
		v, err := decodeJSON([]byte(text))
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		want := kindOfValue(v)
		if got := kindOfText([]byte(text)); got != want {
			t.Errorf("kindOfText(%q) = %s, decoding gives %s", text, got, want)
		}
		err = validateObject("properties", json.RawMessage(text))
		switch {
		case want == "object" && err != nil:
			t.Errorf("%q: %v, want accepted", text, err)
		case want != "object" && (err == nil || !strings.Contains(err.Error(), "not a JSON object: "+want)):
			t.Errorf("%q: %v, want not a JSON object: %s", text, err, want)
		}
	}
}
