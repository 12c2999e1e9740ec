package views

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
	"github.com/eddy-run/eddy/store/storetest"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(streamClientEnv); url != "" {
		runStreamClients(url)
	}
	goleak.VerifyTestMain(m)
}

// driver opens a fresh, migrated store for one test.
type driver struct {
	name string
	open func(t testing.TB) store.Store
}

var drivers = []driver{
	{"sqlite", func(t testing.TB) store.Store {
		t.Helper()
		return storetest.Migrated(t, func(ctx context.Context) (*sqlite.Store, error) {
			return sqlite.Open(ctx, filepath.Join(t.TempDir(), "eddy.db"))
		})
	}},
	{"postgres", func(t testing.TB) store.Store {
		t.Helper()
		return storetest.Migrated(t, func(ctx context.Context) (*postgres.Store, error) {
			return postgres.Open(ctx, pgtest.NewDatabase(t))
		})
	}},
}

// admin reads everything.
var admin = auth.NewReader(&auth.Principal{Space: auth.AllSpaces, Role: auth.RoleAdmin, Actor: "owner"}, nil)

// env is one test's store, log, clock and views service, on space "s".
type env struct {
	t     testing.TB
	ctx   context.Context
	st    store.Store
	log   *changelog.Log
	clock *storetest.Clock
	svc   *Service
}

// forEachDriver runs fn in parallel subtests, once per driver.
func forEachDriver(t *testing.T, fn func(e *env)) {
	t.Helper()
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			fn(newEnv(t, d.open(t)))
		})
	}
}

func newEnv(t testing.TB, st store.Store) *env {
	t.Helper()
	lg := changelog.New(st, changelog.Options{})
	t.Cleanup(func() { _ = lg.Close() })
	e := &env{t: t, ctx: context.Background(), st: st, log: lg,
		clock: storetest.NewClock(time.Date(2026, 8, 4, 12, 0, 0, 0, time.UTC))}
	e.svc = New(lg, Options{Now: e.clock.Now})
	if _, err := lg.EnsureSpace(e.ctx, "s"); err != nil {
		t.Fatal(err)
	}
	return e
}

// write applies mutations and returns the last seq.
func (e *env) write(ms ...changelog.Mutation) int64 {
	e.t.Helper()
	res, err := e.log.Write(e.ctx, changelog.WriteRequest{Space: "s", Mutations: ms, Provenance: store.Provenance{Actor: "owner", Via: "api"}})
	if err != nil {
		e.t.Fatalf("write: %v", err)
	}
	for _, r := range res.Receipts {
		if r.Status == store.ReceiptRejected {
			e.t.Fatalf("write rejected: %+v", r)
		}
	}
	return res.LastSeq
}

func put(typ, id, props string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpPut, Type: typ, EntityID: id, Properties: json.RawMessage(props)}
}

func patch(typ, id, p string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpPatch, Type: typ, EntityID: id, Patch: json.RawMessage(p)}
}

func del(typ, id string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpDelete, Type: typ, EntityID: id}
}

func (e *env) putView(name, def string) View {
	e.t.Helper()
	v, _, err := e.svc.Put(e.ctx, "s", name, []byte(def))
	if err != nil {
		e.t.Fatalf("put view %s: %v", name, err)
	}
	return v
}

const alphaView = `{"version":"v1","types":["task"],"filter":{"fieldEquals":{"field":"project","expected":"alpha"}}}`

// bootstrap runs a whole bootstrap and returns its pages.
func (e *env) bootstrap(view, strategy string, pageSize int, at *int64) []BootstrapPage {
	e.t.Helper()
	op, err := e.svc.Open(e.ctx, OpenParams{Space: "s", View: view, PageSize: pageSize, Strategy: strategy, At: at, Reader: admin})
	if err != nil {
		e.t.Fatalf("open %s: %v", view, err)
	}
	var pages []BootstrapPage
	for tok := &op.Token; tok != nil; {
		p, err := e.svc.Page(e.ctx, "s", view, *tok, admin)
		if err != nil {
			e.t.Fatalf("page %d of %s: %v", len(pages), view, err)
		}
		if p.Context != op.Context {
			e.t.Fatalf("page context %+v, opened with %+v", p.Context, op.Context)
		}
		pages = append(pages, p)
		tok = p.NextToken
	}
	return pages
}

