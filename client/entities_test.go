package client_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/client"
)

func TestSpaces(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		d := must(e.c.Discover(c))
		if d.Version != "test" || len(d.Spaces) != 1 || d.Spaces[0].Space != "default" || d.Spaces[0].Epoch == "" {
			t.Fatalf("discovery = %+v", d)
		}
		info, created, err := e.c.CreateSpace(c, "team-a")
		if err != nil || !created || info.Space != "team-a" || info.Head != 0 || info.RetainedFrom != 1 {
			t.Fatalf("create = %+v %v %v", info, created, err)
		}
		if _, created, err := e.c.CreateSpace(c, "team-a"); err != nil || created {
			t.Fatalf("create again: created=%v err=%v", created, err)
		}
		sp := e.c.Space("team-a")
		for _, id := range []string{"a", "b", "c"} {
			must(sp.Put(c, "task", id, map[string]any{"title": id}))
		}
		info = must(sp.Info(c))
		if info.Head != 3 || info.Horizon != 0 || info.SchemaVersion != 0 {
			t.Fatalf("info = %+v", info)
		}
		info = must(sp.Prune(c, client.PruneParams{Through: 2}))
		if info.Horizon != 2 || info.RetainedFrom != 3 || info.Head != 3 {
			t.Fatalf("prune = %+v", info)
		}
		_, err = sp.Prune(c, client.PruneParams{Through: 9})
		if ce := wantCode(t, err, "bad_request"); ce.Status != 400 || ce.Details["field"] != "through" {
			t.Fatalf("prune past head = %+v", ce)
		}
		_, err = e.c.Space("nope").Info(c)
		if ce := wantCode(t, err, "not_found"); ce.Status != 404 || ce.RequestID == "" {
			t.Fatalf("missing space = %+v", ce)
		}
		if !client.IsCode(err, "not_found") || client.CodeOf(errors.New("x")) != "" {
			t.Fatal("IsCode/CodeOf")
		}
	})
}

func TestTypeDefinitions(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		def := client.TypeDefinition{
			Strict:     true,
			Properties: map[string]client.PropertyDef{"title": {Kind: "string", Required: true}, "status": {Kind: "string"}},
			States:     map[string]client.StateDef{"status": {Initial: "open", Transitions: map[string][]string{"open": {"done"}, "done": {}}}},
		}
		td, created, err := e.sp.PutType(c, "task", def)
		if err != nil || !created || td.Type != "task" || td.UpdatedAt.IsZero() {
			t.Fatalf("put type = %+v %v %v", td, created, err)
		}
		if _, created, err := e.sp.PutType(c, "task", def); err != nil || created {
			t.Fatalf("put again: created=%v err=%v", created, err)
		}
		got := must(e.sp.GetType(c, "task"))
		var back client.TypeDefinition
		if err := json.Unmarshal(got.Def, &back); err != nil || !back.Strict || back.States["status"].Initial != "open" {
			t.Fatalf("get type = %s (%v)", got.Def, err)
		}
		if tds := must(e.sp.Types(c)); len(tds) != 1 || tds[0].Type != "task" {
			t.Fatalf("types = %+v", tds)
		}
		_, err = e.sp.Put(c, "task", "t1", map[string]any{"status": "open"})
		ce := wantCode(t, err, "unprocessable")
		if rc, ok := ce.Receipt(); !ok || rc.Status != client.ReceiptRejected {
			t.Fatalf("schema rejection receipt = %+v %v", rc, ok)
		}
		_, _, err = e.sp.PutType(c, "task", map[string]any{"strict": "yes"})
		wantCode(t, err, "bad_request")
		if err := e.sp.DeleteType(c, "task"); err != nil {
			t.Fatal(err)
		}
		_, err = e.sp.GetType(c, "task")
		wantCode(t, err, "not_found")
	})
}

