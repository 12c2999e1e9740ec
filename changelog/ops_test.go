package changelog

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

func TestApplySchema(t *testing.T) {
	t.Parallel()
	defs := map[string]string{"task": taskDef, "note": `{"strict": true, "properties": {"body": {"kind": "string"}},
		"states": {"phase": {"transitions": {"draft": ["final"], "final": []}}}}`}
	open := live("task", "t1", 3, `{"status":"open","title":"x"}`)
	done := live("task", "t1", 3, `{"status":"done","title":"x"}`)
	unproc := func(p string) []store.RejectedProperty {
		return []store.RejectedProperty{{Property: p, Reason: problem.Unprocessable}}
	}
	runApplyCases(t, []applyCase{
		{name: "create takes initial", defs: defs, mut: `{"op":"put","type":"task","entityId":"t1","properties":{"title":"x"}}`,
			status: store.ReceiptApplied, payload: `{"created":true,"properties":["title"],"state":{"status":"open"}}`,
			props: `{"status":"open","title":"x"}`},
		{name: "create with a declared state", defs: defs, mut: `{"op":"put","type":"task","entityId":"t1","properties":{"title":"x","status":"done"}}`,
			status: store.ReceiptApplied, payload: `{"created":true,"properties":["status","title"],"state":{"status":"done"}}`},
		{name: "create with an undeclared state", defs: defs, mut: `{"op":"put","type":"task","entityId":"t1","properties":{"title":"x","status":"lost"}}`,
			status: store.ReceiptRejected, code: problem.Unprocessable, rejected: unproc("status")},
		{name: "allowed transition", defs: defs, recs: []store.Record{open},
			mut:    `{"op":"patch","type":"task","entityId":"t1","patch":{"status":"doing"}}`,
			status: store.ReceiptApplied, payload: `{"properties":["status"],"state":{"status":"doing"}}`},
		{name: "forbidden transition", defs: defs, recs: []store.Record{done},
			mut:    `{"op":"patch","type":"task","entityId":"t1","patch":{"status":"open"}}`,
			status: store.ReceiptRejected, code: problem.Conflict,
			rejected: []store.RejectedProperty{{Property: "status", Reason: problem.Conflict}}},
		{name: "state unchanged no state payload", defs: defs, recs: []store.Record{done},
			mut:    `{"op":"patch","type":"task","entityId":"t1","patch":{"title":"y"}}`,
			status: store.ReceiptApplied, payload: `{"properties":["title"]}`},
		{name: "state not a string", defs: defs, recs: []store.Record{open},
			mut:    `{"op":"patch","type":"task","entityId":"t1","patch":{"status":1}}`,
			status: store.ReceiptRejected, code: problem.Unprocessable},
		{name: "removing a state with initial", defs: defs, recs: []store.Record{open},
			mut:    `{"op":"patch","type":"task","entityId":"t1","patch":{"status":null}}`,
			status: store.ReceiptRejected, code: problem.Conflict},
		{name: "removing a state without initial", defs: defs, recs: []store.Record{live("note", "n1", 2, `{"phase":"draft"}`)},
			mut: `{"op":"patch","type":"note","entityId":"n1","patch":{"phase":null}}`, status: store.ReceiptApplied, props: `{}`},
		{name: "state set later", defs: defs, recs: []store.Record{live("note", "n1", 2, `{}`)},
			mut:    `{"op":"patch","type":"note","entityId":"n1","patch":{"phase":"final"}}`,
			status: store.ReceiptApplied, payload: `{"properties":["phase"],"state":{"phase":"final"}}`},
		{name: "from an undeclared state", defs: defs, recs: []store.Record{live("task", "t1", 3, `{"status":"legacy","title":"x"}`)},
			mut: `{"op":"patch","type":"task","entityId":"t1","patch":{"status":"done"}}`, status: store.ReceiptApplied},
		{name: "wrong kind", defs: defs, mut: `{"op":"put","type":"task","entityId":"t1","properties":{"title":"x","points":1.5}}`,
			status: store.ReceiptRejected, code: problem.Unprocessable, rejected: unproc("points")},
		{name: "integer kind", defs: defs, mut: `{"op":"put","type":"task","entityId":"t1","properties":{"title":"x","points":2.0}}`,
			status: store.ReceiptApplied},
		{name: "timestamp kind", defs: defs, mut: `{"op":"put","type":"task","entityId":"t1","properties":{"title":"x","dueAt":"2026-12-01"}}`,
			status: store.ReceiptRejected, code: problem.Unprocessable, rejected: unproc("dueAt")},
		{name: "required missing", defs: defs, mut: `{"op":"put","type":"task","entityId":"t1","properties":{"points":1}}`,
			status: store.ReceiptRejected, code: problem.Unprocessable, rejected: unproc("title")},
		{name: "required null", defs: defs, mut: `{"op":"put","type":"task","entityId":"t1","properties":{"title":null}}`,
			status: store.ReceiptRejected, code: problem.Unprocessable},
		{name: "required removed by patch", defs: defs, recs: []store.Record{open},
			mut: `{"op":"patch","type":"task","entityId":"t1","patch":{"title":null}}`, status: store.ReceiptRejected, code: problem.Unprocessable},
		{name: "undeclared allowed when not strict", defs: defs, mut: `{"op":"put","type":"task","entityId":"t1","properties":{"title":"x","free":[1]}}`,
			status: store.ReceiptApplied},
		{name: "strict rejects undeclared", defs: defs, mut: `{"op":"put","type":"note","entityId":"n1","properties":{"body":"b","tag":"x"}}`,
			status: store.ReceiptRejected, code: problem.Unprocessable, rejected: unproc("tag")},
		{name: "strict accepts state fields", defs: defs, mut: `{"op":"put","type":"note","entityId":"n1","properties":{"body":"b","phase":"draft"}}`,
			status: store.ReceiptApplied, payload: `{"created":true,"properties":["body","phase"],"state":{"phase":"draft"}}`},
		{name: "unregistered type accepts anything", defs: defs, mut: `{"op":"put","type":"other","entityId":"o1","properties":{"status":1}}`,
			status: store.ReceiptApplied},
		{name: "link skips schema", defs: defs, recs: []store.Record{live("note", "n1", 2, `{"legacy":1}`)},
			mut:    `{"op":"link","type":"note","entityId":"n1","rel":"r","target":{"type":"user","id":"u"}}`,
			status: store.ReceiptApplied},
	})
}

