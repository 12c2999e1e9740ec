package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	api "github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/internal/eddytest"
	"github.com/eddy-run/eddy/store"
	viewclient "github.com/eddy-run/eddy/views/client"
)

// lossy pushes, then loses the answer: the push landed, the client does
// not know.
type lossy struct{ to viewclient.Pusher }

var errLost = errors.New("test: connection reset")

func (l lossy) Push(ctx context.Context, id string, ms []api.PushMutation) (api.PushResult, error) {
	_, _ = l.to.Push(ctx, id, ms)
	return api.PushResult{}, errLost
}

// model is one run of the model-based test: a MultiViewClient syncing
// two views of a server while it and another writer change tasks.
type model struct {
	t      *testing.T
	rng    *rand.Rand
	mv     *viewclient.MultiViewClient
	sp     *api.Space // the client's principal (a writer)
	admin  *api.Space // the other writer, and view admin
	proj   string     // the project the proj view currently selects
	ver    int
	steps  []string
	budget int
	// seen is the highest version each task was held at locally;
	// shown are local puts no delivery has happened since, which the
	// optimistic read must show.
	seen  map[string]int64
	shown map[string]json.RawMessage
}

var ids = []string{"t0", "t1", "t2", "t3", "t4", "t5"}

var projects = []string{"alpha", "beta", "gamma"}

func (m *model) props() json.RawMessage {
	return fmt.Appendf(nil, `{"project":%q,"open":%v,"n":%d}`, projects[m.rng.IntN(3)], m.rng.IntN(2) == 0, m.rng.IntN(1000))
}

// mutation is a random put, patch or delete of a random task.
func (m *model) mutation() changelog.Mutation {
	id := ids[m.rng.IntN(len(ids))]
	switch m.rng.IntN(5) {
	case 0:
		return changelog.Mutation{Op: changelog.OpDelete, Type: "task", EntityID: id}
	case 1:
		return changelog.Mutation{Op: changelog.OpPatch, Type: "task", EntityID: id, Patch: fmt.Appendf(nil, `{"open":%v}`, m.rng.IntN(2) == 0)}
	}
	return changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: id, Properties: m.props()}
}

func (m *model) putViews(ctx context.Context) {
	m.ver++
	def := map[string]any{"version": fmt.Sprintf("v%d", m.ver), "types": []string{"task"},
		"filter": map[string]any{"fieldEquals": map[string]any{"field": "project", "expected": m.proj}}}
	if _, _, err := m.admin.View("proj").Put(ctx, def); err != nil {
		m.t.Fatal(err)
	}
}

func (m *model) step(ctx context.Context) {
	t := m.t
	switch k := m.rng.IntN(10); k {
	case 0, 1:
		mu := m.mutation()
		m.steps = append(m.steps, "local "+mu.Op+" "+mu.EntityID)
		if _, err := m.mv.Write(ctx, "default", mu); err != nil {
			t.Fatal(err)
		}
		delete(m.shown, mu.EntityID)
		if mu.Op == changelog.OpPut {
			m.shown[mu.EntityID] = mu.Properties
		}
	case 2:
		mu := m.mutation()
		m.steps = append(m.steps, "remote "+mu.Op+" "+mu.EntityID)
		if _, err := m.admin.Mutate(ctx, api.Batch{Mutations: []api.Mutation{mu}}); err != nil {
			t.Fatal(err)
		}
	case 3:
		rep, err := m.mv.Push(ctx, "default", m.sp)
		if err != nil {
			t.Fatal(err)
		}
		m.steps = append(m.steps, fmt.Sprintf("push %+v", rep))
	case 4:
		m.steps = append(m.steps, "push, answer lost")
		if _, err := m.mv.Push(ctx, "default", lossy{m.sp}); !errors.Is(err, errLost) && err != nil {
			t.Fatal(err)
		}
	case 5:
		m.proj = projects[m.rng.IntN(3)]
		m.steps = append(m.steps, "view proj now selects "+m.proj)
		m.putViews(ctx)
	default:
		view := []string{"open", "proj"}[m.rng.IntN(2)]
		m.steps = append(m.steps, "deliver "+view)
		m.deliver(ctx, m.sp.View(view))
		clear(m.shown)
	}
	m.invariants(ctx)
}

// invariants are what must hold after every step: a held record never
// goes back to an older version, never outlives its tombstone, and a
// pending put shows in the optimistic read.
func (m *model) invariants(ctx context.Context) {
	t := m.t
	es, err := m.mv.Entities(ctx, "default", "task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Record == nil {
			continue
		}
		if e.RecordVersion < m.seen[e.ID] {
			t.Fatalf("%s went back from version %d to %d\nsteps %v", e.ID, m.seen[e.ID], e.RecordVersion, m.steps)
		}
		if e.RecordVersion <= e.Tombstone {
			t.Fatalf("%s at version %d outlives its tombstone at %d\nsteps %v", e.ID, e.RecordVersion, e.Tombstone, m.steps)
		}
		m.seen[e.ID] = e.RecordVersion
	}
	for id, props := range m.shown {
		o, ok, err := m.mv.Read(ctx, "default", "task", id)
		if err != nil || !ok || !sameJSON(o.Record.Properties, props) || !o.Pending {
			ps, _ := m.mv.Pending(ctx, "default")
			t.Fatalf("optimistic %s = %+v %v %v, want the pending put %s\nsteps %v\npending %+v", id, o, ok, err, props, m.steps, ps)
		}
	}
}

