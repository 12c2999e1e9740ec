package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// pending holds a write transaction's buffered appends as column arrays,
// so Commit writes any number of commits with at most one statement per
// table.
type pending struct {
	commits  commitBuf
	records  recordBuf
	receipts receiptBuf
	// recIdx and rcptIdx dedupe by key (last write wins): an upsert may
	// not touch one row twice.
	recIdx  map[store.EntityKey]int
	rcptIdx map[string]int
	// writeID is stored with every commit (NULL when 0).
	writeID int64
}

// commitBuf holds buffered commits rows.
type commitBuf struct {
	seq                          int8Array
	ts                           timeArray
	actor, op, etype, eid        textArray
	etype2, eid2                 nullTextArray
	payload, receipt, provenance textArray
	causedBy                     nullInt8Array
	depth                        int4Array
	changes                      textArray
	changeCount                  int4Array
}

// rowState is what a write transaction knows, under the space lock, of an
// entity row as it was before the transaction. It picks the statement
// that writes the row: a plain INSERT or UPDATE costs the server less (no
// speculative insertion, no tuple lock) than an upsert.
type rowState uint8

const (
	// rowUnknown: the row was not read; upsert it.
	rowUnknown rowState = iota
	// rowAbsent: the row was read and missing; insert it.
	rowAbsent
	// rowPresent: the row was read and exists (entity rows are never
	// deleted); update it.
	rowPresent
)

// recordBuf holds buffered entities rows.
type recordBuf struct {
	state                       []rowState
	typ, id, kind               textArray
	version                     int8Array
	props, links, groupVersions textArray
	createdAt, updatedAt        timeArray
}

// receiptBuf holds buffered receipts rows.
type receiptBuf struct {
	mutationID, receipt textArray
	entity              nullTextArray
	createdAt           timeArray
}

// addCommit buffers the commit row, its changes included. Nothing is
// buffered if encoding fails.
func (w *pending) addCommit(c store.Commit) error {
	second, err := rowcodec.SecondEntity(&c)
	if err != nil {
		return err
	}
	var etype2, eid2 *string
	if second != nil {
		etype2, eid2 = &second.Type, &second.ID
	}
	changes, err := rowcodec.EncodeChanges(c.Changes)
	if err != nil {
		return err
	}
	receipt, err := rowcodec.EncodeReceipt(c.Receipt)
	if err != nil {
		return err
	}
	prov := rowcodec.EncodeProvenance(c.Provenance)
	payload := rowcodec.RawText(c.Payload, "{}")
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
	k.etype2 = append(k.etype2, etype2)
	k.eid2 = append(k.eid2, eid2)
	k.changes = append(k.changes, changes)
	k.changeCount = append(k.changeCount, int32(len(c.Changes)))
	return nil
}

// addRecord buffers an entity write, replacing an earlier one of the
// same key (which keeps its state: the row's state before the
// transaction).
func (w *pending) addRecord(r store.Record, state rowState) error {
	cols, err := rowcodec.EncodeRecord(&r)
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
		k.state = append(k.state, state)
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
	k.props[i], k.links[i], k.groupVersions[i] = cols.Properties, cols.Links, cols.GroupVersions
	k.createdAt[i], k.updatedAt[i] = microUTC(r.CreatedAt), microUTC(r.UpdatedAt)
	return nil
}

