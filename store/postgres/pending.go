package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

// pending holds a write transaction's buffered appends as column arrays,
// so Commit writes any number of commits with at most one statement per
// table.
type pending struct {
	commits  commitBuf
	changes  changeBuf
	records  recordBuf
	receipts receiptBuf
	// recIdx and rcptIdx dedupe by key (last write wins): an upsert may
	// not touch one row twice.
	recIdx  map[store.EntityKey]int
	rcptIdx map[string]int
}

// commitBuf holds buffered commits rows.
type commitBuf struct {
	seq                          []int64
	ts                           []time.Time
	actor, op, etype, eid        []string
	payload, receipt, provenance []string
	causedBy                     []*int64
	depth                        []int32
}

// changeBuf holds buffered changes rows.
type changeBuf struct {
	seq, version  []int64
	ordinal       []int32
	kind, typ, id []string
	before, after []*string
	groups        []string
}

// recordBuf holds buffered entities rows.
type recordBuf struct {
	typ, id, kind               []string
	version                     []int64
	props, links, groupVersions []string
	createdAt, updatedAt        []time.Time
}

// receiptBuf holds buffered receipts rows.
type receiptBuf struct {
	mutationID, receipt []string
	entity              []*string
	createdAt           []time.Time
}

// addCommit buffers the commit row and its changes.
func (w *pending) addCommit(c store.Commit) error {
	receipt, err := encodeReceipt(c.Receipt)
	if err != nil {
		return err
	}
	prov, err := encodeJSON(c.Provenance)
	if err != nil {
		return err
	}
	payload := string(c.Payload)
	if payload == "" {
		payload = "{}"
	}
	var causedBy *int64
	if c.Provenance.CausedBy != 0 {
		v := c.Provenance.CausedBy
		causedBy = &v
	}
	k := &w.commits
	k.seq = append(k.seq, c.Seq)
	k.ts = append(k.ts, microUTC(c.TS))
	k.actor = append(k.actor, c.Actor)
	k.op = append(k.op, c.Op)
	k.etype = append(k.etype, c.Type)
	k.eid = append(k.eid, c.EntityID)
	k.payload = append(k.payload, payload)
	k.receipt = append(k.receipt, receipt)
	k.provenance = append(k.provenance, prov)
	k.causedBy = append(k.causedBy, causedBy)
	k.depth = append(k.depth, int32(c.Provenance.Depth))
	for _, ch := range c.Changes {
		if err := w.addChange(c.Seq, ch); err != nil {
			return err
		}
	}
	return nil
}

// addChange buffers one change of commit seq.
func (w *pending) addChange(seq int64, ch store.Change) error {
	before, err := encodeSnapshot(ch.Before)
	if err != nil {
		return err
	}
	after, err := encodeSnapshot(ch.After)
	if err != nil {
		return err
	}
	groups, err := encodeStrings(ch.ConflictGroups)
	if err != nil {
		return err
	}
	k := &w.changes
	k.seq = append(k.seq, seq)
	k.ordinal = append(k.ordinal, int32(ch.Ordinal))
	k.kind = append(k.kind, ch.Kind)
	k.typ = append(k.typ, ch.Type)
	k.id = append(k.id, ch.ID)
	k.version = append(k.version, ch.Version)
	k.before = append(k.before, before)
	k.after = append(k.after, after)
	k.groups = append(k.groups, groups)
	return nil
}

// addRecord buffers an entity upsert, replacing an earlier one of the
// same key.
func (w *pending) addRecord(r store.Record) error {
	cols, err := encodeRecord(&r)
	if err != nil {
		return err
	}
	kind := r.Kind
	if kind == "" {
		kind = store.KindLive
	}
	k := &w.records
	if w.recIdx == nil {
		w.recIdx = map[store.EntityKey]int{}
	}
	i, ok := w.recIdx[r.Key()]
	if !ok {
		i = len(k.typ)
		w.recIdx[r.Key()] = i
		k.typ = append(k.typ, r.Type)
		k.id = append(k.id, r.ID)
		k.kind = append(k.kind, "")
		k.version = append(k.version, 0)
		k.props = append(k.props, "")
		k.links = append(k.links, "")
		k.groupVersions = append(k.groupVersions, "")
		k.createdAt = append(k.createdAt, time.Time{})
		k.updatedAt = append(k.updatedAt, time.Time{})
	}
	k.kind[i], k.version[i] = kind, r.Version
	k.props[i], k.links[i], k.groupVersions[i] = cols.properties, cols.links, cols.groupVersions
	k.createdAt[i], k.updatedAt[i] = microUTC(r.CreatedAt), microUTC(r.UpdatedAt)
	return nil
}

// addReceipt buffers a receipt upsert created at, replacing an earlier one
// with the same mutation id. A stored receipt keeps its exact shape (nil
// lists stay null), unlike a commit's receipt, which is normalized.
func (w *pending) addReceipt(r store.StoredReceipt, created time.Time) error {
	receipt, err := encodeJSON(r.Receipt)
	if err != nil {
		return err
	}
	entity, err := encodeSnapshot(r.Entity)
	if err != nil {
		return err
	}
	k := &w.receipts
	if w.rcptIdx == nil {
		w.rcptIdx = map[string]int{}
	}
	i, ok := w.rcptIdx[r.MutationID]
	if !ok {
		i = len(k.mutationID)
		w.rcptIdx[r.MutationID] = i
		k.mutationID = append(k.mutationID, r.MutationID)
		k.receipt = append(k.receipt, "")
		k.entity = append(k.entity, nil)
		k.createdAt = append(k.createdAt, time.Time{})
	}
	k.receipt[i], k.entity[i], k.createdAt[i] = receipt, entity, created
	return nil
}

