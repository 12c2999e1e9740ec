package changelog

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

var (
	tCreated = time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	tNow     = time.Date(2026, 8, 4, 10, 0, 0, 183742000, time.UTC)
)

const applySeq = 10

// live returns a live record of version v.
func live(typ, id string, v int64, props string, links ...store.Link) store.Record {
	return store.Record{Type: typ, ID: id, Version: v, Kind: store.KindLive, Properties: json.RawMessage(props),
		Links: links, CreatedAt: tCreated, UpdatedAt: tCreated}
}

// withGroups returns r with group versions.
func withGroups(r store.Record, gv map[string]int64) store.Record {
	r.GroupVersions = gv
	return r
}

// tomb returns a tombstone of version v.
func tomb(typ, id string, v int64) store.Record {
	return store.Record{Type: typ, ID: id, Version: v, Kind: store.KindDeleted, Properties: json.RawMessage(`{}`),
		CreatedAt: tCreated, UpdatedAt: tCreated}
}

func link(rel, typ, id string) store.Link {
	return store.Link{Rel: rel, Target: store.EntityKey{Type: typ, ID: id}}
}

// testEnv builds an ApplyEnv at applySeq over recs, with type definitions
// by type name.
func testEnv(t *testing.T, defs map[string]string, recs ...store.Record) ApplyEnv {
	t.Helper()
	compiled := map[string]*TypeDef{}
	for typ, raw := range defs {
		d, err := ParseTypeDef([]byte(raw))
		if err != nil {
			t.Fatalf("ParseTypeDef(%s): %v", typ, err)
		}
		compiled[typ] = d
	}
	env := ApplyEnv{Seq: applySeq, Now: tNow, Records: map[store.EntityKey]store.Record{},
		Schema: func(typ string) *TypeDef { return compiled[typ] }}
	for _, r := range recs {
		env.Records[r.Key()] = r
	}
	return env
}

func mutation(t *testing.T, raw string) Mutation {
	t.Helper()
	var m Mutation
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("mutation %s: %v", raw, err)
	}
	return m
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// applyCase is one Apply table row. For an applied outcome, props and
// links describe Records[0]; for any outcome, code is the reason code
// ("" when not rejected).
type applyCase struct {
	name     string
	defs     map[string]string
	recs     []store.Record
	mut      string
	ifMatch  bool
	status   string
	code     string
	payload  string
	props    string
	accepted []string
	rejected []store.RejectedProperty
	version  int64 // receipt version for a no-op
}

func runApplyCases(t *testing.T, tests []applyCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := mutation(t, tt.mut)
			m.IfMatch = tt.ifMatch
			out := Apply(m, testEnv(t, tt.defs, tt.recs...))
			checkOutcome(t, tt, out)
		})
	}
}

func checkOutcome(t *testing.T, tt applyCase, out Outcome) {
	t.Helper()
	r := out.Receipt
	if r.Status != tt.status {
		t.Fatalf("status = %s, want %s (reason %+v, rejected %+v)", r.Status, tt.status, r.Reason, r.Rejected)
	}
	if r.Accepted == nil || r.Rejected == nil {
		t.Errorf("accepted/rejected must be non-nil: %s", jsonString(t, r))
	}
	code := ""
	if r.Reason != nil {
		code = r.Reason.Code
	}
	if code != tt.code {
		t.Errorf("reason = %+v, want code %q", r.Reason, tt.code)
	}
	if tt.accepted != nil && !slices.Equal(r.Accepted, tt.accepted) {
		t.Errorf("accepted = %q, want %q", r.Accepted, tt.accepted)
	}
	if tt.rejected != nil && !slices.Equal(r.Rejected, tt.rejected) {
		t.Errorf("rejected = %+v, want %+v", r.Rejected, tt.rejected)
	}
	switch tt.status {
	case store.ReceiptApplied:
		checkApplied(t, tt, out)
	default:
		if len(out.Changes) != 0 || len(out.Records) != 0 || out.Payload != nil || r.Seq != 0 {
			t.Errorf("%s outcome carries a commit: %+v", tt.status, out)
		}
		if tt.status == store.ReceiptNoop && r.Version != tt.version {
			t.Errorf("noop version = %d, want %d", r.Version, tt.version)
		}
	}
}