func TestApplyLimits(t *testing.T) {
	// Not parallel: it shrinks the package limits.
	oldBytes, oldProps := MaxEntityBytes, MaxProperties
	MaxEntityBytes, MaxProperties = 32, 2
	t.Cleanup(func() { MaxEntityBytes, MaxProperties = oldBytes, oldProps })
	tests := []struct {
		props, code string
	}{
		{`{"a":1,"b":2}`, ""},
		{`{"a":1,"b":2,"c":3}`, problem.Unprocessable},
		{`{"a":"` + strings.Repeat("x", 40) + `"}`, problem.PayloadTooLarge},
	}
	for _, tt := range tests {
		out := Apply(mutation(t, `{"op":"put","type":"task","entityId":"t1","properties":`+tt.props+`}`), testEnv(t, nil))
		code := ""
		if out.Receipt.Reason != nil {
			code = out.Receipt.Reason.Code
		}
		if code != tt.code {
			t.Errorf("put %s: reason %+v, want %q", tt.props, out.Receipt.Reason, tt.code)
		}
	}
}

func TestApplyMerge(t *testing.T) {
	t.Parallel()
	a := withGroups(live("task", "a", 3, `{"title":"A","x":1}`, link("r", "user", "u1")), map[string]int64{"title": 3})
	b := live("task", "b", 4, `{"title":"B","y":2,"z":3}`, link("r", "user", "u1"), link("r", "user", "u2"))
	out := Apply(mutation(t, `{"mutationId":"m1","op":"merge","type":"task","entityId":"a","from":{"type":"task","id":"b"}}`),
		testEnv(t, nil, a, b))
	checkOutcome(t, applyCase{status: store.ReceiptApplied, payload: `{"merged":{"id":"b","type":"task"},"properties":["y","z"]}`,
		props: `{"title":"A","x":1,"y":2,"z":3}`, accepted: []string{"y", "z"}}, out)
	if len(out.Changes) != 2 {
		t.Fatalf("changes = %d", len(out.Changes))
	}
	ca, cb := out.Changes[0], out.Changes[1]
	if ca.Kind != store.ChangeUpdated || ca.ID != "a" || string(ca.Before.Properties) != `{"title":"A","x":1}` ||
		len(ca.After.Links) != 2 || !reflect.DeepEqual(ca.ConflictGroups, []string{"y", "z"}) {
		t.Errorf("change 0 = %s", jsonString(t, ca))
	}
	if cb.Kind != store.ChangeDeleted || cb.ID != "b" || cb.After != nil || string(cb.Before.Properties) != `{"title":"B","y":2,"z":3}` ||
		!reflect.DeepEqual(cb.ConflictGroups, []string{"title", "y", "z"}) {
		t.Errorf("change 1 = %s", jsonString(t, cb))
	}
	rb := out.Records[1]
	if rb.Kind != store.KindDeleted || rb.Version != applySeq || rb.ID != "b" {
		t.Errorf("record 1 = %+v", rb)
	}
	if gv := out.Records[0].GroupVersions; !maps.Equal(gv, map[string]int64{"title": 3, "y": applySeq, "z": applySeq}) {
		t.Errorf("group versions = %v", gv)
	}
	if out.Receipt.MutationID != "m1" || string(out.Receipt.Proposed) != `{"from":{"id":"b","type":"task"}}` {
		t.Errorf("receipt = %s", jsonString(t, out.Receipt))
	}
}

