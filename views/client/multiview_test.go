package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/views"
	viewclient "github.com/eddy-run/eddy/views/client"
)

var bg = context.Background()

func TestIdentityComesFromThePageContext(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		a := vctx(t, "s", "alpha", "alpha", "e1")
		b := vctx(t, "s", "beta", "beta", "e1")
		bootstrapped(t, mv, a, "a1", rec("t1", 1, `{"project":"alpha"}`))
		// A page of view b continuing a's cursor is b's page: b is not
		// bootstrapped, so it is refused, and a's state is untouched.
		if _, err := mv.ApplyDelta(bg, delta(b, "a1", "a2", up(rec("t2", 2, `{}`)))); !errors.Is(err, viewclient.ErrGap) {
			t.Fatalf("b's page on a's cursor: %v", err)
		}
		// Relabelling a page (another view name under a's fingerprint) is
		// a forged context.
		forged := a
		forged.View = "beta"
		if _, err := mv.ApplyDelta(bg, delta(forged, "a1", "a2", up(rec("t2", 2, `{}`)))); !errors.Is(err, viewclient.ErrBadPage) {
			t.Fatalf("forged context: %v", err)
		}
		if cur, _, _ := mv.Cursor(bg, a); cur != "a1" || version(t, mv, "s", "t2") != 0 {
			t.Fatalf("a's cursor %q, t2 applied", cur)
		}
		if o := owners(t, mv, "s", "t1"); !slices.Equal(o, []string{a.Fingerprint}) {
			t.Fatalf("owners = %v", o)
		}
	})
}

func TestBadPagesAreRefusedWhole(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		a := vctx(t, "s", "alpha", "alpha", "e1")
		truncated := boot(a, "tok", 0, "", "c1", rec("t1", 1, `{}`))
		truncated.Records = []byte(`[{"type":"task","id":"t1","version":1},`)
		noCursor := boot(a, "tok", 0, "", "c1")
		noCursor.Cursor = nil
		noVersion := boot(a, "tok", 0, "", "c1")
		noVersion.Records = []byte(`[{"type":"task","id":"t1"}]`)
		noCtx := boot(a, "tok", 0, "", "c1")
		noCtx.Context = views.Context{}
		for name, p := range map[string]views.BootstrapPage{"truncated": truncated, "no cursor": noCursor, "no version": noVersion, "no context": noCtx} {
			if _, err := mv.ApplyBootstrap(bg, p); !errors.Is(err, viewclient.ErrBadPage) {
				t.Fatalf("%s: %v", name, err)
			}
		}
		bootstrapped(t, mv, a, "c1")
		bad := delta(a, "c1", "c2", up(rec("t1", 2, `{}`)))
		bad.Commits[0].Changes = append(bad.Commits[0].Changes, views.Change{Kind: "moved", Type: "task", ID: "t1", Version: 2})
		noRecord := delta(a, "c1", "c2", views.Change{Kind: views.Upsert, Type: "task", ID: "t1", Version: 2})
		for name, p := range map[string]views.DeltaPage{"unknown kind": bad, "upsert without record": noRecord, "no cursor": delta(a, "c1", "")} {
			if _, err := mv.ApplyDelta(bg, p); !errors.Is(err, viewclient.ErrBadPage) {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if cur, _, _ := mv.Cursor(bg, a); cur != "c1" || version(t, mv, "s", "t1") != 0 {
			t.Fatalf("a bad page changed the state: cursor %q", cur)
		}
	})
}

// failing is a ClientState whose transactions fail at PutProgress, the
// last write of every page.
type failing struct{ viewclient.ClientState }

type failingTx struct{ viewclient.StateTx }

var errBoom = errors.New("disk full")

func (f failing) Begin(ctx context.Context) (viewclient.StateTx, error) {
	tx, err := f.ClientState.Begin(ctx)
	return failingTx{tx}, err
}

func (failingTx) PutProgress(viewclient.Progress) error { return errBoom }