// deliver syncs a view, delivering delta pages out of order and twice.
func (m *model) deliver(ctx context.Context, v *api.View) {
	t := m.t
	vs, err := m.mv.Views(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cur string
	var ok bool
	for _, p := range vs {
		if p.Context.View == v.Name() && p.Phase == viewclient.Streaming {
			cur, ok = p.Cursor, true
		}
	}
	if !ok {
		m.bootstrapTwice(ctx, v)
		return
	}
	p1, err := v.Delta(ctx, cur, m.budget)
	if _, reset := api.AsReset(err); reset {
		if _, err := m.mv.Sync(ctx, v, viewclient.SyncOptions{PageSize: 2}); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if p1.HasMore && m.rng.IntN(2) == 0 {
		p2, err := v.Delta(ctx, p1.Cursor, m.budget)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.mv.ApplyDelta(ctx, p2); !errors.Is(err, viewclient.ErrGap) {
			t.Fatalf("a page ahead of the cursor: %v", err)
		}
		m.apply(ctx, p1, false)
		m.apply(ctx, p2, false)
		m.apply(ctx, p1, true)
		return
	}
	m.apply(ctx, p1, false)
	m.apply(ctx, p1, true)
}

func (m *model) apply(ctx context.Context, p api.DeltaPage, dup bool) {
	a, err := m.mv.ApplyDelta(ctx, p)
	if err != nil {
		m.t.Fatal(err)
	}
	if dup && !a.Duplicate && (len(p.Commits) > 0 || p.PreviousCursor != p.Cursor) {
		m.t.Fatalf("a page applied twice: %+v", a)
	}
}

// bootstrapTwice bootstraps a view delivering every page twice and the
// previous page again after each.
func (m *model) bootstrapTwice(ctx context.Context, v *api.View) {
	strategy := []string{api.Frozen, api.Keyset}[m.rng.IntN(2)]
	var prev *api.BootstrapPage
	err := v.Bootstrap(ctx, api.BootstrapOptions{PageSize: 2, Strategy: strategy}, func(p api.BootstrapPage) error {
		for range 2 {
			if _, err := m.mv.ApplyBootstrap(ctx, p); err != nil {
				return err
			}
		}
		if prev != nil {
			a, err := m.mv.ApplyBootstrap(ctx, *prev)
			if err != nil {
				return fmt.Errorf("an older bootstrap page again: %w", err)
			}
			if !a.Duplicate {
				return fmt.Errorf("an older bootstrap page again: %+v, not a duplicate", a)
			}
		}
		prev = &p
		return nil
	})
	if _, reset := api.AsReset(err); reset {
		return // the view changed under the bootstrap: a later delivery resets it
	}
	if err != nil {
		m.t.Fatal(err)
	}
}

// finish pushes everything and syncs both views to the head.
func (m *model) finish(ctx context.Context) {
	t := m.t
	if _, err := m.mv.Push(ctx, "default", m.sp); err != nil {
		t.Fatal(err)
	}
	for _, view := range []string{"open", "proj"} {
		if _, err := m.mv.Sync(ctx, m.sp.View(view), viewclient.SyncOptions{PageSize: 3}); err != nil {
			t.Fatal(err)
		}
	}
	clear(m.shown)
	clear(m.seen) // the final sync may reset views
	if ps, _ := m.mv.Pending(ctx, "default"); len(ps) != 0 {
		t.Fatalf("%d writes still pending after the final push and sync: %+v", len(ps), ps)
	}
}

// check compares the local replica with the server's views at the end.
func (m *model) check(ctx context.Context) {
	t := m.t
	want := map[string]store.Record{}
	for page, err := range m.admin.ListPages(ctx, "task", 100) {
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Items {
			var p struct {
				Project string `json:"project"`
				Open    bool   `json:"open"`
			}
			if err := json.Unmarshal(r.Properties, &p); err != nil {
				t.Fatal(err)
			}
			if p.Open || p.Project == m.proj {
				want[r.ID] = r
			}
		}
	}
	got, err := m.mv.List(ctx, "default", "task")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("local replica has %d tasks, the server's views %d\nlocal %v\nserver %v\nsteps %v", len(got), len(want), got, want, m.steps)
	}
	for _, o := range got {
		w, ok := want[o.Record.ID]
		if !ok || o.Pending || w.Version != o.Record.Version || string(w.Properties) != string(o.Record.Properties) {
			t.Fatalf("local %s = %+v, server %+v (present %v)\nsteps %v", o.Record.ID, o, w, ok, m.steps)
		}
	}
}

func TestModelReplicaConvergesOnTheServersViews(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		srv := eddytest.New(t, eddytest.SQLite)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		adminC, err := api.New(srv.URL, api.Options{Token: srv.Admin})
		if err != nil {
			t.Fatal(err)
		}
		_, writer := srv.Token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, Actor: "app"})
		wc, err := api.New(srv.URL, api.Options{Token: writer})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(adminC.CloseIdleConnections)
		t.Cleanup(wc.CloseIdleConnections)
		admin := adminC.Space("default")
		if _, _, err := admin.View("open").Put(ctx, map[string]any{"version": "v1", "types": []string{"task"},
			"filter": map[string]any{"cel": "entity.properties.open == true"}}); err != nil {
			t.Fatal(err)
		}
		for seed := range uint64(6) {
			m := &model{t: t, rng: rand.New(rand.NewPCG(seed, 12)), mv: mv, sp: wc.Space("default"), admin: admin, proj: "alpha", budget: 1,
				seen: map[string]int64{}, shown: map[string]json.RawMessage{}}
			m.putViews(ctx)
			for range 100 {
				m.step(ctx)
			}
			m.finish(ctx)
			m.check(ctx)
		}
	})
}

// sameJSON reports whether two JSON values are equal as values.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