func TestApplyMergeCases(t *testing.T) {
	t.Parallel()
	a := live("task", "a", 3, `{"x":1}`)
	b := withGroups(live("task", "b", 4, `{"x":2}`), map[string]int64{"x": 4})
	runApplyCases(t, []applyCase{
		{name: "nothing to add still deletes", recs: []store.Record{a, b},
			mut:    `{"op":"merge","type":"task","entityId":"a","from":{"type":"task","id":"b"}}`,
			status: store.ReceiptApplied, payload: `{"merged":{"id":"b","type":"task"}}`, props: `{"x":1}`, accepted: []string{}},
		{name: "missing A", recs: []store.Record{b},
			mut: `{"op":"merge","type":"task","entityId":"a","from":{"type":"task","id":"b"}}`, status: store.ReceiptRejected, code: problem.NotFound},
		{name: "missing B", recs: []store.Record{a, tomb("task", "b", 5)},
			mut: `{"op":"merge","type":"task","entityId":"a","from":{"type":"task","id":"b"}}`, status: store.ReceiptRejected, code: problem.NotFound},
		{name: "ifVersion on A", recs: []store.Record{a, b},
			mut: `{"op":"merge","type":"task","entityId":"a","from":{"type":"task","id":"b"},"ifVersion":4}`, status: store.ReceiptRejected, code: problem.Conflict},
		{name: "base conflict rejects the merge", recs: []store.Record{withGroups(live("task", "a", 6, `{}`), map[string]int64{"x": 6}), b},
			mut:    `{"op":"merge","type":"task","entityId":"a","from":{"type":"task","id":"b"},"baseVersion":5}`,
			status: store.ReceiptRejected, code: problem.Conflict,
			rejected: []store.RejectedProperty{{Property: "x", Reason: problem.Conflict}}},
		{name: "strict target", defs: map[string]string{"task": `{"strict":true,"properties":{"x":{}}}`},
			recs: []store.Record{a, live("task", "b", 4, `{"q":1}`)},
			mut:  `{"op":"merge","type":"task","entityId":"a","from":{"type":"task","id":"b"}}`, status: store.ReceiptRejected, code: problem.Unprocessable},
	})
}

func TestApplySplit(t *testing.T) {
	t.Parallel()
	a := live("task", "a", 3, `{"x":1,"y":2,"z":3}`, link("r", "user", "u1"))
	out := Apply(mutation(t, `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":["z","y"]}`),
		testEnv(t, nil, a))
	checkOutcome(t, applyCase{status: store.ReceiptApplied, payload: `{"into":{"id":"c","type":"task"},"properties":["y","z"]}`,
		props: `{"x":1}`, accepted: []string{"y", "z"}}, out)
	ca, cc := out.Changes[0], out.Changes[1]
	if ca.Kind != store.ChangeUpdated || ca.ID != "a" || len(ca.After.Links) != 1 || !reflect.DeepEqual(ca.ConflictGroups, []string{"y", "z"}) {
		t.Errorf("change 0 = %s", jsonString(t, ca))
	}
	if cc.Kind != store.ChangeCreated || cc.ID != "c" || cc.Before != nil || string(cc.After.Properties) != `{"y":2,"z":3}` ||
		len(cc.After.Links) != 0 {
		t.Errorf("change 1 = %s", jsonString(t, cc))
	}
	rc := out.Records[1]
	if rc.Kind != store.KindLive || !rc.CreatedAt.Equal(tNow) || rc.Version != applySeq {
		t.Errorf("record 1 = %+v", rc)
	}
	if string(out.Receipt.Proposed) != `{"into":{"id":"c"},"properties":["z","y"]}` {
		t.Errorf("proposed = %s", out.Receipt.Proposed)
	}
}

