package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/views"
	viewclient "github.com/eddy-run/eddy/views/client"
)

// forEachState runs fn on a MultiViewClient over each ClientState.
func forEachState(t *testing.T, fn func(t *testing.T, mv *viewclient.MultiViewClient)) {
	t.Helper()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		fn(t, viewclient.New(viewclient.NewMemory()))
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		st, err := viewclient.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "local.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, viewclient.New(st))
	})
}

// vctx returns the context of a fieldEquals view of tasks.
func vctx(t *testing.T, space, view, project, epoch string) views.Context {
	t.Helper()
	d, err := views.Parse(view, []byte(fmt.Sprintf(`{"version":"v1","types":["task"],"filter":{"fieldEquals":{"field":"project","expected":%q}}}`, project)))
	if err != nil {
		t.Fatal(err)
	}
	return views.NewContext(space, d, "s1", epoch)
}

// rec returns a task record at a version.
func rec(id string, version int64, props string) *store.Record {
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &store.Record{Type: "task", ID: id, Version: version, Properties: json.RawMessage(props), Links: []store.Link{}, CreatedAt: ts, UpdatedAt: ts}
}

// boot returns a bootstrap page: token tok at offset, with next (or, when
// next is "", complete with cursor cur).
func boot(vc views.Context, tok string, offset int64, next, cur string, recs ...*store.Record) views.BootstrapPage {
	b, _ := json.Marshal(recs)
	if recs == nil {
		b = []byte("[]")
	}
	p := views.BootstrapPage{Context: vc, Token: tok, Offset: offset, Records: b}
	if next != "" {
		p.NextToken = &next
	} else {
		p.Cursor, p.Complete = &cur, true
	}
	return p
}

// delta returns a delta page from prev to cur with one commit per change.
func delta(vc views.Context, prev, cur string, chs ...views.Change) views.DeltaPage {
	p := views.DeltaPage{Context: vc, PreviousCursor: prev, Cursor: cur, Commits: []views.Commit{}}
	for _, ch := range chs {
		p.Commits = append(p.Commits, views.Commit{Seq: ch.Version, Changes: []views.Change{ch}})
	}
	return p
}

func up(r *store.Record) views.Change {
	return views.Change{Kind: views.Upsert, Type: r.Type, ID: r.ID, Version: r.Version, Record: r}
}

func rm(id string, v int64) views.Change {
	return views.Change{Kind: views.RemovedFromScope, Type: "task", ID: id, Version: v}
}

func del(id string, v int64) views.Change {
	return views.Change{Kind: views.Deleted, Type: "task", ID: id, Version: v}
}

// bootstrapped applies a one-page bootstrap ending at cursor cur.
func bootstrapped(t *testing.T, mv *viewclient.MultiViewClient, vc views.Context, cur string, recs ...*store.Record) {
	t.Helper()
	if _, err := mv.ApplyBootstrap(context.Background(), boot(vc, "b-"+cur, 0, "", cur, recs...)); err != nil {
		t.Fatal(err)
	}
}

// apply applies a delta page, failing the test on error.
func apply(t *testing.T, mv *viewclient.MultiViewClient, p views.DeltaPage) viewclient.Applied {
	t.Helper()
	a, err := mv.ApplyDelta(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// version returns the local record's version, 0 when there is none.
func version(t *testing.T, mv *viewclient.MultiViewClient, space, id string) int64 {
	t.Helper()
	raw, ok, err := mv.Get(context.Background(), space, "task", id)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return 0
	}
	var r store.Record
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r.Version
}

// owners returns the fingerprints owning an entity.
func owners(t *testing.T, mv *viewclient.MultiViewClient, space, id string) []string {
	t.Helper()
	es, err := mv.Entities(context.Background(), space, "task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.ID == id {
			return e.Owners
		}
	}
	return nil
}