func checkApplied(t *testing.T, tt applyCase, out Outcome) {
	t.Helper()
	if out.Receipt.Seq != applySeq || out.Receipt.Version != applySeq {
		t.Errorf("receipt seq/version = %d/%d, want %d", out.Receipt.Seq, out.Receipt.Version, applySeq)
	}
	if tt.payload != "" && string(out.Payload) != tt.payload {
		t.Errorf("payload = %s, want %s", out.Payload, tt.payload)
	}
	if len(out.Records) == 0 || len(out.Changes) != len(out.Records) {
		t.Fatalf("applied with %d changes, %d records", len(out.Changes), len(out.Records))
	}
	if tt.props != "" && string(out.Records[0].Properties) != tt.props {
		t.Errorf("properties = %s, want %s", out.Records[0].Properties, tt.props)
	}
	for i, c := range out.Changes {
		if c.Ordinal != i || c.Version != applySeq || c.ConflictGroups == nil {
			t.Errorf("change %d = %+v", i, c)
		}
	}
}

func TestApplyPut(t *testing.T) {
	t.Parallel()
	runApplyCases(t, []applyCase{
		{name: "create", mut: `{"op":"put","type":"task","entityId":"t1","properties":{"title":"x","dueAt":"2026-12-01"}}`,
			status: store.ReceiptApplied, payload: `{"created":true,"properties":["dueAt","title"]}`,
			props: `{"dueAt":"2026-12-01","title":"x"}`, accepted: []string{"dueAt", "title"}, rejected: []store.RejectedProperty{}},
		{name: "create empty", mut: `{"op":"put","type":"task","entityId":"t1","properties":{}}`,
			status: store.ReceiptApplied, payload: `{"created":true}`, props: `{}`, accepted: []string{}},
		{name: "recreate after tombstone", recs: []store.Record{tomb("task", "t1", 4)},
			mut:    `{"op":"put","type":"task","entityId":"t1","properties":{"a":1}}`,
			status: store.ReceiptApplied, payload: `{"created":true,"properties":["a"]}`, props: `{"a":1}`},
		{name: "replace", recs: []store.Record{live("task", "t1", 3, `{"a":1,"b":2}`)},
			mut:    `{"op":"put","type":"task","entityId":"t1","properties":{"b":3,"c":4}}`,
			status: store.ReceiptApplied, payload: `{"properties":["a","b","c"]}`, props: `{"b":3,"c":4}`,
			accepted: []string{"a", "b", "c"}},
		{name: "identical is noop", recs: []store.Record{live("task", "t1", 3, `{"a":1,"b":{"c":[1,2]}}`)},
			mut:    `{"op":"put","type":"task","entityId":"t1","properties":{"b":{"c":[1,2]},"a":1}}`,
			status: store.ReceiptNoop, version: 3, accepted: []string{"a", "b"}},
		{name: "number text differs", recs: []store.Record{live("task", "t1", 3, `{"a":1}`)},
			mut:    `{"op":"put","type":"task","entityId":"t1","properties":{"a":1.0}}`,
			status: store.ReceiptApplied, props: `{"a":1.0}`},
		{name: "null kept", mut: `{"op":"put","type":"task","entityId":"t1","properties":{"a":null}}`,
			status: store.ReceiptApplied, props: `{"a":null}`},
		{name: "html not escaped", mut: `{"op":"put","type":"task","entityId":"t1","properties":{"h":"<b>&</b>"}}`,
			status: store.ReceiptApplied, props: `{"h":"<b>&</b>"}`},
		{name: "invalid mutation", mut: `{"op":"put","type":"task","entityId":"t1"}`,
			status: store.ReceiptRejected, code: problem.BadRequest},
		{name: "engine op", mut: `{"op":"fire","type":"eddy.trigger","entityId":"t1"}`,
			status: store.ReceiptRejected, code: problem.BadRequest},
	})
}