func TestApplySplitCases(t *testing.T) {
	t.Parallel()
	a := withGroups(live("task", "a", 6, `{"x":1,"y":2}`), map[string]int64{"x": 6, "y": 2})
	runApplyCases(t, []applyCase{
		{name: "into another type", defs: map[string]string{"note": `{"states":{"s":{"initial":"new","transitions":{"new":[]}}}}`},
			recs: []store.Record{a}, mut: `{"op":"split","type":"task","entityId":"a","into":{"type":"note","id":"n"},"properties":["y"]}`,
			status: store.ReceiptApplied, payload: `{"into":{"id":"n","type":"note"},"properties":["y"]}`},
		{name: "into a tombstone", recs: []store.Record{a, tomb("task", "c", 2)},
			mut: `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":["y"]}`, status: store.ReceiptApplied},
		{name: "into a live entity", recs: []store.Record{a, live("task", "c", 2, `{}`)},
			mut: `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":["y"]}`, status: store.ReceiptRejected, code: problem.Conflict},
		{name: "into itself", recs: []store.Record{a},
			mut: `{"op":"split","type":"task","entityId":"a","into":{"id":"a"},"properties":["y"]}`, status: store.ReceiptRejected, code: problem.Conflict},
		{name: "property it lacks", recs: []store.Record{a},
			mut:    `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":["y","w"]}`,
			status: store.ReceiptRejected, code: problem.Unprocessable,
			rejected: []store.RejectedProperty{{Property: "w", Reason: problem.Unprocessable}}},
		{name: "missing source", mut: `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":["y"]}`,
			status: store.ReceiptRejected, code: problem.NotFound},
		{name: "base version moves the rest", recs: []store.Record{a},
			mut:    `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":["x","y"],"baseVersion":4}`,
			status: store.ReceiptApplied, props: `{"x":1}`, accepted: []string{"y"},
			rejected: []store.RejectedProperty{{Property: "x", Reason: problem.Conflict}}},
		{name: "base version rejects all", recs: []store.Record{a},
			mut:    `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":["x"],"baseVersion":4}`,
			status: store.ReceiptRejected, code: problem.Conflict},
		{name: "required on source", defs: map[string]string{"task": `{"properties":{"y":{"required":true}}}`}, recs: []store.Record{a},
			mut: `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":["y"]}`, status: store.ReceiptRejected, code: problem.Unprocessable},
	})
}

func TestApplyChangeShapes(t *testing.T) {
	t.Parallel()
	cur := withGroups(live("task", "t1", 3, `{"a":1,"b":2,"c":3}`, link("r", "user", "u")), map[string]int64{"a": 1, "b": 2, "c": 3})
	env := testEnv(t, map[string]string{"task": `{"conflictGroups":{"ab":["a","b"]}}`}, cur)
	out := Apply(mutation(t, `{"op":"patch","type":"task","entityId":"t1","patch":{"a":9,"c":3}}`), env)
	if len(out.Changes) != 1 || len(out.Records) != 1 {
		t.Fatalf("outcome = %+v", out)
	}
	c, r := out.Changes[0], out.Records[0]
	if c.Kind != store.ChangeUpdated || c.Type != "task" || c.ID != "t1" || !reflect.DeepEqual(c.ConflictGroups, []string{"ab"}) {
		t.Errorf("change = %s", jsonString(t, c))
	}
	if c.Before.Version != 3 || c.Before.Kind != store.KindLive || string(c.Before.Properties) != `{"a":1,"b":2,"c":3}` {
		t.Errorf("before = %+v", c.Before)
	}
	if c.After.Version != applySeq || string(c.After.Properties) != `{"a":9,"b":2,"c":3}` || len(c.After.Links) != 1 ||
		!c.After.CreatedAt.Equal(tCreated) || !c.After.UpdatedAt.Equal(tNow) {
		t.Errorf("after = %+v", c.After)
	}
	want := map[string]int64{"a": 1, "b": 2, "c": 3, "ab": applySeq}
	if r.Kind != store.KindLive || r.Version != applySeq || !maps.Equal(r.GroupVersions, want) || !r.CreatedAt.Equal(tCreated) {
		t.Errorf("record = %+v", r)
	}
	if out.Op != OpPatch || out.Primary != (store.EntityKey{Type: "task", ID: "t1"}) {
		t.Errorf("op/primary = %s %v", out.Op, out.Primary)
	}
	// The current record is not modified.
	if string(env.Records[cur.Key()].Properties) != `{"a":1,"b":2,"c":3}` || len(env.Records[cur.Key()].GroupVersions) != 3 {
		t.Errorf("input record modified: %+v", env.Records[cur.Key()])
	}
}

