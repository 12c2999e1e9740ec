package views

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/storetest"
)

// TestFrozenRetryIdentical: every page of a frozen session, retried after
// writes that change the view, answers byte for byte the same.
func TestFrozenRetryIdentical(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		for i := range 7 {
			e.write(put("task", fmt.Sprintf("t%d", i), fmt.Sprintf(`{"project":"alpha","n":%d}`, i)))
		}
		e.putView("alpha", alphaView)
		pages := e.bootstrap("alpha", Frozen, 3, nil)
		if len(pages) != 3 {
			e.t.Fatalf("%d pages, want 3", len(pages))
		}
		first := encodePages(e.t, pages)
		e.write(patch("task", "t0", `{"project":"beta"}`), del("task", "t4"), put("task", "t9", `{"project":"alpha"}`),
			patch("task", "t6", `{"n":60}`))
		again := encodePages(e.t, e.bootstrapTokens("alpha", pages))
		if !reflect.DeepEqual(first, again) {
			e.t.Fatalf("retried pages differ:\n%s\n%s", first, again)
		}
		var offsets []int64
		for _, p := range pages {
			offsets = append(offsets, p.Offset)
		}
		if fmt.Sprint(offsets) != "[0 3 6]" {
			e.t.Fatalf("offsets %v", offsets)
		}
		// Bootstrap, then delta from the final cursor, is the view now.
		c := newClient(e.t)
		c.applyBootstrap(pages)
		c.catchUp(e, "alpha", 2)
		if got, want := c.ids(), e.truth("alpha"); !reflect.DeepEqual(got, want) {
			e.t.Fatalf("client %v, view %v", got, want)
		}
	})
}

