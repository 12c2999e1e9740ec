package storetest

import (
	"reflect"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// testOps covers every mutation op: its receipt, row payload, changes and
// the records it leaves.
func testOps(t *testing.T, open OpenFunc) {
	t.Run("Patch", func(t *testing.T) { t.Parallel(); testPatch(t, open) })
	t.Run("Delete", func(t *testing.T) { t.Parallel(); testDelete(t, open) })
	t.Run("Link", func(t *testing.T) { t.Parallel(); testLink(t, open) })
	t.Run("Merge", func(t *testing.T) { t.Parallel(); testMerge(t, open) })
	t.Run("Split", func(t *testing.T) { t.Parallel(); testSplit(t, open) })
}

func testPatch(t *testing.T, open OpenFunc) {
	h := newHarness(t, open, changelog.Options{})
	h.apply(put("task", "t1", `{"title":"x","note":"n","meta":{"a":1,"b":2}}`), 1)
	r := h.apply(patch("task", "t1", `{"status":"done","note":null,"meta":{"b":null,"c":3}}`), 2)
	wantReceipt(t, "patch", r, store.Receipt{Status: store.ReceiptApplied, Seq: 2, Version: 2, Accepted: []string{"meta", "note", "status"}})
	wantJSON(t, "proposed patch", r.Proposed, `{"status":"done","note":null,"meta":{"b":null,"c":3}}`)
	wantJSON(t, "patch payload", h.rowAt(2).Payload, `{"properties":["meta","note","status"]}`)
	rec := h.get("task", "t1")
	wantBytes(t, "patched properties", rec.Properties, `{"meta":{"a":1,"c":3},"status":"done","title":"x"}`)
	ch := h.commitAt(2).Changes
	if len(ch) != 1 || ch[0].Kind != store.ChangeUpdated || !sameStrings(ch[0].ConflictGroups, []string{"meta", "note", "status"}) {
		t.Fatalf("patch changes = %s, want one update with conflict groups [meta note status]", js(ch))
	}
	if rec.Version != 2 || h.commitAt(2).Op != changelog.OpPatch {
		t.Fatalf("record %s, row %s", js(rec), js(h.rowAt(2)))
	}
	h.wantRawPull()
}

func testDelete(t *testing.T, open OpenFunc) {
	h := newHarness(t, open, changelog.Options{})
	h.apply(put("task", "t2", `{"a":1}`), 1)
	res := h.write(del("task", "t2"))
	wantReceipt(t, "delete", res.Receipts[0], store.Receipt{Status: store.ReceiptApplied, Seq: 2, Version: 2})
	if res.Entities[0] != nil || res.LastSeq != 2 {
		t.Fatalf("delete result = %s, want no entity, last seq 2", js(res))
	}
	row := h.rowAt(2)
	if row.Op != changelog.OpDelete || row.EntityID != "t2" || row.Type != "task" {
		t.Fatalf("delete row = %s", js(row))
	}
	wantJSON(t, "delete payload", row.Payload, `{"deleted":true}`)
	ch := h.commitAt(2).Changes
	if len(ch) != 1 || ch[0].Kind != store.ChangeDeleted || ch[0].Version != 2 || ch[0].After != nil || ch[0].Before == nil || ch[0].Before.Version != 1 {
		t.Fatalf("delete changes = %s", js(ch))
	}
	wantBytes(t, "deleted before image", ch[0].Before.Properties, `{"a":1}`)
	h.wantGone("task", "t2")
	tomb, err := h.st.EntityGet(h.ctx, "s", store.EntityKey{Type: "task", ID: "t2"})
	if err != nil || tomb.Kind != store.KindDeleted || tomb.Version != 2 {
		t.Fatalf("tombstone = %s, %v; want kind deleted at version 2", js(tomb), err)
	}
	if tomb.Kind == store.KindLive {
		t.Fatal("tombstone is live")
	}
	// Recreating the entity is a creation again.
	res = h.write(put("task", "t2", `{"a":2}`))
	wantReceipt(t, "recreate", res.Receipts[0], store.Receipt{Status: store.ReceiptApplied, Seq: 3, Version: 3, Accepted: []string{"a"}})
	if !reflect.DeepEqual(res.Created, []bool{true}) {
		t.Fatalf("recreate created = %v, want [true]", res.Created)
	}
	wantJSON(t, "recreate payload", h.rowAt(3).Payload, `{"created":true,"properties":["a"]}`)
	if ch := h.commitAt(3).Changes; len(ch) != 1 || ch[0].Kind != store.ChangeCreated || ch[0].Version != 3 {
		t.Fatalf("recreate changes = %s", js(ch))
	}
	if rec := h.get("task", "t2"); rec.Version != 3 || rec.Kind == store.KindDeleted {
		t.Fatalf("recreated record = %s", js(rec))
	}
	h.wantRawPull()
}

func testLink(t *testing.T, open OpenFunc) {
	h := newHarness(t, open, changelog.Options{})
	h.apply(put("task", "t1", `{"title":"x"}`), 1)
	r := h.apply(link("task", "t1", "watcher", "user", "u2"), 2)
	wantReceipt(t, "link", r, store.Receipt{Status: store.ReceiptApplied, Seq: 2, Version: 2})
	h.apply(link("task", "t1", "assignee", "user", "u9"), 3)
	h.apply(link("task", "t1", "assignee", "team", "t9"), 4)
	row := h.rowAt(2)
	if row.Op != changelog.OpLink || row.EntityID != "t1" {
		t.Fatalf("link row = %s", js(row))
	}
	wantJSON(t, "link payload", row.Payload, `{"rel":"watcher","target":{"type":"user","id":"u2"}}`)
	want := []store.Link{
		{Rel: "assignee", Target: store.EntityKey{Type: "team", ID: "t9"}},
		{Rel: "assignee", Target: store.EntityKey{Type: "user", ID: "u9"}},
		{Rel: "watcher", Target: store.EntityKey{Type: "user", ID: "u2"}},
	}
	rec := h.get("task", "t1")
	if !reflect.DeepEqual(rec.Links, want) || rec.Version != 4 {
		t.Fatalf("links = %s at version %d, want %s at 4", js(rec.Links), rec.Version, js(want))
	}
	wantBytes(t, "properties after links", rec.Properties, `{"title":"x"}`)
	if ch := h.commitAt(4).Changes; len(ch) != 1 || !reflect.DeepEqual(ch[0].After.Links, want) || len(ch[0].Before.Links) != 2 {
		t.Fatalf("link change = %s", js(ch))
	}

	r = h.apply(unlink("task", "t1", "assignee", "user", "u9"), 5)
	wantReceipt(t, "unlink", r, store.Receipt{Status: store.ReceiptApplied, Seq: 5, Version: 5})
	row = h.rowAt(5)
	if row.Op != changelog.OpUnlink {
		t.Fatalf("unlink row = %s", js(row))
	}
	wantJSON(t, "unlink payload", row.Payload, `{"rel":"assignee","target":{"type":"user","id":"u9"}}`)
	if got := h.get("task", "t1").Links; !reflect.DeepEqual(got, []store.Link{want[0], want[2]}) {
		t.Fatalf("links after unlink = %s", js(got))
	}
	h.wantRawPull()
}

func testMerge(t *testing.T, open OpenFunc) {
	h := newHarness(t, open, changelog.Options{})
	h.apply(put("task", "a", `{"x":1,"shared":"a"}`), 1)
	h.apply(put("task", "b", `{"y":2,"shared":"b"}`), 2)
	h.apply(link("task", "b", "r", "user", "u1"), 3)
	h.apply(link("task", "a", "r", "user", "u0"), 4)
	res := h.write(withID(merge("task", "a", "b"), "m-merge"))
	wantReceipt(t, "merge", res.Receipts[0], store.Receipt{MutationID: "m-merge", Status: store.ReceiptApplied, Seq: 5, Version: 5,
		Accepted: res.Receipts[0].Accepted})
	row := h.rowAt(5)
	if row.Op != changelog.OpMerge || row.EntityID != "a" || row.Type != "task" {
		t.Fatalf("merge row = %s", js(row))
	}
	if p := payloadOf(t, row); !refersTo(p["merged"], "task", "b") {
		t.Fatalf("merge payload %s does not name b under merged", row.Payload)
	}
	wantLinks := []store.Link{{Rel: "r", Target: store.EntityKey{Type: "user", ID: "u0"}}, {Rel: "r", Target: store.EntityKey{Type: "user", ID: "u1"}}}
	c := h.commitAt(5)
	if len(c.Changes) != 2 {
		t.Fatalf("merge commit has %d changes, want 2", len(c.Changes))
	}
	a, b := c.Changes[0], c.Changes[1]
	if a.Ordinal != 0 || a.Kind != store.ChangeUpdated || a.ID != "a" || a.Version != 5 || a.Before == nil || a.Before.Version != 4 || a.After == nil {
		t.Fatalf("merge change 0 = %s", js(a))
	}
	wantBytes(t, "merged properties", a.After.Properties, `{"shared":"a","x":1,"y":2}`)
	if !reflect.DeepEqual(a.After.Links, wantLinks) {
		t.Fatalf("merged links = %s, want %s", js(a.After.Links), js(wantLinks))
	}
	if b.Ordinal != 1 || b.Kind != store.ChangeDeleted || b.Type != "task" || b.ID != "b" || b.Version != 5 || b.After != nil || b.Before == nil || b.Before.Version != 3 {
		t.Fatalf("merge change 1 = %s", js(b))
	}
	rec := h.get("task", "a")
	wantBytes(t, "merged record", rec.Properties, `{"shared":"a","x":1,"y":2}`)
	if rec.Version != 5 || !reflect.DeepEqual(rec.Links, wantLinks) {
		t.Fatalf("merged record = %s", js(rec))
	}
	h.wantGone("task", "b")
	tomb, err := h.st.EntityGet(h.ctx, "s", store.EntityKey{Type: "task", ID: "b"})
	if err != nil || tomb.Kind != store.KindDeleted || tomb.Version != 5 {
		t.Fatalf("merged-away b = %s, %v; want a tombstone at 5", js(tomb), err)
	}
	// A merge commit is one commit: a pull with budget 1 returns it whole.
	p, err := h.log.Pull(h.ctx, "s", 4, 1)
	if err != nil || len(p.Commits) != 1 || len(p.Commits[0].Changes) != 2 || p.NextCursor != 5 || p.HasMore {
		t.Fatalf("pull of the merge = %s, %v", js(p), err)
	}
	h.wantHead(5)
	h.wantRawPull()
}

func testSplit(t *testing.T, open OpenFunc) {
	h := newHarness(t, open, changelog.Options{})
	h.apply(put("task", "a", `{"x":1,"y":2,"z":3}`), 1)
	res := h.write(split("task", "a", "c", "y"))
	wantReceipt(t, "split", res.Receipts[0], store.Receipt{Status: store.ReceiptApplied, Seq: 2, Version: 2, Accepted: res.Receipts[0].Accepted})
	row := h.rowAt(2)
	if row.Op != changelog.OpSplit || row.EntityID != "a" {
		t.Fatalf("split row = %s", js(row))
	}
	if p := payloadOf(t, row); !refersTo(p["into"], "task", "c") {
		t.Fatalf("split payload %s does not name c under into", row.Payload)
	}
	c := h.commitAt(2)
	if len(c.Changes) != 2 {
		t.Fatalf("split commit has %d changes, want 2", len(c.Changes))
	}
	a, cc := c.Changes[0], c.Changes[1]
	if a.Ordinal != 0 || a.Kind != store.ChangeUpdated || a.ID != "a" || a.Version != 2 || a.After == nil {
		t.Fatalf("split change 0 = %s", js(a))
	}
	wantBytes(t, "split source", a.After.Properties, `{"x":1,"z":3}`)
	if cc.Ordinal != 1 || cc.Kind != store.ChangeCreated || cc.Type != "task" || cc.ID != "c" || cc.Version != 2 || cc.Before != nil || cc.After == nil {
		t.Fatalf("split change 1 = %s", js(cc))
	}
	wantBytes(t, "split target", cc.After.Properties, `{"y":2}`)
	wantBytes(t, "record a", h.get("task", "a").Properties, `{"x":1,"z":3}`)
	if rec := h.get("task", "c"); rec.Version != 2 || string(rec.Properties) != `{"y":2}` {
		t.Fatalf("record c = %s", js(rec))
	}
	h.wantHead(2)
	h.wantRawPull()
}

// testPreconditions covers ifVersion, If-Match and baseVersion with
// conflict groups.
func testPreconditions(t *testing.T, open OpenFunc) {
	t.Parallel()
	h := newHarness(t, open, changelog.Options{})
	h.apply(put("task", "t1", `{"v":1}`), 1)
	h.apply(ifVersion(patch("task", "t1", `{"v":2}`), 1), 2)
	for _, tc := range []struct {
		name string
		m    changelog.Mutation
		code string
	}{
		{"stale ifVersion", ifVersion(patch("task", "t1", `{"v":3}`), 1), problem.Conflict},
		{"future ifVersion", ifVersion(put("task", "t1", `{"v":3}`), 7), problem.Conflict},
		{"create-only on an existing entity", ifVersion(put("task", "t1", `{"v":3}`), 0), problem.Conflict},
		{"stale If-Match", func() changelog.Mutation {
			m := ifVersion(patch("task", "t1", `{"v":3}`), 1)
			m.IfMatch = true
			return m
		}(), problem.PreconditionFailed},
	} {
		r := h.one(tc.m)
		wantReceipt(t, tc.name, r, store.Receipt{Status: store.ReceiptRejected, Version: -1, Reason: reason(tc.code)})
		h.wantHead(2)
	}
	wantBytes(t, "after rejections", h.get("task", "t1").Properties, `{"v":2}`)
	res := h.write(ifVersion(put("task", "t9", `{"v":1}`), 0))
	if res.Receipts[0].Seq != 3 || !res.Created[0] {
		t.Fatalf("create-only = %s", js(res))
	}
	m := ifVersion(patch("task", "t1", `{"v":3}`), 2)
	m.IfMatch = true
	h.apply(m, 4)

	// baseVersion: a conflict group changed after the base is rejected per
	// property; the other groups apply.
	if _, err := h.log.PutType(h.ctx, "s", "doc", []byte(`{"conflictGroups":{"schedule":["dueAt","startAt"]}}`)); err != nil {
		t.Fatalf("put type: %v", err)
	}
	h.apply(put("doc", "d1", `{"title":"a","dueAt":"1","startAt":"1","note":"n"}`), 5)
	h.apply(patch("doc", "d1", `{"startAt":"2"}`), 6)
	if ch := h.commitAt(6).Changes; len(ch) != 1 || !sameStrings(ch[0].ConflictGroups, []string{"schedule"}) {
		t.Fatalf("changes of the startAt patch = %s, want conflict groups [schedule]", js(ch))
	}
	r := h.one(baseVersion(patch("doc", "d1", `{"dueAt":"3","title":"b"}`), 5))
	wantReceipt(t, "offline edit", r, store.Receipt{Status: store.ReceiptApplied, Seq: 7, Version: 7,
		Accepted: []string{"title"}, Rejected: []store.RejectedProperty{{Property: "dueAt"}}})
	wantJSON(t, "proposed values of the offline edit", r.Proposed, `{"dueAt":"3","title":"b"}`)
	if r.Rejected[0].Reason == "" {
		t.Fatalf("rejected property without a reason: %s", js(r))
	}
	wantJSON(t, "offline edit payload", h.rowAt(7).Payload, `{"properties":["title"]}`)
	if ch := h.commitAt(7).Changes; len(ch) != 1 || !sameStrings(ch[0].ConflictGroups, []string{"title"}) {
		t.Fatalf("offline edit changes = %s, want conflict groups [title]", js(ch))
	}
	wantBytes(t, "after offline edit", h.get("doc", "d1").Properties, `{"dueAt":"1","note":"n","startAt":"2","title":"b"}`)

	r = h.one(baseVersion(patch("doc", "d1", `{"startAt":"9"}`), 5))
	wantReceipt(t, "offline edit of a changed group", r, store.Receipt{Status: store.ReceiptRejected, Version: -1,
		Rejected: []store.RejectedProperty{{Property: "startAt"}}, Reason: reason(problem.Conflict)})
	h.wantHead(7)
	h.apply(baseVersion(patch("doc", "d1", `{"dueAt":"4"}`), 6), 8)
	h.apply(baseVersion(patch("doc", "d1", `{"note":"m"}`), 5), 9)
	wantBytes(t, "final", h.get("doc", "d1").Properties, `{"dueAt":"4","note":"m","startAt":"2","title":"b"}`)
	h.wantRawPull()
}

const taskDef = `{
  "strict": true,
  "properties": {
    "title": {"kind": "string", "required": true},
    "points": {"kind": "number"},
    "status": {"kind": "string"}
  },
  "states": {"status": {"initial": "open", "transitions": {"open": ["doing", "done"], "doing": ["done"], "done": []}}}
}`

// testTypes covers type definitions: strictness, kinds, required
// properties, state transitions and the schema version.
func testTypes(t *testing.T, open OpenFunc) {
	t.Parallel()
	h := newHarness(t, open, changelog.Options{})
	v0 := h.spaceRow("s").SchemaVersion
	if _, err := h.log.PutType(h.ctx, "s", "task", []byte(`{`)); problem.CodeOf(err) != problem.BadRequest {
		t.Fatalf("malformed definition: err %v, want bad_request", err)
	}
	if _, err := h.log.PutType(h.ctx, "s", "task", []byte(taskDef)); err != nil {
		t.Fatalf("put type: %v", err)
	}
	if v := h.spaceRow("s").SchemaVersion; v != v0+1 {
		t.Fatalf("schema version %d after a put, want %d", v, v0+1)
	}
	if td, err := h.log.GetType(h.ctx, "s", "task"); err != nil || td.Type != "task" || len(td.Def) == 0 {
		t.Fatalf("get type = %s, %v", js(td), err)
	}
	h.apply(put("task", "t1", `{"title":"x","status":"open","points":3}`), 1)
	for _, tc := range []struct {
		name string
		m    changelog.Mutation
		code string
	}{
		{"undeclared property", put("task", "t2", `{"title":"x","status":"open","color":"red"}`), problem.Unprocessable},
		{"undeclared property in a patch", patch("task", "t1", `{"color":"red"}`), problem.Unprocessable},
		{"wrong kind", put("task", "t3", `{"title":7,"status":"open"}`), problem.Unprocessable},
		{"wrong kind in a patch", patch("task", "t1", `{"points":"many"}`), problem.Unprocessable},
		{"missing required property", put("task", "t4", `{"status":"open"}`), problem.Unprocessable},
	} {
		r := h.one(tc.m)
		wantReceipt(t, tc.name, r, store.Receipt{Status: store.ReceiptRejected, Version: -1, Reason: reason(tc.code),
			Rejected: r.Rejected})
		h.wantHead(1)
	}
	h.apply(patch("task", "t1", `{"status":"doing"}`), 2)
	wantJSON(t, "transition payload", h.rowAt(2).Payload, `{"properties":["status"],"state":{"status":"doing"}}`)
	r := h.one(patch("task", "t1", `{"status":"open"}`))
	wantReceipt(t, "refused transition", r, store.Receipt{Status: store.ReceiptRejected, Version: -1, Reason: reason(problem.Conflict), Rejected: r.Rejected})
	h.wantHead(2)
	h.apply(patch("task", "t1", `{"status":"done","points":5}`), 3)
	wantJSON(t, "second transition payload", h.rowAt(3).Payload, `{"properties":["points","status"],"state":{"status":"done"}}`)
	h.apply(patch("task", "t1", `{"points":6}`), 4)
	wantJSON(t, "payload without a transition", h.rowAt(4).Payload, `{"properties":["points"]}`)
	wantBytes(t, "typed record", h.get("task", "t1").Properties, `{"points":6,"status":"done","title":"x"}`)

	// Redefining and deleting bump the schema version; an unregistered type
	// accepts any object.
	if _, err := h.log.PutType(h.ctx, "s", "task", []byte(`{"strict":false}`)); err != nil {
		t.Fatalf("redefine type: %v", err)
	}
	if err := h.log.DeleteType(h.ctx, "s", "task"); err != nil {
		t.Fatalf("delete type: %v", err)
	}
	if v := h.spaceRow("s").SchemaVersion; v != v0+3 {
		t.Fatalf("schema version %d after put, put, delete; want %d", v, v0+3)
	}
	if _, err := h.log.GetType(h.ctx, "s", "task"); !isNotFound(err) {
		t.Fatalf("get deleted type: err %v, want not_found", err)
	}
	if err := h.log.DeleteType(h.ctx, "s", "task"); !isNotFound(err) {
		t.Fatalf("delete absent type: err %v, want not_found", err)
	}
	h.apply(put("task", "t2", `{"title":7,"color":"red"}`), 5)
}

// testBatches covers non-atomic and atomic batches with a rejection.
func testBatches(t *testing.T, open OpenFunc) {
	t.Parallel()
	h := newHarness(t, open, changelog.Options{})
	h.apply(put("task", "x", `{"v":1}`), 1)
	res := h.write(put("task", "a", `{"v":1}`), ifVersion(patch("task", "x", `{"v":2}`), 99), put("task", "c", `{"v":1}`))
	wantReceipt(t, "batch 0", res.Receipts[0], store.Receipt{Status: store.ReceiptApplied, Seq: 2, Version: 2, Accepted: []string{"v"}})
	wantReceipt(t, "batch 1", res.Receipts[1], store.Receipt{Status: store.ReceiptRejected, Version: -1, Reason: reason(problem.Conflict)})
	wantReceipt(t, "batch 2", res.Receipts[2], store.Receipt{Status: store.ReceiptApplied, Seq: 3, Version: 3, Accepted: []string{"v"}})
	if res.LastSeq != 3 || res.Entities[1] != nil || res.Entities[0] == nil || res.Entities[2] == nil {
		t.Fatalf("batch result = %s", js(res))
	}
	h.wantHead(3)

	res = h.writeReq(changelog.WriteRequest{Atomic: true, Mutations: []changelog.Mutation{
		withID(put("task", "d", `{"v":1}`), "at-0"),
		ifVersion(patch("task", "x", `{"v":2}`), 99),
		put("task", "e", `{"v":1}`),
	}})
	for i, r := range res.Receipts {
		if r.Status != store.ReceiptRejected || r.Seq != 0 || r.Reason == nil {
			t.Fatalf("atomic receipt %d = %s, want rejected with a reason", i, js(r))
		}
	}
	if res.Receipts[1].Reason.Code != problem.Conflict {
		t.Fatalf("atomic failing receipt = %s, want reason conflict", js(res.Receipts[1]))
	}
	if res.LastSeq != 3 {
		t.Fatalf("atomic last seq %d, want the head 3", res.LastSeq)
	}
	h.wantHead(3)
	h.wantGone("task", "d")
	h.wantGone("task", "e")
	wantBytes(t, "x", h.get("task", "x").Properties, `{"v":1}`)

	res = h.writeReq(changelog.WriteRequest{Atomic: true, Mutations: []changelog.Mutation{
		put("task", "d", `{"v":1}`), patch("task", "x", `{"v":2}`), put("task", "e", `{"v":1}`),
	}})
	for i, r := range res.Receipts {
		if r.Status != store.ReceiptApplied || r.Seq != int64(4+i) {
			t.Fatalf("atomic success receipt %d = %s, want applied at %d", i, js(r), 4+i)
		}
	}
	h.wantHead(6)
}