func TestApplyPatch(t *testing.T) {
	t.Parallel()
	cur := live("task", "t1", 3, `{"a":1,"n":{"x":1,"y":2},"note":"hi"}`)
	runApplyCases(t, []applyCase{
		{name: "merge", recs: []store.Record{cur},
			mut:    `{"op":"patch","type":"task","entityId":"t1","patch":{"status":"done","note":null,"n":{"y":null,"z":3}}}`,
			status: store.ReceiptApplied, payload: `{"properties":["n","note","status"]}`,
			props: `{"a":1,"n":{"x":1,"z":3},"status":"done"}`, accepted: []string{"n", "note", "status"}},
		{name: "missing", mut: `{"op":"patch","type":"task","entityId":"t1","patch":{"a":1}}`,
			status: store.ReceiptRejected, code: problem.NotFound},
		{name: "tombstone", recs: []store.Record{tomb("task", "t1", 5)}, mut: `{"op":"patch","type":"task","entityId":"t1","patch":{"a":1}}`,
			status: store.ReceiptRejected, code: problem.NotFound},
		{name: "same values noop", recs: []store.Record{cur},
			mut:    `{"op":"patch","type":"task","entityId":"t1","patch":{"a":1,"missing":null,"n":{"x":1}}}`,
			status: store.ReceiptNoop, version: 3, accepted: []string{"a", "missing", "n"}},
		{name: "empty patch noop", recs: []store.Record{cur},
			mut: `{"op":"patch","type":"task","entityId":"t1","patch":{}}`, status: store.ReceiptNoop, version: 3, accepted: []string{}},
	})
}

func TestApplyPreconditions(t *testing.T) {
	t.Parallel()
	cur := live("task", "t1", 7, `{"a":1}`)
	runApplyCases(t, []applyCase{
		{name: "ifVersion matches", recs: []store.Record{cur},
			mut: `{"op":"patch","type":"task","entityId":"t1","patch":{"a":2},"ifVersion":7}`, status: store.ReceiptApplied},
		{name: "ifVersion mismatch", recs: []store.Record{cur},
			mut: `{"op":"patch","type":"task","entityId":"t1","patch":{"a":2},"ifVersion":6}`, status: store.ReceiptRejected, code: problem.Conflict},
		{name: "if-match mismatch", recs: []store.Record{cur}, ifMatch: true,
			mut: `{"op":"put","type":"task","entityId":"t1","properties":{},"ifVersion":6}`, status: store.ReceiptRejected, code: problem.PreconditionFailed},
		{name: "ifVersion 0 on missing", mut: `{"op":"put","type":"task","entityId":"t1","properties":{},"ifVersion":0}`, status: store.ReceiptApplied},
		{name: "ifVersion 0 on tombstone", recs: []store.Record{tomb("task", "t1", 4)},
			mut: `{"op":"put","type":"task","entityId":"t1","properties":{},"ifVersion":0}`, status: store.ReceiptApplied},
		{name: "ifVersion 0 on live", recs: []store.Record{cur},
			mut: `{"op":"put","type":"task","entityId":"t1","properties":{},"ifVersion":0}`, status: store.ReceiptRejected, code: problem.Conflict},
		{name: "ifVersion on missing", mut: `{"op":"put","type":"task","entityId":"t1","properties":{},"ifVersion":3}`,
			status: store.ReceiptRejected, code: problem.Conflict},
		{name: "ifVersion on delete", recs: []store.Record{cur},
			mut: `{"op":"delete","type":"task","entityId":"t1","ifVersion":1}`, status: store.ReceiptRejected, code: problem.Conflict},
		{name: "ifVersion on link", recs: []store.Record{cur}, ifMatch: true,
			mut:    `{"op":"link","type":"task","entityId":"t1","rel":"r","target":{"type":"user","id":"u"},"ifVersion":1}`,
			status: store.ReceiptRejected, code: problem.PreconditionFailed},
		{name: "noop with matching ifVersion", recs: []store.Record{cur},
			mut: `{"op":"patch","type":"task","entityId":"t1","patch":{"a":1},"ifVersion":7}`, status: store.ReceiptNoop, version: 7},
	})
}