func TestEntityWrites(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		res := must(e.sp.Put(c, "task", "t1", map[string]any{"title": "write docs"}))
		if !res.Created || res.Seq != 1 || res.Receipt.Status != client.ReceiptApplied || res.Entity.Version != 1 {
			t.Fatalf("put = %+v", res)
		}
		res = must(e.sp.Put(c, "task", "t1", map[string]any{"title": "write docs"}))
		if res.Created || res.Receipt.Status != client.ReceiptNoop || res.Seq != 1 {
			t.Fatalf("noop put = %+v", res)
		}

		_, err := e.sp.Patch(c, "task", "t1", map[string]any{"status": "done"}, client.WriteOptions{IfMatch: client.Version(7)})
		ce := wantCode(t, err, "precondition_failed")
		if rc, ok := ce.Receipt(); ce.Status != 412 || !ok || rc.Reason == nil || rc.Reason.Code != "precondition_failed" {
			t.Fatalf("If-Match mismatch = %+v receipt %+v", ce, rc)
		}
		res = must(e.sp.Patch(c, "task", "t1", map[string]any{"status": "done"}, client.WriteOptions{IfMatch: client.Version(1)}))
		if res.Seq != 2 || string(res.Entity.Properties) != `{"status":"done","title":"write docs"}` {
			t.Fatalf("patch = %+v %s", res, res.Entity.Properties)
		}
		_, err = e.sp.Put(c, "task", "t9", map[string]any{}, client.WriteOptions{IfMatch: client.Version(0)})
		if err != nil {
			t.Fatalf("If-Match 0 on a new entity: %v", err)
		}

		key := client.WriteOptions{IdempotencyKey: "create-t2"}
		first := must(e.sp.Put(c, "task", "t2", map[string]any{"n": 1}, key))
		again := must(e.sp.Put(c, "task", "t2", map[string]any{"n": 2}, key))
		if again.Receipt.Seq != first.Receipt.Seq || again.Receipt.MutationID != "create-t2" || string(again.Entity.Properties) != `{"n":1}` {
			t.Fatalf("replayed write = %+v, first %+v", again, first)
		}

		gen := must(e.sp.Create(c, "task", map[string]any{"title": "generated"}))
		if !gen.Created || len(gen.Entity.ID) != 22 {
			t.Fatalf("create = %+v", gen)
		}
		rec := must(e.sp.Get(c, "task", gen.Entity.ID))
		if rec.Version != gen.Entity.Version || rec.CreatedAt.IsZero() || rec.Links == nil {
			t.Fatalf("get = %+v", rec)
		}

		del := must(e.sp.Delete(c, "task", "t1"))
		if del.Entity != nil || del.Receipt.Status != client.ReceiptApplied {
			t.Fatalf("delete = %+v", del)
		}
		_, err = e.sp.Get(c, "task", "t1")
		wantCode(t, err, "not_found")
		_, err = e.sp.Patch(c, "task", "t1", map[string]any{"x": 1})
		wantCode(t, err, "not_found")
		_, err = e.sp.Put(c, "task", "bad id/?%", map[string]any{})
		if ce := wantCode(t, err, "bad_request"); ce.Details["parameter"] != "id" || !strings.Contains(ce.Message, `"bad id/?%"`) {
			t.Fatalf("bad id = %+v", ce)
		}
	})
}

func TestListPages(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			must(e.sp.Put(c, "task", id, map[string]any{"v": 1}))
		}
		must(e.sp.Put(c, "note", "n", map[string]any{}))
		first := must(e.sp.List(c, "task", client.ListParams{Limit: 2}))
		if len(first.Items) != 2 || first.Head != 6 || first.Next == "" {
			t.Fatalf("first page = %+v", first)
		}
		// Writes between pages do not show: every page is as of head 6.
		must(e.sp.Patch(c, "task", "e", map[string]any{"v": 2}))
		must(e.sp.Delete(c, "task", "d"))
		var ids []string
		var heads []int64
		for page, err := range e.sp.ListPages(c, "task", 2) {
			if err != nil {
				t.Fatal(err)
			}
			heads = append(heads, page.Head)
			for _, r := range page.Items {
				ids = append(ids, r.ID)
			}
		}
		if !slices.Equal(ids, []string{"a", "b", "c", "e"}) || len(heads) != 2 || heads[0] != 8 || heads[1] != 8 {
			t.Fatalf("walk = %v heads %v", ids, heads)
		}
		page := must(e.sp.List(c, "task", client.ListParams{Limit: 10, After: first.Next}))
		if len(page.Items) != 3 || page.Head != 6 || string(page.Items[2].Properties) != `{"v":1}` {
			t.Fatalf("pages as of the first head = %+v", page)
		}
		_, err := e.sp.List(c, "task", client.ListParams{After: "garbage"})
		wantCode(t, err, "bad_request")
	})
}

