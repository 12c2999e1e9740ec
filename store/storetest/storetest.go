// Package storetest is the one conformance suite every store driver must
// pass. A driver's test calls Exercise (behaviour) and ExerciseConcurrency
// (ordering and visibility under concurrent writers) with a function that
// opens a fresh, migrated, empty store.
//
// The suite drives most behaviour through changelog.Log, because that is
// how eddy uses a driver, and checks raw store behaviour where the Log
// cannot reach it (rollbacks, the space lock, tokens, stored receipts).
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// OpenFunc opens a fresh, migrated, empty store for one test and arranges
// for it to be closed at the test's cleanup.
type OpenFunc func(t *testing.T) store.Store

// Exercise runs the conformance suite against the driver open returns.
func Exercise(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	t.Run("Spaces", func(t *testing.T) { testSpaces(t, open) })
	t.Run("Writes", func(t *testing.T) { testWrites(t, open) })
	t.Run("Ops", func(t *testing.T) { testOps(t, open) })
	t.Run("Preconditions", func(t *testing.T) { testPreconditions(t, open) })
	t.Run("Types", func(t *testing.T) { testTypes(t, open) })
	t.Run("Batches", func(t *testing.T) { testBatches(t, open) })
	t.Run("Pull", func(t *testing.T) { testPull(t, open) })
	t.Run("ReadHistory", func(t *testing.T) { testReadHistory(t, open) })
	t.Run("EntityHistories", func(t *testing.T) { testEntityHistories(t, open) })
	t.Run("Retention", func(t *testing.T) { testRetention(t, open) })
	t.Run("List", func(t *testing.T) { testList(t, open) })
	t.Run("Raw", func(t *testing.T) { testRaw(t, open) })
	t.Run("TwoLogs", func(t *testing.T) { testTwoLogs(t, open) })
	t.Run("TwoLogsPrecondition", func(t *testing.T) { testTwoLogsPrecondition(t, open) })
	t.Run("CausedBy", func(t *testing.T) { testCausedBy(t, open) })
	t.Run("RootCounts", func(t *testing.T) { testRootCounts(t, open) })
	t.Run("RootCountsTx", func(t *testing.T) { testRootCountsTx(t, open) })
	t.Run("Views", func(t *testing.T) { testViews(t, open) })
	t.Run("Clients", func(t *testing.T) { testClients(t, open) })
	t.Run("Journal", func(t *testing.T) { testJournal(t, open) })
}

// epoch0 is the fake clock's start: a non-UTC zone and sub-microsecond
// nanoseconds, so the suite sees drivers store UTC with microseconds.
var epoch0 = time.Date(2026, 8, 4, 12, 0, 0, 183742400, time.FixedZone("CEST", 2*3600))

// Clock is a fake clock safe for concurrent use. It only moves when told.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock standing at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is one test's store, log, clock and space.
type harness struct {
	t     *testing.T
	ctx   context.Context
	st    store.Store
	log   *changelog.Log
	clock *Clock
	space string
}

// newHarness opens a store, builds a Log over it with a fake clock (opts
// may tune the rest) and creates the space "s".
func newHarness(t *testing.T, open OpenFunc, opts changelog.Options) *harness {
	t.Helper()
	st := open(t)
	clock := NewClock(epoch0)
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	l := changelog.New(st, opts)
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close log: %v", err)
		}
	})
	h := &harness{t: t, ctx: context.Background(), st: st, log: l, clock: clock, space: "s"}
	h.createSpace("s")
	return h
}

func (h *harness) createSpace(id string) store.Space {
	h.t.Helper()
	sp, err := h.log.CreateSpace(h.ctx, id)
	if err != nil {
		h.t.Fatalf("create space %s: %v", id, err)
	}
	return sp
}

// spaceRow returns the current row of a space.
func (h *harness) spaceRow(id string) store.Space {
	h.t.Helper()
	sp, err := h.log.Space(h.ctx, id)
	if err != nil {
		h.t.Fatalf("space %s: %v", id, err)
	}
	return sp
}

func (h *harness) head() int64 { h.t.Helper(); return h.spaceRow(h.space).Head }

// wantHead fails unless the space's head is want.
func (h *harness) wantHead(want int64) {
	h.t.Helper()
	if got := h.head(); got != want {
		h.t.Fatalf("head = %d, want %d", got, want)
	}
}

// owner is the provenance template of the suite's API writes.
var owner = store.Provenance{Actor: "owner", Via: "api", RequestID: "req-1"}

