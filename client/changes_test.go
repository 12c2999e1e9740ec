package client_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/client"
)

// seed writes 1..6: task a (put, patch), note n, task b (put, delete),
// user u; returns nothing, the seqs are fixed.
func seed(t *testing.T, e *env) {
	t.Helper()
	c := ctx(t)
	must(e.sp.Put(c, "task", "a", map[string]any{"title": "A"}))
	must(e.sp.Patch(c, "task", "a", map[string]any{"status": "done"}))
	must(e.sp.Put(c, "note", "n", map[string]any{"text": "hello"}))
	must(e.sp.Put(c, "task", "b", map[string]any{"title": "B"}))
	must(e.sp.Delete(c, "task", "b"))
	must(e.sp.Put(c, "user", "u", map[string]any{"name": "ann"}))
}

func seqs(rows []client.Row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Seq
	}
	return out
}

func TestChangesForward(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		seed(t, e)
		page := must(e.sp.Changes(c, client.ChangesParams{From: 0, Limit: 4}))
		if !slices.Equal(seqs(page.Changes), []int64{1, 2, 3, 4}) || page.Cursor != 4 {
			t.Fatalf("page = %v cursor %d", seqs(page.Changes), page.Cursor)
		}
		r := page.Changes[0]
		if r.Actor != "owner" || r.Op != "put" || r.Type != "task" || r.EntityID != "a" || r.TS.IsZero() ||
			string(r.Payload) != `{"created":true,"properties":["title"]}` {
			t.Fatalf("row = %+v %s", r, r.Payload)
		}
		filtered := must(e.sp.Changes(c, client.ChangesParams{From: 0, Filter: client.Filter{Types: []string{"task"}, ExcludeOps: []string{"delete"}}}))
		if !slices.Equal(seqs(filtered.Changes), []int64{1, 2, 4}) || filtered.Cursor != 6 {
			t.Fatalf("filtered = %v cursor %d", seqs(filtered.Changes), filtered.Cursor)
		}
		var all []int64
		for page, err := range e.sp.ChangesPages(c, client.ChangesParams{From: 1, Limit: 2}) {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, seqs(page.Changes)...)
		}
		if !slices.Equal(all, []int64{2, 3, 4, 5, 6}) {
			t.Fatalf("pages = %v", all)
		}
		must(e.sp.Prune(c, client.PruneParams{Through: 3}))
		fromHorizon := must(e.sp.Changes(c, client.ChangesParams{From: -1}))
		if !slices.Equal(seqs(fromHorizon.Changes), []int64{4, 5, 6}) {
			t.Fatalf("from the horizon = %v", seqs(fromHorizon.Changes))
		}
		_, err := e.sp.Changes(c, client.ChangesParams{From: 1})
		var ce *client.CompactedError
		if !errors.As(err, &ce) || ce.Horizon != 3 || ce.From != 1 || !client.IsCode(err, "compacted") || ce.Err.Status != 410 {
			t.Fatalf("below the horizon = %v", err)
		}
		_, err = e.sp.Changes(c, client.ChangesParams{From: 99})
		wantCode(t, err, "bad_request")
	})
}

func TestHistory(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		seed(t, e)
		page := must(e.sp.History(c, client.HistoryParams{Limit: 2}))
		if !slices.Equal(seqs(page.Changes), []int64{6, 5}) || page.Exhausted() || *page.Cursor != 5 {
			t.Fatalf("newest = %v %v", seqs(page.Changes), page.Cursor)
		}
		cases := []struct {
			name string
			f    client.Filter
			want []int64
		}{
			{"types", client.Filter{Types: []string{"task", "note"}}, []int64{5, 4, 3, 2, 1}},
			{"ops", client.Filter{Ops: []string{"patch", "delete"}}, []int64{5, 2}},
			{"actors", client.Filter{Actors: []string{"owner"}}, []int64{6, 5, 4, 3, 2, 1}},
			{"excludeTypes", client.Filter{ExcludeTypes: []string{"task"}}, []int64{6, 3}},
			{"excludeActors", client.Filter{ExcludeActors: []string{"owner"}}, nil},
			{"q", client.Filter{Q: "hello"}, nil},
			{"entity", client.Filter{EntityType: "task", EntityID: "b"}, []int64{5, 4}},
			{"when", client.Filter{When: `row.op == "put" && row.type == "task"`}, []int64{4, 1}},
		}
		for _, tc := range cases {
			var got []int64
			for page, err := range e.sp.HistoryPages(c, client.HistoryParams{Limit: 1, Filter: tc.f}) {
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				got = append(got, seqs(page.Changes)...)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: history = %v, want %v", tc.name, got, tc.want)
			}
		}
		older := must(e.sp.History(c, client.HistoryParams{Before: 3}))
		if !slices.Equal(seqs(older.Changes), []int64{2, 1}) || !older.Exhausted() {
			t.Fatalf("before 3 = %v %v", seqs(older.Changes), older.Cursor)
		}
		_, err := e.sp.History(c, client.HistoryParams{Filter: client.Filter{When: "row.op =="}})
		if ce := wantCode(t, err, "bad_request"); ce.Details["position"] == nil {
			t.Fatalf("bad when = %+v", ce)
		}
		_, err = e.sp.History(c, client.HistoryParams{Filter: client.Filter{EntityType: "task"}})
		wantCode(t, err, "bad_request")
	})
}

func TestPull(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		seed(t, e)
		page := must(e.sp.Pull(c, client.PullParams{After: 1, Limit: 1}))
		if len(page.Commits) != 1 || page.NextCursor != 2 || !page.HasMore {
			t.Fatalf("pull = %+v", page)
		}
		cm := page.Commits[0]
		if cm.Seq != 2 || cm.Op != "patch" || len(cm.Changes) != 1 || cm.Changes[0].Before == nil || cm.Changes[0].After == nil ||
			cm.Receipt.Status != client.ReceiptApplied || cm.Provenance.Via != "api" || cm.Provenance.RequestID == "" {
			t.Fatalf("commit = %+v", cm)
		}
		var props map[string]any
		if err := json.Unmarshal(cm.Changes[0].After.Properties, &props); err != nil || props["status"] != "done" {
			t.Fatalf("after = %s", cm.Changes[0].After.Properties)
		}
		var got []int64
		for page, err := range e.sp.PullPages(c, client.PullParams{After: -1, Limit: 2}) {
			if err != nil {
				t.Fatal(err)
			}
			for _, cm := range page.Commits {
				got = append(got, cm.Seq)
			}
		}
		if !slices.Equal(got, []int64{1, 2, 3, 4, 5, 6}) {
			t.Fatalf("pull pages = %v", got)
		}
		_, tok := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Scopes: []string{auth.ScopeLogRead}, Types: []string{"note"}})
		scoped := e.client(tok, nil).Space("default")
		sp := must(scoped.Pull(c, client.PullParams{After: 0, Limit: 100}))
		if len(sp.Commits) != 1 || sp.Commits[0].Seq != 3 || sp.NextCursor != 6 {
			t.Fatalf("scoped pull = %+v", sp)
		}
		_, err := e.sp.Pull(c, client.PullParams{After: 7})
		wantCode(t, err, "bad_request")
	})
}
