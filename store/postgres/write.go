package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// errTxDone reports a Commit or Append after the transaction ended.
var errTxDone = errors.New("postgres: write transaction already ended")

// WriteBegin acquires a connection and sends BEGIN, the space lock and the
// loads of the named entities and receipts as one batch: one round trip.
// A missing space returns store.ErrNotFound and leaves no transaction open.
func (s *Store) WriteBegin(ctx context.Context, p store.WriteBeginParams) (store.WriteTx, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, wrap("write begin", err)
	}
	tx := &writeTx{
		s:        s,
		conn:     conn,
		entities: make(map[store.EntityKey]store.Record, len(p.Entities)),
		receipts: make(map[string]store.StoredReceipt, len(p.MutationIDs)),
	}
	tx.w.writeID = p.WriteID
	if p.Expect != nil && len(p.Clients) == 0 {
		tx.predict(p)
		tx.next = tx.space.Head + 1
		return tx, nil
	}
	if err := tx.begin(ctx, p); err != nil {
		release(ctx, conn)
		return nil, err
	}
	tx.next = tx.space.Head + 1
	return tx, nil
}

// writeTx is an open write transaction on one acquired connection. Appends
// are buffered in w and sent by Commit with the head update and COMMIT.
type writeTx struct {
	s        *Store
	conn     *pgxpool.Conn // nil once the transaction ended
	space    store.Space
	entities map[store.EntityKey]store.Record
	receipts map[string]store.StoredReceipt
	// clients are the push clients loaded; clientPuts the rows Commit
	// writes.
	clients    map[string]store.PushClient
	clientPuts []store.PushClient
	// rootCounts are the causal budget counter additions Commit writes.
	rootCounts []store.RootCount
	// known holds, for every entity WriteBegin read (or predicted) under
	// the space lock, whether its row existed.
	known map[store.EntityKey]rowState
	next  int64 // seq the next Append must carry
	// expect is set for an optimistic transaction: nothing has been sent
	// yet; Commit sends BEGIN, the lock and these checks with the writes.
	expect *store.WriteBeginParams
	w      pending
	// trig holds the buffered trigger writes (TriggerTx), sent by Commit
	// after the appends.
	trig   triggerWrites
	failed error // a failed Append or ReceiptPut: Commit refuses
}

var _ store.WriteTx = (*writeTx)(nil)

// Write-path lookups probe the primary key with every column bound by
// equality, one key at a time; all of them travel in the one opening
// batch.
const (
	lockQ = "SELECT " + spaceColumns + " FROM spaces WHERE id = $1 FOR UPDATE"
	// The entity loads take no row lock: the space lock already
	// serializes every writer of this space.
	entityQ  = "SELECT " + entityColumns + " FROM entities WHERE space = $1 AND type = $2 AND id = $3"
	receiptQ = `SELECT mutation_id, receipt, entity, created_at FROM receipts
		WHERE space = $1 AND mutation_id = $2 AND created_at >= $3`

	// A group's several keys are loaded by one statement, each key still
	// probed on its own: a LATERAL subquery with a LIMIT is not flattened
	// into a join, so the plan is a nested loop over the keys whose probe
	// is planned as the single-key statement's (as the claim's check of
	// several entities, entitiesCond).
	entitiesQ = `SELECT e.* FROM unnest($2::text[], $3::text[]) AS u(t, i)
		CROSS JOIN LATERAL (SELECT ` + entityColumns + ` FROM entities
			WHERE space = $1 AND type = u.t AND id = u.i LIMIT 1) AS e`
	receiptsQ = `SELECT r.* FROM unnest($2::text[]) AS u(m)
		CROSS JOIN LATERAL (SELECT mutation_id, receipt, entity, created_at FROM receipts
			WHERE space = $1 AND mutation_id = u.m AND created_at >= $3 LIMIT 1) AS r`
)

// queueLoads queues the loads of p's entities and receipts: one
// single-key statement for one, one array statement for several (see
// entitiesQ).
func queueLoads(b *pgx.Batch, p store.WriteBeginParams, entities, receipts func(pgx.Rows) error) {
	switch len(p.Entities) {
	case 0:
	case 1:
		b.Queue(entityQ, p.Space, p.Entities[0].Type, p.Entities[0].ID).Query(entities)
	default:
		types, ids := keyArrays(p.Entities)
		b.Queue(entitiesQ, p.Space, types, ids).Query(entities)
	}
	switch len(p.MutationIDs) {
	case 0:
	case 1:
		b.Queue(receiptQ, p.Space, p.MutationIDs[0], p.ReceiptsSince).Query(receipts)
	default:
		b.Queue(receiptsQ, p.Space, textArray(p.MutationIDs), p.ReceiptsSince).Query(receipts)
	}
}

// keyArrays returns the types and ids of keys as parallel arrays.
func keyArrays(keys []store.EntityKey) (types, ids textArray) {
	types, ids = make(textArray, len(keys)), make(textArray, len(keys))
	for i, k := range keys {
		types[i], ids[i] = k.Type, k.ID
	}
	return types, ids
}

// begin sends the opening batch and fills the space, entities and
// receipts.
func (tx *writeTx) begin(ctx context.Context, p store.WriteBeginParams) error {
	found := false
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(lockQ, p.Space).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var err error
			if tx.space, err = scanSpace(rows); err != nil {
				return err
			}
			found = true
		}
		return rows.Err()
	})
	queueLoads(b, p, tx.scanEntities, tx.scanReceipts)
	tx.queueClientLoads(b, p.Space, p.Clients)
	if err := tx.conn.SendBatch(ctx, b).Close(); err != nil {
		return wrap("write begin", err)
	}
	if !found {
		return notFound("write begin", "space "+p.Space)
	}
	tx.learn(p.Entities)
	return nil
}