func TestAPageIsOneLocalTransaction(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		a := vctx(t, "s", "alpha", "alpha", "e1")
		bootstrapped(t, mv, a, "c1", rec("t1", 1, `{}`))
		broken := viewclient.New(failing{mv.State()})
		if _, err := broken.ApplyDelta(bg, delta(a, "c1", "c2", up(rec("t1", 2, `{}`)), up(rec("t2", 3, `{}`)), del("t1", 4))); !errors.Is(err, errBoom) {
			t.Fatalf("apply = %v", err)
		}
		if _, err := broken.ApplyBootstrap(bg, boot(vctx(t, "s", "b", "b", "e1"), "x", 0, "", "x1", rec("t9", 1, `{}`))); !errors.Is(err, errBoom) {
			t.Fatalf("bootstrap = %v", err)
		}
		if version(t, mv, "s", "t1") != 1 || version(t, mv, "s", "t2") != 0 || version(t, mv, "s", "t9") != 0 {
			t.Fatal("a failed page left some of its changes")
		}
		if cur, _, _ := mv.Cursor(bg, a); cur != "c1" {
			t.Fatalf("cursor = %q", cur)
		}
		apply(t, mv, delta(a, "c1", "c2", up(rec("t1", 2, `{}`))))
		if version(t, mv, "s", "t1") != 2 {
			t.Fatal("state unusable after a failed page")
		}
	})
}

func TestDuplicatePagesAreNoops(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		a := vctx(t, "s", "alpha", "alpha", "e1")
		p0 := boot(a, "k0", 0, "k1", "", rec("t1", 1, `{}`))
		p1 := boot(a, "k1", 1, "", "c1", rec("t2", 1, `{}`))
		for _, p := range []views.BootstrapPage{p0, p0, p1, p1, p0} {
			if _, err := mv.ApplyBootstrap(bg, p); err != nil {
				t.Fatal(err)
			}
		}
		d1 := delta(a, "c1", "c2", up(rec("t1", 2, `{}`)))
		d2 := delta(a, "c2", "c3", del("t1", 3))
		apply(t, mv, d1)
		if !apply(t, mv, d1).Duplicate {
			t.Fatal("a repeated delta page was applied again")
		}
		apply(t, mv, d2)
		// A late duplicate of an older page must not resurrect t1.
		if a := apply(t, mv, d1); !a.Duplicate || version(t, mv, "s", "t1") != 0 {
			t.Fatalf("late duplicate: %+v", a)
		}
		if cur, _, _ := mv.Cursor(bg, a); cur != "c3" {
			t.Fatalf("cursor = %q", cur)
		}
	})
}

func TestGapsAndOutOfOrderPagesAreRefused(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		a := vctx(t, "s", "alpha", "alpha", "e1")
		if _, err := mv.ApplyBootstrap(bg, boot(a, "k1", 1, "", "c1", rec("t2", 1, `{}`))); !errors.Is(err, viewclient.ErrGap) {
			t.Fatalf("second page first: %v", err)
		}
		if _, err := mv.ApplyDelta(bg, delta(a, "c1", "c2")); !errors.Is(err, viewclient.ErrGap) {
			t.Fatalf("delta before bootstrap: %v", err)
		}
		mustBoot(t, mv, boot(a, "k0", 0, "k1", "", rec("t1", 1, `{}`)))
		if _, err := mv.ApplyBootstrap(bg, boot(a, "k2", 2, "", "c1")); !errors.Is(err, viewclient.ErrGap) {
			t.Fatalf("skipped bootstrap page: %v", err)
		}
		mustBoot(t, mv, boot(a, "k1", 1, "", "c1", rec("t2", 1, `{}`)))
		if _, err := mv.ApplyBootstrap(bg, boot(a, "z0", 0, "", "c9")); !errors.Is(err, viewclient.ErrGap) {
			t.Fatalf("second bootstrap without reset: %v", err)
		}
		if _, err := mv.ApplyDelta(bg, delta(a, "c2", "c3", up(rec("t1", 3, `{}`)))); !errors.Is(err, viewclient.ErrGap) {
			t.Fatalf("out-of-order delta: %v", err)
		}
		if version(t, mv, "s", "t1") != 1 {
			t.Fatal("refused page applied")
		}
	})
}

func mustBoot(t *testing.T, mv *viewclient.MultiViewClient, p views.BootstrapPage) {
	t.Helper()
	if _, err := mv.ApplyBootstrap(bg, p); err != nil {
		t.Fatal(err)
	}
}