func TestApplyBaseVersion(t *testing.T) {
	t.Parallel()
	grouped := `{"conflictGroups": {"schedule": ["dueAt", "startAt"]}}`
	cur := withGroups(live("task", "t1", 9, `{"dueAt":"d1","startAt":"s1","title":"x"}`),
		map[string]int64{"schedule": 8, "title": 2})
	plain := withGroups(live("task", "t1", 9, `{"dueAt":"d1","startAt":"s1","title":"x"}`),
		map[string]int64{"dueAt": 8, "startAt": 2, "title": 2})
	conflict := func(p string) store.RejectedProperty {
		return store.RejectedProperty{Property: p, Reason: problem.Conflict}
	}
	runApplyCases(t, []applyCase{
		{name: "other group applies", recs: []store.Record{plain},
			mut:    `{"op":"patch","type":"task","entityId":"t1","patch":{"title":"y","dueAt":"d2"},"baseVersion":5}`,
			status: store.ReceiptApplied, payload: `{"properties":["title"]}`,
			props: `{"dueAt":"d1","startAt":"s1","title":"y"}`, accepted: []string{"title"}, rejected: []store.RejectedProperty{conflict("dueAt")}},
		{name: "group of declared conflict groups", defs: map[string]string{"task": grouped}, recs: []store.Record{cur},
			mut:    `{"op":"patch","type":"task","entityId":"t1","patch":{"title":"y","dueAt":"d2"},"baseVersion":5}`,
			status: store.ReceiptApplied, accepted: []string{"title"}, rejected: []store.RejectedProperty{conflict("dueAt")}},
		{name: "unchanged since base", recs: []store.Record{plain},
			mut:    `{"op":"patch","type":"task","entityId":"t1","patch":{"title":"y","dueAt":"d2"},"baseVersion":8}`,
			status: store.ReceiptApplied, props: `{"dueAt":"d2","startAt":"s1","title":"y"}`, accepted: []string{"dueAt", "title"},
			rejected: []store.RejectedProperty{}},
		{name: "everything conflicts", defs: map[string]string{"task": grouped}, recs: []store.Record{cur},
			mut:    `{"op":"patch","type":"task","entityId":"t1","patch":{"startAt":"s9"},"baseVersion":7}`,
			status: store.ReceiptRejected, code: problem.Conflict, rejected: []store.RejectedProperty{conflict("startAt")}},
		{name: "put judges removals", defs: map[string]string{"task": grouped}, recs: []store.Record{cur},
			mut:    `{"op":"put","type":"task","entityId":"t1","properties":{"title":"z","extra":1},"baseVersion":5}`,
			status: store.ReceiptApplied, payload: `{"properties":["extra","title"]}`,
			props:    `{"dueAt":"d1","extra":1,"startAt":"s1","title":"z"}`,
			accepted: []string{"extra", "title"}, rejected: []store.RejectedProperty{conflict("dueAt"), conflict("startAt")}},
		{name: "put rejected value restored", recs: []store.Record{plain},
			mut:    `{"op":"put","type":"task","entityId":"t1","properties":{"title":"z","dueAt":"d5"},"baseVersion":5}`,
			status: store.ReceiptApplied, props: `{"dueAt":"d1","title":"z"}`,
			accepted: []string{"startAt", "title"}, rejected: []store.RejectedProperty{conflict("dueAt")}},
		{name: "rejected rest unchanged is noop", recs: []store.Record{plain},
			mut:    `{"op":"patch","type":"task","entityId":"t1","patch":{"title":"x","dueAt":"d2"},"baseVersion":5}`,
			status: store.ReceiptNoop, version: 9, accepted: []string{"title"}, rejected: []store.RejectedProperty{conflict("dueAt")}},
		{name: "create ignores base", mut: `{"op":"put","type":"task","entityId":"t2","properties":{"a":1},"baseVersion":1}`,
			status: store.ReceiptApplied, payload: `{"created":true,"properties":["a"]}`},
	})
}