// learn records whether the rows of the named entities exist, from
// tx.entities as read (or predicted, then verified) under the space lock.
func (tx *writeTx) learn(keys []store.EntityKey) {
	tx.known = make(map[store.EntityKey]rowState, len(keys))
	for _, k := range keys {
		tx.known[k] = rowAbsent
		if _, ok := tx.entities[k]; ok {
			tx.known[k] = rowPresent
		}
	}
}

// scanEntities reads the entity rows loaded by begin.
func (tx *writeTx) scanEntities(rows pgx.Rows) error {
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return err
		}
		tx.entities[r.Key()] = r
	}
	return rows.Err()
}

// scanReceipts reads the receipt rows loaded by begin.
func (tx *writeTx) scanReceipts(rows pgx.Rows) error {
	for rows.Next() {
		var sr store.StoredReceipt
		var receipt string
		var entity *string
		if err := rows.Scan(&sr.MutationID, &receipt, &entity, &sr.CreatedAt); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(receipt), &sr.Receipt); err != nil {
			return fmt.Errorf("decode stored receipt: %w", err)
		}
		var err error
		if sr.Entity, err = rowcodec.DecodeSnapshot(entity); err != nil {
			return err
		}
		sr.CreatedAt = sr.CreatedAt.UTC()
		tx.receipts[sr.MutationID] = sr
	}
	return rows.Err()
}

// Space returns the locked space row as read by the lock statement.
func (tx *writeTx) Space() store.Space { return tx.space }

// Entities returns the records loaded by WriteBegin.
func (tx *writeTx) Entities() map[store.EntityKey]store.Record { return tx.entities }

// Receipts returns the stored receipts loaded by WriteBegin.
func (tx *writeTx) Receipts() map[string]store.StoredReceipt { return tx.receipts }

// Append buffers one commit (its changes included), the records it
// leaves and its receipt; nothing is sent until Commit. The commit's seq
// must be the next one. A commit that cannot be encoded is refused and the
// transaction stays usable.
func (tx *writeTx) Append(_ context.Context, c store.Commit, records []store.Record) error {
	if tx.conn == nil {
		return errTxDone
	}
	if c.Seq != tx.next {
		return fmt.Errorf("postgres: append commit: seq %d is not the next seq %d", c.Seq, tx.next)
	}
	if err := tx.w.addCommit(c); err != nil {
		return fmt.Errorf("postgres: append commit %d: %w", c.Seq, err)
	}
	if err := tx.buffer(c, records); err != nil {
		// The buffers may hold part of this commit: poison the transaction.
		tx.failed = fmt.Errorf("postgres: append commit %d: %w", c.Seq, err)
		return tx.failed
	}
	tx.next++
	return nil
}

// buffer adds the records and the receipt of commit c, already buffered,
// to the pending writes.
func (tx *writeTx) buffer(c store.Commit, records []store.Record) error {
	for i := range records {
		if err := tx.w.addRecord(records[i], tx.known[records[i].Key()]); err != nil {
			return err
		}
	}
	if c.Receipt.MutationID == "" {
		return nil
	}
	sr := store.StoredReceipt{MutationID: c.Receipt.MutationID, Receipt: c.Receipt, CreatedAt: c.TS}
	if len(c.Changes) > 0 {
		sr.Entity = c.Changes[0].After
	}
	return tx.w.addReceipt(sr, tx.s.orNow(sr.CreatedAt))
}

// ReceiptPut buffers a receipt of a mutation that appended nothing; it
// replaces any stored receipt with the same mutation id.
func (tx *writeTx) ReceiptPut(_ context.Context, r store.StoredReceipt) error {
	if tx.conn == nil {
		return errTxDone
	}
	if err := tx.w.addReceipt(r, tx.s.orNow(r.CreatedAt)); err != nil {
		tx.failed = fmt.Errorf("postgres: put receipt: %w", err)
		return tx.failed
	}
	return nil
}

// Commit sends the buffered writes, the head update, the NOTIFY (unless
// no other process listens: see presence) and COMMIT as one batch (an
// optimistic transaction's batch, the whole transaction, needs no
// COMMIT: see queueExpect), then releases the connection. On any error
// the transaction is rolled back.
func (tx *writeTx) Commit(ctx context.Context) error {
	if tx.conn == nil {
		return errTxDone
	}
	conn := tx.conn
	tx.conn = nil
	defer release(ctx, conn)
	if tx.failed != nil {
		return tx.failed
	}
	notify := tx.s.presence.enter()
	defer tx.s.presence.leave(ctx)
	if tx.s.beforeSend != nil {
		tx.s.beforeSend()
	}
	b := &pgx.Batch{}
	last := tx.next - 1
	if tx.expect != nil {
		queueExpect(b, tx.expect, last, notify)
	}
	tx.w.queue(b, tx.space.ID, last, tx.space.Head, tx.expect == nil, notify)
	tx.trig.queue(b)
	tx.queueClientPuts(b)
	tx.queueRootCounts(b)
	if tx.expect == nil {
		b.Queue("COMMIT")
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return wrapTrigger("commit", err)
	}
	return nil
}

// Rollback abandons the transaction and releases the connection; it is a
// no-op after Commit or a previous Rollback.
func (tx *writeTx) Rollback(ctx context.Context) error {
	if tx.conn == nil {
		return nil
	}
	conn := tx.conn
	tx.conn = nil
	release(ctx, conn)
	return nil
}