func entities(t *testing.T, mv *viewclient.MultiViewClient, space, typ string) []viewclient.Entity {
	t.Helper()
	es, err := mv.Entities(bg, space, typ)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestRetentionIsTheUnionOfMemberships(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		open := vctx(t, "s", "open", "x", "e1")
		alpha := vctx(t, "s", "alpha", "alpha", "e1")
		bootstrapped(t, mv, open, "o1", rec("t1", 1, `{"project":"alpha"}`), rec("t2", 1, `{}`))
		bootstrapped(t, mv, alpha, "a1", rec("t1", 1, `{"project":"alpha"}`), rec("t2", 1, `{}`))
		// t1 moves to project beta: alpha loses it, open still owns it.
		apply(t, mv, delta(alpha, "a1", "a2", rm("t1", 2)))
		if version(t, mv, "s", "t1") != 1 || !slices.Equal(owners(t, mv, "s", "t1"), []string{open.Fingerprint}) {
			t.Fatalf("t1 after leaving alpha: v%d owners %v", version(t, mv, "s", "t1"), owners(t, mv, "s", "t1"))
		}
		apply(t, mv, delta(open, "o1", "o2", up(rec("t1", 2, `{"project":"beta"}`)), rm("t1", 3)))
		if version(t, mv, "s", "t1") != 0 {
			t.Fatal("t1 kept with no view owning it")
		}
		// A global delete removes t2 and every membership at once.
		apply(t, mv, delta(open, "o2", "o3", del("t2", 4)))
		if version(t, mv, "s", "t2") != 0 || len(owners(t, mv, "s", "t2")) != 0 {
			t.Fatal("t2 survived its delete")
		}
		apply(t, mv, delta(alpha, "a2", "a3", up(rec("t2", 1, `{}`))))
		if version(t, mv, "s", "t2") != 0 {
			t.Fatal("alpha's older upsert resurrected t2")
		}
	})
}

func TestAnOlderUpsertNeverReplacesANewerRecord(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		fast := vctx(t, "s", "fast", "x", "e1")
		slow := vctx(t, "s", "slow", "x", "e1")
		bootstrapped(t, mv, fast, "f1")
		bootstrapped(t, mv, slow, "s1")
		apply(t, mv, delta(fast, "f1", "f2", up(rec("t1", 5, `{"n":5}`))))
		apply(t, mv, delta(slow, "s1", "s2", up(rec("t1", 3, `{"n":3}`))))
		if version(t, mv, "s", "t1") != 5 {
			t.Fatalf("version = %d", version(t, mv, "s", "t1"))
		}
		if o := owners(t, mv, "s", "t1"); len(o) != 2 {
			t.Fatalf("the slower view's upsert did not own t1: %v", o)
		}
		apply(t, mv, delta(slow, "s2", "s3", up(rec("t1", 7, `{"n":7}`))))
		if version(t, mv, "s", "t1") != 7 {
			t.Fatal("a newer upsert did not replace")
		}
	})
}

func TestATombstoneBarsOldDataAndMembership(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		fast := vctx(t, "s", "fast", "x", "e1")
		slow := vctx(t, "s", "slow", "x", "e1")
		bootstrapped(t, mv, fast, "f1", rec("t1", 2, `{}`))
		apply(t, mv, delta(fast, "f1", "f2", del("t1", 6)))
		// The slow view's bootstrap (frozen before the delete) and its
		// delta both carry older versions: neither resurrects t1.
		bootstrapped(t, mv, slow, "s1", rec("t1", 2, `{}`))
		apply(t, mv, delta(slow, "s1", "s2", up(rec("t1", 4, `{}`))))
		if version(t, mv, "s", "t1") != 0 || len(owners(t, mv, "s", "t1")) != 0 {
			t.Fatal("an old page resurrected a deleted entity")
		}
		es := entities(t, mv, "s", "task")
		if len(es) != 1 || es[0].Tombstone != 6 {
			t.Fatalf("tombstone barrier = %+v", es)
		}
		// Created again after the delete: a newer version passes.
		apply(t, mv, delta(slow, "s2", "s3", up(rec("t1", 8, `{}`))))
		if version(t, mv, "s", "t1") != 8 {
			t.Fatal("a re-created entity was barred")
		}
	})
}

func TestAnOlderFrozenPageProvesOwnershipOnly(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		open := vctx(t, "s", "open", "x", "e1")
		alpha := vctx(t, "s", "alpha", "alpha", "e1")
		bootstrapped(t, mv, open, "o1", rec("t1", 9, `{"n":9}`))
		bootstrapped(t, mv, alpha, "a1", rec("t1", 4, `{"n":4}`)) // frozen at an older watermark
		if version(t, mv, "s", "t1") != 9 {
			t.Fatal("an older frozen page replaced a newer record")
		}
		apply(t, mv, delta(open, "o1", "o2", rm("t1", 10)))
		if version(t, mv, "s", "t1") != 9 {
			t.Fatal("alpha's ownership proven by its frozen page was lost")
		}
	})
}