func (e *env) delta(view, cur string, budget int) DeltaPage {
	e.t.Helper()
	p, err := e.svc.Delta(e.ctx, DeltaParams{Space: "s", View: view, Cursor: cur, Budget: budget, Reader: admin})
	if err != nil {
		e.t.Fatalf("delta %s: %v", view, err)
	}
	return p
}

// wantReset fails unless err is reset_required with reason.
func wantReset(t testing.TB, err error, reason Reason) {
	t.Helper()
	if got := ResetReason(err); got != reason {
		t.Fatalf("err %v: reason %q, want %q", err, got, reason)
	}
	var pe *problem.Error
	if !errors.As(err, &pe) || problem.Status(pe.Code) != 409 {
		t.Fatalf("err %v is not a 409", err)
	}
}

// client is a test replica of one view: records by key with version and
// tombstone barriers, as a MultiViewClient keeps them.
type client struct {
	t       testing.TB
	records map[store.EntityKey]store.Record
	tomb    map[store.EntityKey]int64
	cursor  string
}

func newClient(t testing.TB) *client {
	t.Helper()
	return &client{t: t, records: map[store.EntityKey]store.Record{}, tomb: map[store.EntityKey]int64{}}
}

func (c *client) applyBootstrap(pages []BootstrapPage) {
	c.t.Helper()
	for i, p := range pages {
		var recs []store.Record
		if err := json.Unmarshal(p.Records, &recs); err != nil {
			c.t.Fatalf("page %d records: %v", i, err)
		}
		for _, r := range recs {
			c.upsert(r)
		}
		if (p.Cursor != nil) != (i == len(pages)-1) || p.Complete != (i == len(pages)-1) {
			c.t.Fatalf("page %d of %d: cursor %v complete %v", i, len(pages), p.Cursor, p.Complete)
		}
	}
	c.cursor = *pages[len(pages)-1].Cursor
}

func (c *client) upsert(r store.Record) {
	k := r.Key()
	if old, ok := c.records[k]; ok && old.Version >= r.Version || c.tomb[k] >= r.Version {
		return
	}
	c.records[k] = r
}

func (c *client) applyDelta(p DeltaPage) {
	c.t.Helper()
	if p.PreviousCursor != c.cursor {
		c.t.Fatalf("delta page follows %q, client is at %q", p.PreviousCursor, c.cursor)
	}
	for _, cm := range p.Commits {
		for _, ch := range cm.Changes {
			k := store.EntityKey{Type: ch.Type, ID: ch.ID}
			switch ch.Kind {
			case Upsert:
				if ch.Record.Version != ch.Version {
					c.t.Fatalf("upsert version %d, record version %d", ch.Version, ch.Record.Version)
				}
				c.upsert(*ch.Record)
			case RemovedFromScope:
				if old, ok := c.records[k]; ok && old.Version < ch.Version {
					delete(c.records, k)
				}
			case Deleted:
				delete(c.records, k)
				c.tomb[k] = max(c.tomb[k], ch.Version)
			}
		}
	}
	c.cursor = p.Cursor
}

// catchUp applies delta pages until the view has no more.
func (c *client) catchUp(e *env, view string, budget int) {
	c.t.Helper()
	for {
		p := e.delta(view, c.cursor, budget)
		c.applyDelta(p)
		if !p.HasMore {
			return
		}
	}
}

// ids returns the client's records as "type/id@version", sorted.
func (c *client) ids() []string {
	var out []string
	for _, r := range c.records {
		out = append(out, recordKey(r))
	}
	sort.Strings(out)
	return out
}

func recordKey(r store.Record) string {
	return r.Type + "/" + r.ID + "@" + strconv.FormatInt(r.Version, 10)
}

// truth returns what the view holds now, as "type/id@version", sorted.
func (e *env) truth(view string) []string {
	e.t.Helper()
	d, _, err := e.svc.definition(e.ctx, "s", view)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, typ := range d.Types() {
		recs, err := e.st.EntityList(e.ctx, store.EntityListParams{Space: "s", Type: typ, Limit: 1 << 20})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, r := range recs {
			if d.Holds(&r) {
				out = append(out, recordKey(r))
			}
		}
	}
	slices.Sort(out)
	return out
}
