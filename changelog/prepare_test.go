package changelog

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// TestPreparedApplyAgrees: a mutation prepared by its submitter applies
// exactly as the same mutation decoded by the leader.
func TestPreparedApplyAgrees(t *testing.T) {
	base := int64(1)
	cur := store.Record{Type: "task", ID: "t1", Version: 1, Kind: store.KindLive,
		Properties: json.RawMessage(`{"a":1,"b":{"c":2}}`), Links: []store.Link{}, GroupVersions: map[string]int64{}}
	for _, m := range []Mutation{
		{Op: OpPut, Type: "task", EntityID: "t1", Properties: json.RawMessage(`{"z": [1, {"y": "\u00e9<"}], "a": 2}`)},
		{Op: OpPut, Type: "task", EntityID: "new", Properties: json.RawMessage(`{"n":1}`), MutationID: "m1"},
		{Op: OpPatch, Type: "task", EntityID: "t1", Patch: json.RawMessage(`{"b":{"c":null,"d":3},"a":null}`), BaseVersion: &base},
		{Op: OpPatch, Type: "task", EntityID: "t1", Patch: json.RawMessage(`{"a":1}`)},
		{Op: OpDelete, Type: "task", EntityID: "t1"},
		{Op: OpLink, Type: "task", EntityID: "t1", Rel: "owner", Target: &store.EntityKey{Type: "user", ID: "u"}},
	} {
		env := func() ApplyEnv {
			return ApplyEnv{Seq: 2, Now: time.Date(2026, 8, 4, 12, 0, 0, 0, time.UTC), Schema: func(string) *TypeDef { return nil },
				Records: map[store.EntityKey]store.Record{cur.Key(): cur}}
		}
		plain := Apply(m, env())
		p := m
		if err := ValidateMutation(&p); err != nil {
			t.Fatal(err)
		}
		p.prepare()
		prepared := Apply(p, env())
		if !reflect.DeepEqual(plain, prepared) {
			t.Errorf("%s %s:\n plain    %+v\n prepared %+v", m.Op, m.EntityID, plain, prepared)
		}
		// Applying a prepared mutation again (a retried group) agrees too.
		if again := Apply(p, env()); !reflect.DeepEqual(plain, again) {
			t.Errorf("%s %s applied twice: %+v", m.Op, m.EntityID, again)
		}
	}
}

// TestPayloadEncodeAgrees: the payload encoded directly is byte for byte
// what encoding/json and Canonical made of it.
func TestPayloadEncodeAgrees(t *testing.T) {
	k := &store.EntityKey{Type: "user", ID: "u<1>"}
	for _, p := range []payload{
		{created: true, properties: []string{"b", "a\u00e9"}},
		{deleted: true},
		{properties: []string{"x"}, state: map[string]string{"status": "done", "<": "&"}},
		{rel: "owner", target: k},
		{merged: k, into: &store.EntityKey{Type: "t", ID: "i"}},
		{},
	} {
		m := map[string]any{}
		if p.created {
			m["created"] = true
		}
		if p.deleted {
			m["deleted"] = true
		}
		if len(p.properties) > 0 {
			m["properties"] = sortedCopy(p.properties)
		}
		if len(p.state) > 0 {
			m["state"] = p.state
		}
		if p.rel != "" {
			m["rel"] = p.rel
		}
		for name, key := range map[string]*store.EntityKey{"target": p.target, "merged": p.merged, "into": p.into} {
			if key != nil {
				m[name] = key
			}
		}
		if got, want := string(p.encode()), string(marshalCanonical(m)); got != want {
			t.Errorf("payload %+v: %s, want %s", p, got, want)
		}
	}
}
