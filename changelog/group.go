package changelog

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/eddy-run/eddy/store"
)

// groupState is the in-memory state of one group transaction: the records
// and receipts as the group's earlier mutations left them, and the commits
// and receipts waiting to be written.
type groupState struct {
	tx       store.WriteTx
	schemas  map[string]*TypeDef
	now      time.Time
	head     int64
	records  map[store.EntityKey]store.Record
	receipts map[string]store.StoredReceipt
	commits  []pendingCommit
	puts     []store.StoredReceipt
	// clients are the push clients as the group's pushes left them;
	// clientPuts names the ones to write.
	clients    map[string]store.PushClient
	clientPuts map[string]bool
}

type pendingCommit struct {
	commit  store.Commit
	records []store.Record
}

// mark is what an atomic request restores when it rolls back.
type mark struct {
	head     int64
	commits  int
	puts     int
	records  map[store.EntityKey]*store.Record // nil value: absent before
	receipts []string
}

func newGroupState(tx store.WriteTx, schemas map[string]*TypeDef, now time.Time) *groupState {
	return &groupState{
		tx:         tx,
		schemas:    schemas,
		now:        now,
		head:       tx.Space().Head,
		records:    maps.Clone(tx.Entities()),
		receipts:   maps.Clone(tx.Receipts()),
		clients:    maps.Clone(tx.Clients()),
		clientPuts: map[string]bool{},
	}
}

func (g *groupState) schema(typ string) *TypeDef { return g.schemas[typ] }

// apply runs one request's mutations in order, then appends its engine
// rows unless an atomic request was rolled back.
func (g *groupState) apply(req WriteRequest) WriteResult {
	if req.Push != nil {
		return g.applyPush(req)
	}
	n := len(req.Mutations)
	res := WriteResult{Receipts: make([]store.Receipt, n), Entities: make([]*store.Record, n), Created: make([]bool, n)}
	mk := g.mark(req)
	firstReject := -1
	for i := range req.Mutations {
		res.Receipts[i], res.Entities[i], res.Created[i] = g.applyOne(req, &req.Mutations[i])
		if res.Receipts[i].Status == store.ReceiptRejected && firstReject < 0 {
			firstReject = i
		}
	}
	if req.Atomic && firstReject >= 0 {
		g.rollback(mk)
		abortAtomic(&res, firstReject)
		res.EngineSeqs = []int64{}
	} else {
		res.EngineSeqs = g.appendEngine(req.Engine)
	}
	res.LastSeq = g.head
	return res
}

// applyOne applies one mutation, or answers it from a stored receipt.
func (g *groupState) applyOne(req WriteRequest, m *Mutation) (store.Receipt, *store.Record, bool) {
	if m.MutationID != "" {
		if sr, ok := g.receipts[m.MutationID]; ok {
			return sr.Receipt, sr.Entity, wasCreated(sr)
		}
	}
	out := Apply(*m, ApplyEnv{Seq: g.head + 1, Now: g.now, Schema: g.schema, Records: g.records})
	out.Receipt.MutationID = m.MutationID
	var entity *store.Record
	created := false
	switch out.Receipt.Status {
	case store.ReceiptApplied:
		entity, created = g.append(req, m, out)
	case store.ReceiptNoop:
		if rec, ok := g.records[m.Key()]; ok && rec.Kind == store.KindLive {
			entity = &rec
		}
	}
	if m.MutationID != "" {
		sr := store.StoredReceipt{MutationID: m.MutationID, Receipt: out.Receipt, Entity: entity, CreatedAt: g.now}
		g.receipts[m.MutationID] = sr
		if out.Receipt.Status != store.ReceiptApplied {
			g.puts = append(g.puts, sr)
		}
	}
	return out.Receipt, entity, created
}

// append queues the commit of an applied outcome and moves the group's
// records and head forward.
func (g *groupState) append(req WriteRequest, m *Mutation, out Outcome) (*store.Record, bool) {
	g.head++
	prov := req.Provenance
	prov.MutationID = m.MutationID
	c := store.Commit{
		Row: store.Row{
			Seq: g.head, TS: g.now, Actor: prov.Actor, Op: out.Op,
			EntityID: out.Primary.ID, Type: out.Primary.Type, Payload: out.Payload,
		},
		Changes:    out.Changes,
		Receipt:    out.Receipt,
		Provenance: prov,
	}
	g.commits = append(g.commits, pendingCommit{commit: c, records: out.Records})
	var entity *store.Record
	for _, r := range out.Records {
		g.records[r.Key()] = r
		if r.Key() == out.Primary && r.Kind == store.KindLive {
			entity = &r
		}
	}
	created := len(out.Changes) > 0 && out.Changes[0].Kind == store.ChangeCreated
	return entity, created
}