// The buffered rows of each table go out as one statement: a plain
// INSERT for a single row (the common one-commit transaction, and the
// cheapest for the server), an INSERT ... SELECT FROM unnest of parallel
// arrays for several (a group commit). Either way the statement text is
// fixed, so its prepared form is cached per connection.
const (
	commitCols    = "space, seq, ts, actor, op, entity_type, entity_id, payload, receipt, provenance, caused_by, depth"
	insertCommitQ = "INSERT INTO commits (" + commitCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`
	insertCommitsQ = "INSERT INTO commits (" + commitCols + `)
		SELECT $1::text, * FROM unnest($2::bigint[], $3::timestamptz[], $4::text[], $5::text[],
			$6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[], $12::int[])`

	changeCols    = "space, seq, ordinal, kind, type, id, version, before, after, conflict_groups"
	insertChangeQ = "INSERT INTO changes (" + changeCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	insertChangesQ = "INSERT INTO changes (" + changeCols + `)
		SELECT $1::text, * FROM unnest($2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[],
			$7::bigint[], $8::text[], $9::text[], $10::text[])`

	entityCols     = "space, type, id, version, kind, properties, links, group_versions, created_at, updated_at"
	entityConflict = `ON CONFLICT (space, type, id) DO UPDATE SET version = EXCLUDED.version,
		kind = EXCLUDED.kind, properties = EXCLUDED.properties, links = EXCLUDED.links,
		group_versions = EXCLUDED.group_versions, created_at = EXCLUDED.created_at,
		updated_at = EXCLUDED.updated_at`
	upsertEntityQ = "INSERT INTO entities (" + entityCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ` + entityConflict
	upsertEntitiesQ = "INSERT INTO entities (" + entityCols + `)
		SELECT $1::text, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[],
			$7::text[], $8::text[], $9::timestamptz[], $10::timestamptz[]) ` + entityConflict

	receiptCols     = "space, mutation_id, receipt, entity, created_at"
	receiptConflict = `ON CONFLICT (space, mutation_id) DO UPDATE SET receipt = EXCLUDED.receipt,
		entity = EXCLUDED.entity, created_at = EXCLUDED.created_at`
	upsertReceiptQ = "INSERT INTO receipts (" + receiptCols + `)
		VALUES ($1, $2, $3, $4, $5) ` + receiptConflict
	upsertReceiptsQ = "INSERT INTO receipts (" + receiptCols + `)
		SELECT $1::text, * FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[]) ` + receiptConflict

	setHeadQ = "UPDATE spaces SET head = $2 WHERE id = $1"
	notifyQ  = "SELECT pg_notify('" + NotifyChannel + "', $1::text || ':' || $2::bigint)"
)

// queue adds to b the statements writing the buffered rows of space and,
// when commits were appended (last > head), the head update and the
// NOTIFY. The caller queues COMMIT.
func (w *pending) queue(b *pgx.Batch, space string, last, head int64) {
	w.commits.queue(b, space)
	w.changes.queue(b, space)
	w.records.queue(b, space)
	w.receipts.queue(b, space)
	if last > head {
		b.Queue(setHeadQ, space, last)
		b.Queue(notifyQ, space, last)
	}
}

// queue adds the commits insert.
func (k *commitBuf) queue(b *pgx.Batch, space string) {
	switch len(k.seq) {
	case 0:
	case 1:
		b.Queue(insertCommitQ, space, k.seq[0], k.ts[0], k.actor[0], k.op[0], k.etype[0], k.eid[0],
			k.payload[0], k.receipt[0], k.provenance[0], k.causedBy[0], k.depth[0])
	default:
		b.Queue(insertCommitsQ, space, k.seq, k.ts, k.actor, k.op, k.etype, k.eid,
			k.payload, k.receipt, k.provenance, k.causedBy, k.depth)
	}
}

// queue adds the changes insert.
func (k *changeBuf) queue(b *pgx.Batch, space string) {
	switch len(k.seq) {
	case 0:
	case 1:
		b.Queue(insertChangeQ, space, k.seq[0], k.ordinal[0], k.kind[0], k.typ[0], k.id[0],
			k.version[0], k.before[0], k.after[0], k.groups[0])
	default:
		b.Queue(insertChangesQ, space, k.seq, k.ordinal, k.kind, k.typ, k.id,
			k.version, k.before, k.after, k.groups)
	}
}

// queue adds the entities upsert.
func (k *recordBuf) queue(b *pgx.Batch, space string) {
	switch len(k.typ) {
	case 0:
	case 1:
		b.Queue(upsertEntityQ, space, k.typ[0], k.id[0], k.version[0], k.kind[0], k.props[0],
			k.links[0], k.groupVersions[0], k.createdAt[0], k.updatedAt[0])
	default:
		b.Queue(upsertEntitiesQ, space, k.typ, k.id, k.version, k.kind, k.props,
			k.links, k.groupVersions, k.createdAt, k.updatedAt)
	}
}

// queue adds the receipts upsert.
func (k *receiptBuf) queue(b *pgx.Batch, space string) {
	switch len(k.mutationID) {
	case 0:
	case 1:
		b.Queue(upsertReceiptQ, space, k.mutationID[0], k.receipt[0], k.entity[0], k.createdAt[0])
	default:
		b.Queue(upsertReceiptsQ, space, k.mutationID, k.receipt, k.entity, k.createdAt)
	}
}