func encodePages(t testing.TB, pages []BootstrapPage) []string {
	t.Helper()
	out := make([]string, len(pages))
	for i, p := range pages {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// bootstrapTokens re-reads the pages of earlier pages' tokens.
func (e *env) bootstrapTokens(view string, pages []BootstrapPage) []BootstrapPage {
	e.t.Helper()
	out := make([]BootstrapPage, len(pages))
	for i, p := range pages {
		got, err := e.svc.Page(e.ctx, "s", view, p.Token, admin)
		if err != nil {
			e.t.Fatalf("retry page %d: %v", i, err)
		}
		out[i] = got
	}
	return out
}

// TestBootstrapEmpty: an empty view, and a view of an empty space, have
// one empty final page with a cursor.
func TestBootstrapEmpty(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		e.putView("alpha", alphaView)
		for _, strategy := range []string{Frozen, Keyset} {
			pages := e.bootstrap("alpha", strategy, 5, nil)
			if len(pages) != 1 || string(pages[0].Records) != "[]" || pages[0].Cursor == nil || !pages[0].Complete {
				e.t.Fatalf("%s: %+v", strategy, pages)
			}
		}
		for _, p := range []OpenParams{{PageSize: -1}, {PageSize: MaxPageSize + 1}, {Strategy: "lazy"}, {At: ptr(int64(9))}} {
			p.Space, p.View, p.Reader = "s", "alpha", admin
			if _, err := e.svc.Open(e.ctx, p); problem.CodeOf(err) != problem.BadRequest {
				e.t.Errorf("open %+v: %v, want bad_request", p, err)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestAsOfBootstrap: a bootstrap at a retained seq shows the view as it
// stood then, rebuilt from before-images, and its delta leads to now.
func TestAsOfBootstrap(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		e.write(put("task", "a", `{"project":"alpha","v":1}`), put("task", "b", `{"project":"beta"}`), put("task", "c", `{"project":"alpha"}`))
		at := e.write(patch("task", "a", `{"v":2}`)) // 4
		e.write(patch("task", "a", `{"v":3}`), patch("task", "b", `{"project":"alpha"}`), del("task", "c"), put("task", "d", `{"project":"alpha"}`))
		e.putView("alpha", alphaView)
		for _, strategy := range []string{Frozen, Keyset} {
			pages := e.bootstrap("alpha", strategy, 1, &at)
			c := newClient(e.t)
			c.applyBootstrap(pages)
			if got := fmt.Sprint(c.ids()); got != "[task/a@4 task/c@3]" {
				e.t.Fatalf("%s as of %d: %s", strategy, at, got)
			}
			if v := string(c.records[store.EntityKey{Type: "task", ID: "a"}].Properties); v != `{"project":"alpha","v":2}` {
				e.t.Fatalf("a as of %d: %s", at, v)
			}
			c.catchUp(e, "alpha", 100)
			if got, want := c.ids(), e.truth("alpha"); !reflect.DeepEqual(got, want) {
				e.t.Fatalf("%s: client %v, view %v", strategy, got, want)
			}
		}
	})
}

// TestBootstrapConvergence is the property test: while random writes run
// concurrently with a multi-page bootstrap (keyset or frozen), the
// bootstrap followed by the delta from its cursor equals the view as
// computed at the end.
func TestBootstrapConvergence(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		e.putView("alpha", `{"version":"v1","types":["note","task"],"filter":{"cel":"entity.properties.project == 'alpha' && int(entity.properties.n) % 3 != 0"}}`)
		rng := rand.New(rand.NewPCG(5, 5))
		writeRandom(e, rng, 150)
		for round := range 4 {
			strategy := []string{Keyset, Frozen}[round%2]
			op, err := e.svc.Open(e.ctx, OpenParams{Space: "s", View: "alpha", PageSize: 1 + round*3, Strategy: strategy, Reader: admin})
			if err != nil {
				e.t.Fatal(err)
			}
			var pages []BootstrapPage
			var wg sync.WaitGroup
			wrng := rand.New(rand.NewPCG(9, uint64(round)))
			for tok := &op.Token; tok != nil; {
				wg.Go(func() { writeRandom(e, wrng, 3) }) // writes land between and during page reads
				p, err := e.svc.Page(e.ctx, "s", "alpha", *tok, admin)
				if err != nil {
					e.t.Fatalf("round %d page %d: %v", round, len(pages), err)
				}
				pages = append(pages, p)
				tok = p.NextToken
				wg.Wait()
			}
			c := newClient(e.t)
			c.applyBootstrap(pages)
			e.t.Logf("round %d %s: %d pages, %d records, truth %d", round, strategy, len(pages), len(c.records), len(e.truth("alpha")))
			c.catchUp(e, "alpha", 1+round*7)
			if got, want := c.ids(), e.truth("alpha"); !reflect.DeepEqual(got, want) {
				e.t.Fatalf("round %d (%s, %d pages): client\n%v\nview\n%v", round, strategy, len(pages), got, want)
			}
		}
	})
}

// writeRandom applies n random writes to notes and tasks t0..t29.
func writeRandom(e *env, rng *rand.Rand, n int) {
	e.t.Helper()
	var ms []changelog.Mutation
	for range n {
		typ := []string{"task", "note"}[rng.IntN(2)]
		id := fmt.Sprintf("e%02d", rng.IntN(30))
		props := fmt.Sprintf(`{"project":%q,"n":%d}`, []string{"alpha", "beta"}[rng.IntN(2)], rng.IntN(9))
		switch rng.IntN(5) {
		case 0:
			ms = append(ms, del(typ, id))
		case 1:
			ms = append(ms, patch(typ, id, props))
		default:
			ms = append(ms, put(typ, id, props))
		}
	}
	if _, err := e.log.Write(e.ctx, changelog.WriteRequest{Space: "s", Mutations: ms, Provenance: store.Provenance{Actor: "owner", Via: "api"}}); err != nil {
		e.t.Errorf("write: %v", err)
	}
}

// TestFrozenSecondProcess: on PostgreSQL a frozen session opened by one
// process is served, byte for byte, by another sharing the database.
func TestFrozenSecondProcess(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	open := func() store.Store {
		return storetest.Migrated(t, func(ctx context.Context) (*postgres.Store, error) { return postgres.Open(ctx, url) })
	}
	a, b := newEnv(t, open()), newEnv(t, open())
	for i := range 5 {
		a.write(put("task", fmt.Sprintf("t%d", i), `{"project":"alpha"}`))
	}
	a.putView("alpha", alphaView)
	pages := a.bootstrap("alpha", Frozen, 2, nil)
	a.write(patch("task", "t1", `{"project":"beta"}`))
	got := encodePages(t, b.bootstrapTokens("alpha", pages))
	if want := encodePages(t, pages); !reflect.DeepEqual(got, want) {
		t.Fatalf("the second process serves\n%s\nthe first served\n%s", got, want)
	}
	c := newClient(t)
	c.applyBootstrap(pages)
	c.catchUp(b, "alpha", 10)
	if got, want := c.ids(), b.truth("alpha"); !reflect.DeepEqual(got, want) {
		t.Fatalf("client %v, view %v", got, want)
	}
}

// TestFrozenReaders: a frozen bootstrap opened by an identified reader
// is judged for it when materialized and served to it only; one opened
// anonymously is judged page by page for whoever reads it.
func TestFrozenReaders(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		e.write(put("task", "a", `{"project":"alpha"}`), put("task", "b", `{"project":"alpha"}`), put("task", "c", `{"project":"alpha"}`))
		e.putView("alpha", alphaView)
		notB := Identify(readNot("b"), "tok_1")
		op, err := e.svc.Open(e.ctx, OpenParams{Space: "s", View: "alpha", Reader: notB})
		if err != nil {
			e.t.Fatal(err)
		}
		p, err := e.svc.Page(e.ctx, "s", "alpha", op.Token, notB)
		if err != nil || !strings.Contains(string(p.Records), `"id":"a"`) || strings.Contains(string(p.Records), `"id":"b"`) {
			e.t.Fatalf("page for tok_1: %s, %v", p.Records, err)
		}
		_, err = e.svc.Page(e.ctx, "s", "alpha", op.Token, Identify(readAll{}, "tok_2"))
		wantReset(e.t, err, TokenUnknown)
		// Anonymous: materialized whole, judged when served.
		op, err = e.svc.Open(e.ctx, OpenParams{Space: "s", View: "alpha", Reader: readAll{}})
		if err != nil {
			e.t.Fatal(err)
		}
		for reader, want := range map[Reader]string{readAll{}: "abc", readNot("c"): "ab", Identify(readNot("a"), "tok_3"): "bc"} {
			p, err := e.svc.Page(e.ctx, "s", "alpha", op.Token, reader)
			if err != nil {
				e.t.Fatal(err)
			}
			var recs []store.Record
			if err := json.Unmarshal(p.Records, &recs); err != nil {
				e.t.Fatal(err)
			}
			got := ""
			for _, r := range recs {
				got += r.ID
			}
			if got != want || p.Offset != 0 {
				e.t.Errorf("reader %v: %q (offset %d), want %q", reader, got, p.Offset, want)
			}
		}
	})
}