func TestApplyDelete(t *testing.T) {
	t.Parallel()
	runApplyCases(t, []applyCase{
		{name: "live", recs: []store.Record{live("task", "t1", 3, `{"a":1}`, link("r", "user", "u"))},
			mut: `{"op":"delete","type":"task","entityId":"t1"}`, status: store.ReceiptApplied, payload: `{"deleted":true}`,
			accepted: []string{}},
		{name: "tombstone noop", recs: []store.Record{tomb("task", "t1", 5)},
			mut: `{"op":"delete","type":"task","entityId":"t1"}`, status: store.ReceiptNoop, version: 5},
		{name: "never existed", mut: `{"op":"delete","type":"task","entityId":"t1"}`, status: store.ReceiptRejected, code: problem.NotFound},
	})
}

func TestApplyLink(t *testing.T) {
	t.Parallel()
	u1, u2 := link("assignee", "user", "u1"), link("assignee", "user", "u2")
	cur := live("task", "t1", 3, `{"a":1}`, u2)
	runApplyCases(t, []applyCase{
		{name: "link", recs: []store.Record{cur},
			mut:    `{"op":"link","type":"task","entityId":"t1","rel":"assignee","target":{"type":"user","id":"u1"}}`,
			status: store.ReceiptApplied, payload: `{"rel":"assignee","target":{"id":"u1","type":"user"}}`, props: `{"a":1}`,
			accepted: []string{}},
		{name: "link present noop", recs: []store.Record{cur},
			mut:    `{"op":"link","type":"task","entityId":"t1","rel":"assignee","target":{"type":"user","id":"u2"}}`,
			status: store.ReceiptNoop, version: 3},
		{name: "link missing source", recs: []store.Record{tomb("task", "t1", 4)},
			mut:    `{"op":"link","type":"task","entityId":"t1","rel":"assignee","target":{"type":"user","id":"u2"}}`,
			status: store.ReceiptRejected, code: problem.NotFound},
		{name: "unlink", recs: []store.Record{live("task", "t1", 3, `{}`, u1, u2)},
			mut:    `{"op":"unlink","type":"task","entityId":"t1","rel":"assignee","target":{"type":"user","id":"u1"}}`,
			status: store.ReceiptApplied, payload: `{"rel":"assignee","target":{"id":"u1","type":"user"}}`},
		{name: "unlink absent noop", recs: []store.Record{cur},
			mut:    `{"op":"unlink","type":"task","entityId":"t1","rel":"assignee","target":{"type":"user","id":"u1"}}`,
			status: store.ReceiptNoop, version: 3},
		{name: "unlink missing source",
			mut:    `{"op":"unlink","type":"task","entityId":"t1","rel":"assignee","target":{"type":"user","id":"u1"}}`,
			status: store.ReceiptRejected, code: problem.NotFound},
	})
}

func TestApplyLinkOrder(t *testing.T) {
	t.Parallel()
	cur := live("task", "t1", 3, `{}`, link("b", "user", "u1"), link("a", "user", "u9"), link("b", "org", "o1"))
	out := Apply(mutation(t, `{"op":"link","type":"task","entityId":"t1","rel":"b","target":{"type":"org","id":"o0"}}`),
		testEnv(t, nil, cur))
	want := []store.Link{link("a", "user", "u9"), link("b", "org", "o0"), link("b", "org", "o1"), link("b", "user", "u1")}
	if got := out.Records[0].Links; !slices.Equal(got, want) {
		t.Errorf("links = %+v, want %+v", got, want)
	}
	c := out.Changes[0]
	if c.Kind != store.ChangeUpdated || len(c.Before.Links) != 3 || len(c.After.Links) != 4 || len(c.ConflictGroups) != 0 {
		t.Errorf("change = %s", jsonString(t, c))
	}
}