// wasCreated tells whether a stored applied receipt answered a creation.
func wasCreated(sr store.StoredReceipt) bool {
	e := sr.Entity
	return sr.Receipt.Status == store.ReceiptApplied && e != nil &&
		e.Version == sr.Receipt.Seq && e.CreatedAt.Equal(e.UpdatedAt)
}

func (g *groupState) mark(req WriteRequest) mark {
	mk := mark{head: g.head, commits: len(g.commits), puts: len(g.puts), records: make(map[store.EntityKey]*store.Record)}
	if !req.Atomic {
		return mk
	}
	for i := range req.Mutations {
		m := &req.Mutations[i]
		for _, k := range m.Keys() {
			if rec, ok := g.records[k]; ok {
				mk.records[k] = &rec
			} else {
				mk.records[k] = nil
			}
		}
		if m.MutationID != "" {
			if _, ok := g.receipts[m.MutationID]; !ok {
				mk.receipts = append(mk.receipts, m.MutationID)
			}
		}
	}
	return mk
}

func (g *groupState) rollback(mk mark) {
	g.head = mk.head
	g.commits = g.commits[:mk.commits]
	g.puts = g.puts[:mk.puts]
	for k, rec := range mk.records {
		if rec == nil {
			delete(g.records, k)
		} else {
			g.records[k] = *rec
		}
	}
	for _, id := range mk.receipts {
		delete(g.receipts, id)
	}
}

// AtomicRollback starts the reason message of every receipt an atomic
// batch rewrote as rejected because another mutation of it was rejected.
const AtomicRollback = "atomic batch rolled back"

// abortAtomic rewrites every receipt of a rolled-back atomic request.
func abortAtomic(res *WriteResult, firstReject int) {
	cause := res.Receipts[firstReject].Reason
	for i := range res.Receipts {
		res.Entities[i] = nil
		res.Created[i] = false
		if i == firstReject || res.Receipts[i].Status == store.ReceiptRejected {
			continue
		}
		r := res.Receipts[i]
		res.Receipts[i] = store.Receipt{
			MutationID: r.MutationID,
			Status:     store.ReceiptRejected,
			Accepted:   []string{},
			Rejected:   []store.RejectedProperty{},
			Reason:     &store.Reason{Code: cause.Code, Message: fmt.Sprintf("%s: mutation %d was rejected", AtomicRollback, firstReject)},
			Proposed:   r.Proposed,
		}
	}
}

// flush hands the group's commits and receipts to the transaction.
func (g *groupState) flush(ctx context.Context) error {
	if ba, ok := g.tx.(store.BatchAppender); ok && len(g.commits) > 1 {
		cs, recs := make([]store.Commit, len(g.commits)), make([][]store.Record, len(g.commits))
		for i, pc := range g.commits {
			cs[i], recs[i] = pc.commit, pc.records
		}
		if err := ba.AppendBatch(ctx, cs, recs); err != nil {
			return fmt.Errorf("append commits %d-%d: %w", cs[0].Seq, cs[len(cs)-1].Seq, err)
		}
		return g.countRoots(ctx)
	}
	for _, pc := range g.commits {
		if err := g.tx.Append(ctx, pc.commit, pc.records); err != nil {
			return fmt.Errorf("append commit %d: %w", pc.commit.Seq, err)
		}
	}
	return g.countRoots(ctx)
}

// countRoots adds the group's delivery-authored commits to their roots'
// causal budget counters, one counter per root; a group of API writes
// (no recorded root) costs nothing.
func (g *groupState) countRoots(ctx context.Context) error {
	var counts []store.RootCount
	at := map[int64]int{}
	for i := range g.commits {
		c := &g.commits[i].commit
		if !countsToBudget(c) {
			continue
		}
		j, ok := at[c.Provenance.Root]
		if !ok {
			j = len(counts)
			at[c.Provenance.Root] = j
			counts = append(counts, store.RootCount{Root: c.Provenance.Root})
		}
		counts[j].Rows++
		counts[j].LastSeq = c.Seq
	}
	if len(counts) > 0 {
		if err := g.tx.RootCountAdd(ctx, counts); err != nil {
			return fmt.Errorf("count rows of roots: %w", err)
		}
	}
	return g.putReceipts(ctx)
}

// countsToBudget tells whether a commit counts against its root's causal
// budget: a row authored by a delivery (it records a root), not an engine
// row (a park row records one too).
func countsToBudget(c *store.Commit) bool {
	_, engine := engineTypes[c.Op]
	return c.Provenance.Root > 0 && !engine
}

// putReceipts stores the receipts of the group's mutations that appended
// nothing.
func (g *groupState) putReceipts(ctx context.Context) error {
	for _, sr := range g.puts {
		if err := g.tx.ReceiptPut(ctx, sr); err != nil {
			return fmt.Errorf("store receipt %s: %w", sr.MutationID, err)
		}
	}
	return g.flushClients(ctx)
}