func TestMutate(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		res := must(e.sp.Mutate(c, client.Batch{Mutations: []client.Mutation{
			{MutationID: "m-1", Op: client.OpPut, Type: "task", EntityID: "a", Properties: json.RawMessage(`{"title":"A"}`)},
			{Op: client.OpLink, Type: "task", EntityID: "a", Rel: "assignee", Target: &client.EntityKey{Type: "user", ID: "u1"}},
			{Op: client.OpDelete, Type: "task", EntityID: "nope"},
		}}))
		if len(res.Receipts) != 3 || res.Seq != 2 || res.Receipts[0].MutationID != "m-1" || res.Receipts[2].Status != client.ReceiptRejected ||
			res.Receipts[2].Reason.Code != "not_found" {
			t.Fatalf("batch = %+v", res)
		}
		rec := must(e.sp.Get(c, "task", "a"))
		if len(rec.Links) != 1 || rec.Links[0].Rel != "assignee" {
			t.Fatalf("links = %+v", rec.Links)
		}
		atomic := must(e.sp.Mutate(c, client.Batch{Atomic: true, Mutations: []client.Mutation{
			{Op: client.OpPut, Type: "task", EntityID: "b", Properties: json.RawMessage(`{}`)},
			{Op: client.OpDelete, Type: "task", EntityID: "nope"},
		}}))
		if atomic.Seq != 2 || atomic.Receipts[0].Status != client.ReceiptRejected {
			t.Fatalf("atomic batch = %+v", atomic)
		}
		_, err := e.sp.Mutate(c, client.Batch{Mutations: []client.Mutation{{Op: "frob", Type: "task", EntityID: "a"}}})
		if ce := wantCode(t, err, "bad_request"); ce.Details["index"] != float64(0) {
			t.Fatalf("bad op = %+v", ce)
		}
	})
}

func TestTokens(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		tok := must(e.c.CreateToken(c, client.TokenParams{Space: "default", Role: client.RoleReader, Types: []string{"task"}, Actor: "dashboard"}))
		if tok.ID == "" || tok.Token == "" {
			t.Fatalf("created = %+v", tok)
		}
		list := must(e.c.Tokens(c))
		i := slices.IndexFunc(list, func(t client.Token) bool { return t.ID == tok.ID })
		if i < 0 || list[i].Actor != "dashboard" || list[i].Role != auth.RoleReader {
			t.Fatalf("tokens = %+v", list)
		}
		reader := e.client(tok.Token, nil).Space("default")
		must(e.sp.Put(c, "task", "t1", map[string]any{}))
		if _, err := reader.Get(c, "task", "t1"); err != nil {
			t.Fatal(err)
		}
		_, err := reader.Put(c, "task", "t2", map[string]any{})
		wantCode(t, err, "forbidden")
		_, err = reader.Pull(c, client.PullParams{After: 0})
		wantCode(t, err, "forbidden")
		if err := e.c.RevokeToken(c, tok.ID); err != nil {
			t.Fatal(err)
		}
		_, err = reader.Get(c, "task", "t1")
		if ce := wantCode(t, err, "unauthorized"); ce.Status != 401 {
			t.Fatalf("revoked = %+v", ce)
		}
		wantCode(t, e.c.RevokeToken(c, tok.ID), "not_found")
	})
}