// writeReq writes a request and fails the test on an error.
func (h *harness) writeReq(req changelog.WriteRequest) changelog.WriteResult {
	h.t.Helper()
	if req.Space == "" {
		req.Space = h.space
	}
	if req.Provenance.Actor == "" {
		req.Provenance = owner
	}
	res, err := h.log.Write(h.ctx, req)
	if err != nil {
		h.t.Fatalf("write %s: %v", describe(req.Mutations), err)
	}
	if len(res.Receipts) != len(req.Mutations) {
		h.t.Fatalf("write: %d receipts for %d mutations", len(res.Receipts), len(req.Mutations))
	}
	return res
}

// write writes mutations non-atomically as the owner.
func (h *harness) write(ms ...changelog.Mutation) changelog.WriteResult {
	h.t.Helper()
	return h.writeReq(changelog.WriteRequest{Mutations: ms})
}

// writeAs writes mutations non-atomically as actor.
func (h *harness) writeAs(actor string, ms ...changelog.Mutation) changelog.WriteResult {
	h.t.Helper()
	return h.writeReq(changelog.WriteRequest{Mutations: ms, Provenance: store.Provenance{Actor: actor, Via: "api"}})
}

// apply writes one mutation and requires it to apply with seq want.
func (h *harness) apply(m changelog.Mutation, want int64) store.Receipt {
	h.t.Helper()
	r := h.write(m).Receipts[0]
	if r.Status != store.ReceiptApplied || r.Seq != want {
		h.t.Fatalf("%s: receipt %s, want applied at seq %d", describe([]changelog.Mutation{m}), js(r), want)
	}
	return r
}

// one writes one mutation and returns its receipt.
func (h *harness) one(m changelog.Mutation) store.Receipt {
	h.t.Helper()
	return h.write(m).Receipts[0]
}

// get returns a live record.
func (h *harness) get(typ, id string) store.Record {
	h.t.Helper()
	r, err := h.log.Get(h.ctx, h.space, store.EntityKey{Type: typ, ID: id})
	if err != nil {
		h.t.Fatalf("get %s/%s: %v", typ, id, err)
	}
	return r
}

// wantGone fails unless Get answers not_found.
func (h *harness) wantGone(typ, id string) {
	h.t.Helper()
	_, err := h.log.Get(h.ctx, h.space, store.EntityKey{Type: typ, ID: id})
	if !isNotFound(err) {
		h.t.Fatalf("get %s/%s: err %v, want not_found", typ, id, err)
	}
}

// rowAt returns the wire row with seq.
func (h *harness) rowAt(seq int64) store.Row {
	h.t.Helper()
	p, err := h.log.Read(h.ctx, h.space, seq-1, changelog.Filter{}, 1)
	if err != nil {
		h.t.Fatalf("read row %d: %v", seq, err)
	}
	if len(p.Rows) != 1 || p.Rows[0].Seq != seq {
		h.t.Fatalf("read row %d: got %s", seq, js(p.Rows))
	}
	return p.Rows[0]
}

// commitAt returns the commit with seq.
func (h *harness) commitAt(seq int64) store.Commit {
	h.t.Helper()
	p, err := h.log.Pull(h.ctx, h.space, seq-1, 1)
	if err != nil {
		h.t.Fatalf("pull commit %d: %v", seq, err)
	}
	if len(p.Commits) != 1 || p.Commits[0].Seq != seq {
		h.t.Fatalf("pull commit %d: got %s", seq, js(p.Commits))
	}
	return p.Commits[0]
}

// Mutation builders.

func put(typ, id, props string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpPut, Type: typ, EntityID: id, Properties: json.RawMessage(props)}
}

func patch(typ, id, p string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpPatch, Type: typ, EntityID: id, Patch: json.RawMessage(p)}
}

func del(typ, id string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpDelete, Type: typ, EntityID: id}
}

func link(typ, id, rel, ttyp, tid string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpLink, Type: typ, EntityID: id, Rel: rel, Target: &store.EntityKey{Type: ttyp, ID: tid}}
}

func unlink(typ, id, rel, ttyp, tid string) changelog.Mutation {
	m := link(typ, id, rel, ttyp, tid)
	m.Op = changelog.OpUnlink
	return m
}

func merge(typ, a, b string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpMerge, Type: typ, EntityID: a, From: &store.EntityKey{Type: typ, ID: b}}
}

func split(typ, a, c string, props ...string) changelog.Mutation {
	raw, _ := json.Marshal(props)
	return changelog.Mutation{Op: changelog.OpSplit, Type: typ, EntityID: a, Into: &changelog.SplitInto{ID: c}, Properties: raw}
}

func withID(m changelog.Mutation, id string) changelog.Mutation { m.MutationID = id; return m }

func ifVersion(m changelog.Mutation, v int64) changelog.Mutation { m.IfVersion = &v; return m }

func baseVersion(m changelog.Mutation, v int64) changelog.Mutation { m.BaseVersion = &v; return m }