func TestCursorsAreKeyedByTheFullFingerprint(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		s1 := vctx(t, "one", "tasks", "alpha", "e1")
		s2 := vctx(t, "two", "tasks", "alpha", "e1")
		bootstrapped(t, mv, s1, "x1", rec("t1", 1, `{}`))
		bootstrapped(t, mv, s2, "y1")
		apply(t, mv, delta(s1, "x1", "x2", up(rec("t1", 2, `{}`))))
		if c, _, _ := mv.Cursor(bg, s1); c != "x2" {
			t.Fatalf("space one: %q", c)
		}
		if c, _, _ := mv.Cursor(bg, s2); c != "y1" {
			t.Fatalf("space two: %q", c)
		}
		if version(t, mv, "two", "t1") != 0 {
			t.Fatal("space one's record in space two")
		}
		changed := vctx(t, "one", "tasks", "beta", "e1") // same name and version, other filter
		if _, ok, _ := mv.Cursor(bg, changed); ok {
			t.Fatal("a changed filter found the old cursor")
		}
	})
}

func TestResetViewKeepsSharedKnowledge(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		open := vctx(t, "s", "open", "x", "e1")
		alpha := vctx(t, "s", "alpha", "alpha", "e1")
		bootstrapped(t, mv, open, "o1", rec("t1", 3, `{}`))
		bootstrapped(t, mv, alpha, "a1", rec("t1", 3, `{}`), rec("t2", 2, `{}`), rec("t3", 1, `{}`))
		apply(t, mv, delta(alpha, "a1", "a2", del("t3", 5)))
		if err := mv.ResetView(bg, alpha); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := mv.Cursor(bg, alpha); ok {
			t.Fatal("cursor kept")
		}
		if version(t, mv, "s", "t1") != 3 || version(t, mv, "s", "t2") != 0 {
			t.Fatal("reset kept alpha's only record or dropped open's")
		}
		alpha2 := vctx(t, "s", "alpha", "alpha2", "e1")
		bootstrapped(t, mv, alpha2, "b1", rec("t3", 1, `{}`), rec("t2", 1, `{}`))
		if version(t, mv, "s", "t3") != 0 {
			t.Fatal("the tombstone was forgotten by a view reset")
		}
		if version(t, mv, "s", "t2") != 1 {
			t.Fatal("re-bootstrap after reset not applied")
		}
	})
}

func TestAnEpochResetDiscardsTheSpace(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		a := vctx(t, "s", "alpha", "alpha", "e1")
		other := vctx(t, "o", "alpha", "alpha", "e1")
		bootstrapped(t, mv, a, "c1", rec("t1", 5, `{}`))
		apply(t, mv, delta(a, "c1", "c2", del("t1", 6)))
		bootstrapped(t, mv, other, "d1", rec("t1", 2, `{}`))
		if err := mv.DiscardSpace(bg, "s"); err != nil {
			t.Fatal(err)
		}
		if es := entities(t, mv, "s", ""); len(es) != 0 {
			t.Fatalf("space kept %d entities", len(es))
		}
		if _, ok, _ := mv.Cursor(bg, a); ok {
			t.Fatal("cursor kept")
		}
		// The new epoch's history starts afresh: t1 at version 2 is not
		// barred by the old history's tombstone.
		bootstrapped(t, mv, vctx(t, "s", "alpha", "alpha", "e2"), "n1", rec("t1", 2, `{}`))
		if version(t, mv, "s", "t1") != 2 || version(t, mv, "o", "t1") != 2 {
			t.Fatal("new epoch not applied, or another space touched")
		}
	})
}

func TestAcksDropPendingWritesInThePagesTransaction(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		a := vctx(t, "s", "alpha", "alpha", "e1")
		bootstrapped(t, mv, a, "c1")
		for _, id := range []string{"x", "y", "z"} {
			if _, err := mv.Write(bg, "s", changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: id, Properties: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		cid, _ := mv.ClientID(bg, "s")
		p := delta(a, "c1", "c2", up(rec("x", 7, `{}`)))
		p.Acks = map[string]int64{cid: 2, "someone-else": 9}
		if got := apply(t, mv, p); got.Acked != 2 {
			t.Fatalf("acked %d", got.Acked)
		}
		ps, _ := mv.Pending(bg, "s")
		if len(ps) != 1 || ps[0].Mutation.EntityID != "z" {
			t.Fatalf("pending = %+v", ps)
		}
		o, ok, _ := mv.Read(bg, "s", "task", "x")
		if !ok || o.Pending || o.Record.Version != 7 {
			t.Fatalf("x = %+v", o)
		}
		if o, ok, _ := mv.Read(bg, "s", "task", "z"); !ok || !o.Pending {
			t.Fatalf("z = %+v", o)
		}
	})
}