// addReceipt buffers a receipt upsert created at, replacing an earlier one
// with the same mutation id. A stored receipt keeps its exact shape (nil
// lists stay null), unlike a commit's receipt, which is normalized.
func (w *pending) addReceipt(r store.StoredReceipt, created time.Time) error {
	receipt, err := rowcodec.MarshalReceipt(r.Receipt)
	if err != nil {
		return err
	}
	entity, err := rowcodec.EncodeSnapshot(r.Entity)
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
	commitCols = `space, seq, ts, actor, op, entity_type, entity_id, entity2_type, entity2_id,
		payload, receipt, provenance, caused_by, depth, changes, change_count, write_id`
	insertCommitQ = "INSERT INTO commits (" + commitCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`
	insertCommitsQ = "INSERT INTO commits (" + commitCols + `)
		SELECT $1::text, u.*, $17::bigint FROM unnest($2::bigint[], $3::timestamptz[], $4::text[], $5::text[],
			$6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
			$13::bigint[], $14::int[], $15::text[], $16::int[]) AS u`

	entityCols     = "space, type, id, version, kind, properties, links, group_versions, created_at, updated_at"
	entityConflict = `ON CONFLICT (space, type, id) DO UPDATE SET version = EXCLUDED.version,
		kind = EXCLUDED.kind, properties = EXCLUDED.properties, links = EXCLUDED.links,
		group_versions = EXCLUDED.group_versions, created_at = EXCLUDED.created_at,
		updated_at = EXCLUDED.updated_at`
	insertEntityQ = "INSERT INTO entities (" + entityCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	insertEntitiesQ = "INSERT INTO entities (" + entityCols + `)
		SELECT $1::text, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[],
			$7::text[], $8::text[], $9::timestamptz[], $10::timestamptz[])`
	upsertEntityQ   = insertEntityQ + " " + entityConflict
	upsertEntitiesQ = insertEntitiesQ + " " + entityConflict
	updateEntityQ   = `UPDATE entities SET version = $4, kind = $5, properties = $6, links = $7,
		group_versions = $8, created_at = $9, updated_at = $10
		WHERE space = $1 AND type = $2 AND id = $3`

	receiptCols     = "space, mutation_id, receipt, entity, created_at"
	receiptConflict = `ON CONFLICT (space, mutation_id) DO UPDATE SET receipt = EXCLUDED.receipt,
		entity = EXCLUDED.entity, created_at = EXCLUDED.created_at`
	upsertReceiptQ = "INSERT INTO receipts (" + receiptCols + `)
		VALUES ($1, $2, $3, $4, $5) ` + receiptConflict
	upsertReceiptsQ = "INSERT INTO receipts (" + receiptCols + `)
		SELECT $1::text, * FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[]) ` + receiptConflict

	// notifyHeadPrefix starts the NOTIFY of space $1's new head, which
	// follows as a bigint parameter and a closing parenthesis.
	notifyHeadPrefix = "pg_notify('" + NotifyChannel + "', $1::text || ':' || "
	// setHeadQuietQ moves the head.
	setHeadQuietQ = "UPDATE spaces SET head = $2 WHERE id = $1"
	// setHeadQ moves the head and notifies it in one statement.
	setHeadQ = "WITH moved AS (" + setHeadQuietQ + ") SELECT " + notifyHeadPrefix + "$2::bigint)"
)

// queue adds to b the statements writing the buffered rows of space and,
// when commits were appended (last > head) and setHead is set, the head
// update and, if notify is set, its NOTIFY (an optimistic transaction's
// claim already did both). The caller ends the transaction.
func (w *pending) queue(b *pgx.Batch, space string, last, head int64, setHead, notify bool) {
	w.commits.queue(b, space, w.writeID)
	w.records.queue(b, space)
	w.receipts.queue(b, space)
	switch {
	case last <= head || !setHead:
	case notify:
		b.Queue(setHeadQ, space, last)
	default:
		b.Queue(setHeadQuietQ, space, last)
	}
}

// queue adds the commits insert.
func (k *commitBuf) queue(b *pgx.Batch, space string, writeID int64) {
	var wid *int64
	if writeID != 0 {
		wid = &writeID
	}
	switch len(k.seq) {
	case 0:
	case 1:
		b.Queue(insertCommitQ, space, k.seq[0], k.ts[0], k.actor[0], k.op[0], k.etype[0], k.eid[0],
			k.etype2[0], k.eid2[0], k.payload[0], k.receipt[0], k.provenance[0], k.causedBy[0],
			k.depth[0], k.changes[0], k.changeCount[0], wid)
	default:
		b.Queue(insertCommitsQ, space, k.seq, k.ts, k.actor, k.op, k.etype, k.eid, k.etype2, k.eid2,
			k.payload, k.receipt, k.provenance, k.causedBy, k.depth, k.changes, k.changeCount, wid)
	}
}

// entityQueries are the single-row and multi-row statements writing
// entities rows of each state. Several rows known present are written by
// the upsert, not by an UPDATE joined to unnest: its conflict check probes
// the primary key for each row by construction, where the join is the
// planner's choice, and a generic plan made while the table was small
// hashes the whole space on every group commit that updates entities.
var entityQueries = [...]struct{ one, many string }{
	rowUnknown: {upsertEntityQ, upsertEntitiesQ},
	rowAbsent:  {insertEntityQ, insertEntitiesQ},
	rowPresent: {updateEntityQ, upsertEntitiesQ},
}

// queue adds one entities statement per row state present: insert,
// update, upsert.
func (k *recordBuf) queue(b *pgx.Batch, space string) {
	for _, st := range []rowState{rowAbsent, rowPresent, rowUnknown} {
		sub := k.only(st)
		q := entityQueries[st]
		switch len(sub.typ) {
		case 0:
		case 1:
			b.Queue(q.one, space, sub.typ[0], sub.id[0], sub.version[0], sub.kind[0], sub.props[0],
				sub.links[0], sub.groupVersions[0], sub.createdAt[0], sub.updatedAt[0])
		default:
			b.Queue(q.many, space, sub.typ, sub.id, sub.version, sub.kind, sub.props,
				sub.links, sub.groupVersions, sub.createdAt, sub.updatedAt)
		}
	}
}

// only returns the buffered rows in state st; k itself when all are.
func (k *recordBuf) only(st rowState) *recordBuf {
	n := 0
	for _, s := range k.state {
		if s == st {
			n++
		}
	}
	switch n {
	case len(k.state):
		return k
	case 0:
		return &recordBuf{}
	}
	sub := &recordBuf{}
	for i, s := range k.state {
		if s != st {
			continue
		}
		sub.state = append(sub.state, s)
		sub.typ = append(sub.typ, k.typ[i])
		sub.id = append(sub.id, k.id[i])
		sub.kind = append(sub.kind, k.kind[i])
		sub.version = append(sub.version, k.version[i])
		sub.props = append(sub.props, k.props[i])
		sub.links = append(sub.links, k.links[i])
		sub.groupVersions = append(sub.groupVersions, k.groupVersions[i])
		sub.createdAt = append(sub.createdAt, k.createdAt[i])
		sub.updatedAt = append(sub.updatedAt, k.updatedAt[i])
	}
	return sub
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
