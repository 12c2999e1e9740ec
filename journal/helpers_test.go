package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
	"github.com/eddy-run/eddy/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// members is the test's readability rule, standing in for package auth:
// a "doc" is readable by the users its members property lists, a "note"
// by everyone, a "secret" by no one.
type members struct{ user string }

func (m members) CanReadRecord(r *store.Record) bool {
	switch r.Type {
	case "note":
		return true
	case "doc":
		var p struct {
			Members []string `json:"members"`
		}
		return json.Unmarshal(r.Properties, &p) == nil && slices.Contains(p.Members, m.user)
	}
	return false
}

func alice() Client { return Client{User: "alice", Application: "mail", Reader: members{"alice"}} }

// env is one test's store, log, fake clock and journal, on space "s".
type env struct {
	t     testing.TB
	ctx   context.Context
	st    store.Store
	log   *changelog.Log
	clock *storetest.Clock
	svc   *Service
}

// forEachDriver runs fn in parallel subtests, once per driver.
func forEachDriver(t *testing.T, opts Options, fn func(e *env)) {
	t.Helper()
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			fn(newEnv(t, d.open(t), opts))
		})
	}
}

var start = time.Date(2026, 8, 4, 12, 0, 0, 0, time.UTC)

func newEnv(t testing.TB, st store.Store, opts Options) *env {
	t.Helper()
	clock := storetest.NewClock(start)
	lg := changelog.New(st, changelog.Options{Now: clock.Now})
	t.Cleanup(func() { _ = lg.Close() })
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	e := &env{t: t, ctx: context.Background(), st: st, log: lg, clock: clock, svc: New(lg, opts)}
	for _, sp := range []string{"s", "other"} {
		if _, err := lg.EnsureSpace(e.ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// write applies mutations to space s and returns the last seq.
func (e *env) write(ms ...changelog.Mutation) int64 {
	e.t.Helper()
	seq, err := e.tryWrite(ms...)
	if err != nil {
		e.t.Fatal(err)
	}
	return seq
}

// tryWrite is write for goroutines other than the test's, which must not
// call Fatal: it returns what write would fail with.
func (e *env) tryWrite(ms ...changelog.Mutation) (int64, error) {
	res, err := e.log.Write(e.ctx, changelog.WriteRequest{Space: "s", Mutations: ms, Provenance: store.Provenance{Actor: "owner", Via: "api"}})
	if err != nil {
		return 0, fmt.Errorf("write: %w", err)
	}
	for _, r := range res.Receipts {
		if r.Status == store.ReceiptRejected {
			return 0, fmt.Errorf("write rejected: %+v", r)
		}
	}
	return res.LastSeq, nil
}

// settle moves the clock past the safe window.
func (e *env) settle() { e.clock.Advance(e.svc.opts.SafeWindow + time.Millisecond) }

func put(typ, id, props string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpPut, Type: typ, EntityID: id, Properties: json.RawMessage(props)}
}

func patch(typ, id, p string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpPatch, Type: typ, EntityID: id, Patch: json.RawMessage(p)}
}

func del(typ, id string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpDelete, Type: typ, EntityID: id}
}

func merge(typ, a, b string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpMerge, Type: typ, EntityID: a, From: &store.EntityKey{Type: typ, ID: b}}
}

func (e *env) session(c Client) Session {
	e.t.Helper()
	s, err := e.svc.CreateSession(e.ctx, "s", c)
	if err != nil {
		e.t.Fatalf("create session: %v", err)
	}
	return s
}

func (e *env) read(c Client, cur string, limit int) Page {
	e.t.Helper()
	p, err := e.svc.Read(e.ctx, ReadParams{Space: "s", Client: c, Cursor: cur, Limit: limit})
	if err != nil {
		e.t.Fatalf("read: %v", err)
	}
	return p
}

// readAll pages from cur until hasMore is false and returns the pages.
func (e *env) readAll(c Client, cur string, limit int) []Page {
	e.t.Helper()
	var pages []Page
	for {
		p := e.read(c, cur, limit)
		pages = append(pages, p)
		if !p.HasMore {
			return pages
		}
		if len(pages) > 10_000 {
			e.t.Fatal("journal does not end")
		}
		cur = p.NextCursor
	}
}

// fetchAll runs a whole initial fetch.
func (e *env) fetchAll(c Client, token string, limit int) []FetchRecord {
	e.t.Helper()
	var out []FetchRecord
	after := ""
	for {
		p, err := e.svc.Fetch(e.ctx, FetchParams{Space: "s", Client: c, Token: token, After: after, Limit: limit})
		if err != nil {
			e.t.Fatalf("fetch: %v", err)
		}
		out = append(out, p.Records...)
		if p.Next == nil {
			return out
		}
		after = *p.Next
	}
}

// wantCode fails unless err is a problem with code.
func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != code {
		t.Fatalf("err %v, want %s", err, code)
	}
}

// replica is a client's memory of a journal, kept as the docs tell
// clients to: a record of seq s touches only what is older than s.
type replica struct {
	t     testing.TB
	cards map[store.EntityKey]store.Record
}

func newReplica(t testing.TB) *replica {
	t.Helper()
	return &replica{t: t, cards: map[store.EntityKey]store.Record{}}
}

func (r *replica) fetched(recs []FetchRecord) {
	for _, f := range recs {
		r.cards[store.EntityKey{Type: f.Type, ID: f.ID}] = *f.Card
	}
}

func (r *replica) apply(p Page) {
	r.t.Helper()
	for _, rec := range p.Records {
		k := store.EntityKey{Type: rec.Type, ID: rec.ID}
		old, held := r.cards[k]
		switch rec.Kind {
		case Object:
			if rec.Card == nil || rec.Card.Version != rec.Seq {
				r.t.Fatalf("object %+v: card version is not the record's seq", rec)
			}
			if !held || old.Version < rec.Seq {
				r.cards[k] = *rec.Card
			}
		case Tombstone, Access:
			if rec.Card != nil {
				r.t.Fatalf("%s record carries a card: %+v", rec.Kind, rec)
			}
			if held && old.Version < rec.Seq {
				delete(r.cards, k)
			}
		}
	}
}

// keys lists the replica as "type/id@version", sorted.
func (r *replica) keys() []string {
	var out []string
	for _, c := range r.cards {
		out = append(out, c.Type+"/"+c.ID+"@"+strconv.FormatInt(c.Version, 10))
	}
	sort.Strings(out)
	return out
}

// truth lists what the client may read now, as "type/id@version", sorted.
func (e *env) truth(c Client) []string {
	e.t.Helper()
	var out []string
	for _, typ := range []string{"doc", "note", "secret"} {
		recs, err := e.st.EntityList(e.ctx, store.EntityListParams{Space: "s", Type: typ, Limit: 1 << 20})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, rec := range recs {
			if c.Reader.CanReadRecord(&rec) {
				out = append(out, rec.Type+"/"+rec.ID+"@"+strconv.FormatInt(rec.Version, 10))
			}
		}
	}
	sort.Strings(out)
	return out
}

// kinds summarizes records as "kind type/id@seq".
func kinds(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Kind) + " " + r.Type + "/" + r.ID + "@" + strconv.FormatInt(r.Seq, 10)
		if r.Reason != "" {
			out[i] += " " + r.Reason
		}
	}
	return out
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