func TestApplyCreateAndDeleteShapes(t *testing.T) {
	t.Parallel()
	out := Apply(mutation(t, `{"op":"put","type":"task","entityId":"t1","properties":{"b":1,"a":{"y":1,"x":2}}}`),
		testEnv(t, nil, tomb("task", "t1", 4)))
	c, r := out.Changes[0], out.Records[0]
	if c.Kind != store.ChangeCreated || c.Before != nil || !reflect.DeepEqual(c.ConflictGroups, []string{"a", "b"}) {
		t.Errorf("create change = %s", jsonString(t, c))
	}
	if !r.CreatedAt.Equal(tNow) || !maps.Equal(r.GroupVersions, map[string]int64{"a": applySeq, "b": applySeq}) ||
		string(r.Properties) != `{"a":{"x":2,"y":1},"b":1}` || r.Links == nil {
		t.Errorf("created record = %+v", r)
	}

	cur := live("task", "t1", 3, `{"a":1}`, link("r", "user", "u"))
	out = Apply(mutation(t, `{"op":"delete","type":"task","entityId":"t1"}`), testEnv(t, nil, cur))
	c, r = out.Changes[0], out.Records[0]
	if c.Kind != store.ChangeDeleted || c.After != nil || c.Before == nil || string(c.Before.Properties) != `{"a":1}` ||
		len(c.Before.Links) != 1 || c.Before.Version != 3 {
		t.Errorf("delete change = %s", jsonString(t, c))
	}
	if r.Kind != store.KindDeleted || r.Version != applySeq || !r.CreatedAt.Equal(tCreated) || !r.UpdatedAt.Equal(tNow) {
		t.Errorf("tombstone = %+v", r)
	}
}

func TestApplyReceiptJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		recs []store.Record
		mut  string
		want string
	}{
		{"applied", nil, `{"mutationId":"m-1","op":"put","type":"task","entityId":"t1","properties":{"title": "x"}}`,
			`{"mutationId":"m-1","status":"applied","seq":10,"version":10,"accepted":["title"],"rejected":[],"proposed":{"title":"x"}}`},
		{"noop", []store.Record{live("task", "t1", 3, `{"title":"x"}`)}, `{"op":"patch","type":"task","entityId":"t1","patch":{"title":"x"}}`,
			`{"status":"noop","version":3,"accepted":["title"],"rejected":[],"proposed":{"title":"x"}}`},
		{"rejected", nil, `{"op":"delete","type":"task","entityId":"t1"}`,
			`{"status":"rejected","accepted":[],"rejected":[],"reason":{"code":"not_found","message":"task/t1: no such entity"}}`},
		{"link proposed", []store.Record{live("task", "t1", 3, `{}`)},
			`{"op":"link","type":"task","entityId":"t1","rel":"assignee","target":{"type":"user","id":"u1"}}`,
			`{"status":"applied","seq":10,"version":10,"accepted":[],"rejected":[],"proposed":{"rel":"assignee","target":{"id":"u1","type":"user"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := Apply(mutation(t, tt.mut), testEnv(t, nil, tt.recs...))
			if got := jsonString(t, out.Receipt); got != tt.want {
				t.Errorf("receipt = %s\nwant      %s", got, tt.want)
			}
		})
	}
}

func TestApplyPure(t *testing.T) {
	t.Parallel()
	cur := live("task", "a", 3, `{"x":1,"y":2}`)
	m := mutation(t, `{"op":"split","type":"task","entityId":"a","into":{"id":"c"},"properties":["y"]}`)
	env := testEnv(t, map[string]string{"task": taskDef}, cur)
	first, _ := json.Marshal(Apply(m, env))
	second, _ := json.Marshal(Apply(m, env))
	if string(first) != string(second) {
		t.Errorf("Apply is not deterministic:\n%s\n%s", first, second)
	}
}

func TestApplyNilSchemaAndRecords(t *testing.T) {
	t.Parallel()
	out := Apply(mutation(t, `{"op":"put","type":"task","entityId":"t1","properties":{"a":1}}`), ApplyEnv{Seq: 1, Now: tNow})
	if out.Receipt.Status != store.ReceiptApplied {
		t.Errorf("receipt = %+v", out.Receipt)
	}
	bad := live("task", "t1", 3, `[1]`)
	out = Apply(mutation(t, `{"op":"patch","type":"task","entityId":"t1","patch":{"a":1}}`), testEnv(t, nil, bad))
	if out.Receipt.Reason == nil || out.Receipt.Reason.Code != problem.Internal {
		t.Errorf("corrupt record: receipt = %+v", out.Receipt)
	}
}