func describe(ms []changelog.Mutation) string {
	s := ""
	for i, m := range ms {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %s/%s", m.Op, m.Type, m.EntityID)
	}
	return "[" + s + "]"
}

// JSON helpers.

// js renders v as JSON for failure messages.
func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// decode unmarshals raw into a generic value (nil for empty input).
func decode(t *testing.T, raw []byte) any {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	return v
}

// wantJSON fails unless got and want are the same JSON value (key order
// and whitespace aside).
func wantJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if !reflect.DeepEqual(decode(t, got), decode(t, []byte(want))) {
		t.Fatalf("%s = %s, want %s", what, got, want)
	}
}

// wantBytes fails unless got is exactly want: canonical JSON is compared
// byte for byte.
func wantBytes(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if string(got) != want {
		t.Fatalf("%s = %s, want exactly %s", what, got, want)
	}
}

// Error helpers.

func isNotFound(err error) bool {
	return err != nil && (errors.Is(err, store.ErrNotFound) || problem.CodeOf(err) == problem.NotFound)
}

// wantCode fails unless err is a *problem.Error with code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != code {
		t.Fatalf("%s: err %v (%T), want *problem.Error %s", what, err, err, code)
	}
}

// wantHistoryUnavailable fails unless err is a HistoryUnavailableError
// reporting horizon.
func wantHistoryUnavailable(t *testing.T, what string, err error, horizon int64) {
	t.Helper()
	var he *changelog.HistoryUnavailableError
	if !errors.As(err, &he) {
		t.Fatalf("%s: err %v (%T), want *changelog.HistoryUnavailableError", what, err, err)
	}
	if he.Horizon != horizon {
		t.Fatalf("%s: horizon %d, want %d", what, he.Horizon, horizon)
	}
}

// Receipt helpers.

// wantReceipt compares the fields of a receipt the design fixes: status,
// seq, version, mutation id, accepted names, rejected property names and
// the reason code. A negative want.Version skips the version.
func wantReceipt(t *testing.T, what string, got, want store.Receipt) {
	t.Helper()
	var gotRej, wantRej []string
	for _, r := range got.Rejected {
		gotRej = append(gotRej, r.Property)
	}
	for _, r := range want.Rejected {
		wantRej = append(wantRej, r.Property)
	}
	ok := got.Status == want.Status && got.Seq == want.Seq && got.MutationID == want.MutationID &&
		(want.Version < 0 || got.Version == want.Version) &&
		sameStrings(got.Accepted, want.Accepted) && sameStrings(gotRej, wantRej) &&
		reasonCode(got.Reason) == reasonCode(want.Reason)
	if !ok {
		t.Fatalf("%s: receipt %s, want %s", what, js(got), js(want))
	}
	if got.Reason != nil && got.Reason.Message == "" {
		t.Fatalf("%s: receipt %s has a reason without a message", what, js(got))
	}
}

func reasonCode(r *store.Reason) string {
	if r == nil {
		return ""
	}
	return r.Code
}

func reason(code string) *store.Reason { return &store.Reason{Code: code} }

// sameStrings compares two lists, nil and empty being equal.
func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// normReceipt makes receipts comparable: nil and empty lists are equal and
// the proposed values are compared as JSON values.
func normReceipt(t *testing.T, r store.Receipt) any {
	t.Helper()
	type norm struct {
		R store.Receipt
		P any
	}
	if r.Accepted == nil {
		r.Accepted = []string{}
	}
	if r.Rejected == nil {
		r.Rejected = []store.RejectedProperty{}
	}
	p := decode(t, r.Proposed)
	r.Proposed = nil
	return norm{r, p}
}

// refersTo reports whether a payload value names the entity id: either
// the id itself or an object {"type", "id"}.
func refersTo(v any, typ, id string) bool {
	switch x := v.(type) {
	case string:
		return x == id
	case map[string]any:
		return x["id"] == id && (x["type"] == nil || x["type"] == typ)
	}
	return false
}

// payloadOf decodes a row payload into an object.
func payloadOf(t *testing.T, r store.Row) map[string]any {
	t.Helper()
	m, ok := decode(t, r.Payload).(map[string]any)
	if !ok {
		t.Fatalf("row %d payload %s is not an object", r.Seq, r.Payload)
	}
	return m
}

// wantSameRow fails unless two rows are the same wire row.
func wantSameRow(t *testing.T, got, want store.Row) {
	t.Helper()
	if got.Seq != want.Seq || !got.TS.Equal(want.TS) || got.Actor != want.Actor || got.Op != want.Op ||
		got.EntityID != want.EntityID || got.Type != want.Type ||
		!reflect.DeepEqual(decode(t, got.Payload), decode(t, want.Payload)) {
		t.Fatalf("row %s, want %s", js(got), js(want))
	}
}
