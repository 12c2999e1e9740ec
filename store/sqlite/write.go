package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// ErrTxFailed reports a WriteTx used after one of its statements failed; it
// can only be rolled back.
var ErrTxFailed = errors.New("write transaction failed")

// sqlLockSpace reads the space row, and its number for the rids, as a
// write transaction's first statement after sqlDataVersion, unless the
// write connection's last commit left it (spacememo.go).
var sqlLockSpace = `SELECT ` + spaceCols + `, num FROM spaces WHERE id = ?`

// sqlDataVersion tells whether another connection committed since the
// write connection last read it.
const sqlDataVersion = `PRAGMA data_version`

// Write statements, prepared once on the write connection.
const (
	sqlLoadEntities = `SELECT e.type, e.id, e.version, e.kind, e.properties, e.links,
       e.group_versions, e.created_at, e.updated_at, e.num
FROM json_each(?2) AS j
CROSS JOIN entities AS e
WHERE e.space = ?1 AND e.type = j.value ->> 0 AND e.id = j.value ->> 1`

	// sqlLoadEntity is sqlLoadEntities for one key, the common case (a
	// one-writer commit of one mutation): a point lookup costs the
	// leader about a third of a json_each join's CPU.
	sqlLoadEntity = `SELECT ` + recordCols + `, num FROM entities WHERE space = ? AND type = ? AND id = ?`

	// sqlEntityNum reads the number of an entity WriteBegin did not load.
	sqlEntityNum = `SELECT num FROM entities WHERE space = ? AND type = ? AND id = ?`

	sqlLoadReceipts = `SELECT mutation_id, receipt, entity, created_at FROM receipts
WHERE space = ?1 AND mutation_id IN (SELECT value FROM json_each(?2)) AND created_at >= ?3`

	sqlInsertCommit = `INSERT INTO commits (space, seq, ts, actor, op, entity_type, entity_id,
entity2_type, entity2_id, payload, receipt, provenance, caused_by, depth, changes, change_count, write_id, rid,
entity_num) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

	// sqlInsertEntity writes the first row of an entity predicted absent
	// and not read (writeTx.unseen): it fails on a row that exists.
	sqlInsertEntity = `INSERT INTO entities (space, type, id, version, kind, properties, links,
group_versions, created_at, updated_at, num) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

	// sqlUpsertEntity leaves an existing row's num as it is: an entity's
	// number never changes (migration 0019).
	sqlUpsertEntity = sqlInsertEntity + `
ON CONFLICT (space, type, id) DO UPDATE SET version = excluded.version, kind = excluded.kind,
properties = excluded.properties, links = excluded.links, group_versions = excluded.group_versions,
created_at = excluded.created_at, updated_at = excluded.updated_at`

	sqlUpsertReceipt = `INSERT INTO receipts (space, mutation_id, receipt, entity, created_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (space, mutation_id) DO UPDATE SET receipt = excluded.receipt,
entity = excluded.entity, created_at = excluded.created_at`
)

// WriteBegin opens a BEGIN IMMEDIATE transaction on the write connection
// (waiting in process for any other writer), reads the space row and loads
// the named entities and receipts. It returns ErrNotFound, with no
// transaction left open, if the space is missing.
//
// The returned WriteTx holds the write lock: callers must always end it
// with Commit or Rollback, whatever becomes of ctx. ctx bounds the wait
// for the lock in this process; another process's lock is waited for
// until ctx's deadline or the busy timeout, whichever comes first
// (writer.beginFor). The statements after it run to their end.
func (s *Store) WriteBegin(ctx context.Context, p store.WriteBeginParams) (store.WriteTx, error) {
	if err := s.wr.beginFor(ctx); err != nil {
		return nil, wrap("write begin", err)
	}
	wt := &writeTx{s: s, writeID: p.WriteID}
	if err := wt.load(ctx, p); err != nil {
		_ = wt.Rollback(ctx)
		return nil, wrap("write begin", err)
	}
	wt.next = wt.space.Head + 1
	if ctx.Done() != nil {
		wt.stop = context.AfterFunc(ctx, wt.abandon)
	}
	return wt, nil
}

// abandon rolls back a transaction whose WriteBegin context ended before
// Commit or Rollback, and releases the write lock, once the statement
// under way (if any) returns: a caller that forgot its transaction does
// not stop every other write for good.
func (t *writeTx) abandon() {
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = t.end()
}

// writeTx is an open write transaction on the held write connection; it
// is used by one goroutine.
type writeTx struct {
	s        *Store
	space    store.Space
	num      int64 // the space's number, the high bits of its commits' rids
	entities map[store.EntityKey]store.Record
	receipts map[string]store.StoredReceipt
	clients  map[string]store.PushClient

	// nums are the entity numbers (migration 0019) of the keys loaded or
	// written so far: an int64, or nil for a row that has none.
	nums map[store.EntityKey]any

	// unseen are the named keys predicted absent (WriteBeginParams.Expect)
	// and so not read: the first row written for each is a plain INSERT,
	// which verifies the prediction (see predicted).
	unseen map[store.EntityKey]bool
	// stale is set when such an INSERT met a row: the prediction was
	// wrong, and Commit rolls back and fails with store.ErrStale.
	stale bool

	gen     uint64 // the transaction's generation (spaceMemos.begin)
	next    int64  // seq the next Append must carry
	writeID int64  // stored with every commit; 0 stores NULL
	failed  error  // first statement error; only Rollback is allowed after it

	// mu is held by each method for its statements, and by abandon.
	mu   sync.Mutex
	done bool        // guarded by mu
	stop func() bool // stops abandon's registration; nil if none
}

// stmt returns the write statement prepared on the held connection.
func (t *writeTx) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	return t.s.wr.stmt(ctx, query)
}

func (t *writeTx) load(ctx context.Context, p store.WriteBeginParams) error {
	ctx, err := stmtContext(ctx)
	if err != nil {
		return err
	}
	if err := t.loadSpace(ctx, p.Space); err != nil {
		return err
	}
	keys := p.Entities
	if p.Expect != nil && len(p.Clients) == 0 {
		keys, t.unseen = predicted(p.Entities, p.Expect)
	}
	t.nums = make(map[store.EntityKey]any, len(p.Entities))
	for _, k := range p.Entities {
		t.nums[k] = absentRow{} // until a row loaded below numbers it
	}
	if t.entities, err = t.loadEntities(ctx, keys); err != nil {
		return fmt.Errorf("load entities: %w", err)
	}
	if t.receipts, err = t.loadReceipts(ctx, p.MutationIDs, p.ReceiptsSince); err != nil {
		return fmt.Errorf("load receipts: %w", err)
	}
	if t.clients, err = t.loadClients(ctx, p.Space, p.Clients); err != nil {
		return fmt.Errorf("load clients: %w", err)
	}
	return nil
}

// predicted splits the named keys of an optimistic transaction: those
// predicted present are read (their rows are the truth the transaction
// answers with), and those predicted absent are not. A put of a new
// entity is the common write, and its key is one the write cache cannot
// know; reading it cost the group leader about an eighth of a one-put
// commit's CPU. Its absence is verified by the write of its first row,
// a plain INSERT that fails on a row that exists (a SQLite INSERT
// probes the primary key anyway), and a wrong prediction fails Commit
// with store.ErrStale, having written nothing, as the contract asks.
// The space row, the keys predicted present and the receipts are read
// as without a prediction.
func predicted(keys []store.EntityKey, exp *store.Expectation) (read []store.EntityKey, unseen map[store.EntityKey]bool) {
	for _, k := range keys {
		if _, ok := exp.Records[k]; ok {
			read = append(read, k)
			continue
		}
		if unseen == nil {
			unseen = make(map[store.EntityKey]bool, len(keys))
		}
		unseen[k] = true
	}
	return read, unseen
}

// loadSpace reads the space row, or takes the one the write
// connection's last commit to it left when nothing wrote since.
func (t *writeTx) loadSpace(ctx context.Context, space string) error {
	st, err := t.stmt(ctx, sqlDataVersion)
	if err != nil {
		return err
	}
	var version int64
	if err := st.QueryRowContext(ctx).Scan(&version); err != nil {
		return fmt.Errorf("data version: %w", err)
	}
	sm, ok, gen := t.s.memos.begin(space, version)
	t.gen = gen
	if ok {
		t.space, t.num = sm.space, sm.num
		return nil
	}
	if st, err = t.stmt(ctx, sqlLockSpace); err != nil {
		return err
	}
	if t.space, err = scanSpace(st.QueryRowContext(ctx, space), &t.num); err != nil {
		return fmt.Errorf("space %q: %w", space, err)
	}
	return nil
}

func (t *writeTx) loadEntities(ctx context.Context, keys []store.EntityKey) (map[store.EntityKey]store.Record, error) {
	out := make(map[store.EntityKey]store.Record, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	if len(keys) == 1 {
		return out, t.loadEntity(ctx, keys[0], out)
	}
	kj, err := keysJSON(keys)
	if err != nil {
		return nil, err
	}
	st, err := t.stmt(ctx, sqlLoadEntities)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, t.space.ID, kj)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var num sql.NullInt64
		r, err := scanRecord(rows, &num)
		if err != nil {
			return nil, err
		}
		out[r.Key()] = r
		t.numbered(r.Key(), num)
	}
	return out, rows.Err()
}

// loadEntity adds the record of key to out, if it exists.
func (t *writeTx) loadEntity(ctx context.Context, key store.EntityKey, out map[store.EntityKey]store.Record) error {
	st, err := t.stmt(ctx, sqlLoadEntity)
	if err != nil {
		return err
	}
	var num sql.NullInt64
	r, err := scanRecord(st.QueryRowContext(ctx, t.space.ID, key.Type, key.ID), &num)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	out[r.Key()] = r
	t.numbered(r.Key(), num)
	return nil
}

// absentRow marks in writeTx.nums a key that has no entities row yet:
// its first row takes the seq of the commit that writes it as number.
type absentRow struct{}

// numbered notes the number a loaded entity row carries (NULL for a row
// older than migration 0019 whose commits were all pruned before it).
func (t *writeTx) numbered(key store.EntityKey, num sql.NullInt64) {
	t.nums[key] = nil
	if num.Valid {
		t.nums[key] = num.Int64
	}
}

// number gives each key c's records write that has no row yet the new
// row's number, c.Seq, and returns the number of c's primary entity: the
// value of its commit row's entity_num, nil when the key has no row (an
// engine op's). It runs serially, in commit order, before the commits
// are encoded (maybe in parallel, reading t.nums).
func (t *writeTx) number(ctx context.Context, c *store.Commit, records []store.Record) (any, error) {
	for i := range records {
		k := records[i].Key()
		n, err := t.numOf(ctx, k)
		if err != nil {
			return nil, err
		}
		if n == (absentRow{}) {
			t.nums[k] = c.Seq
		}
	}
	n, err := t.numOf(ctx, store.EntityKey{Type: c.Type, ID: c.EntityID})
	if n == (absentRow{}) {
		n = nil
	}
	return n, err
}

// numOf is key's number as t.nums knows it, or as its row holds it for
// a key WriteBegin was not asked for (the changelog always names the
// keys it writes; an engine op's key has no row).
func (t *writeTx) numOf(ctx context.Context, key store.EntityKey) (any, error) {
	if n, ok := t.nums[key]; ok {
		return n, nil
	}
	st, err := t.stmt(ctx, sqlEntityNum)
	if err != nil {
		return nil, err
	}
	var num sql.NullInt64
	switch err := st.QueryRowContext(ctx, t.space.ID, key.Type, key.ID).Scan(&num); {
	case errors.Is(err, sql.ErrNoRows):
		t.nums[key] = absentRow{}
	case err != nil:
		return nil, fmt.Errorf("entity number: %w", err)
	default:
		t.numbered(key, num)
	}
	return t.nums[key], nil
}

func (t *writeTx) loadReceipts(ctx context.Context, ids []string, since time.Time) (map[string]store.StoredReceipt, error) {
	out := make(map[string]store.StoredReceipt, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	ij, err := rowcodec.Marshal(ids)
	if err != nil {
		return nil, err
	}
	st, err := t.stmt(ctx, sqlLoadReceipts)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, t.space.ID, ij, micros(since))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		sr, err := scanStoredReceipt(rows)
		if err != nil {
			return nil, err
		}
		out[sr.MutationID] = sr
	}
	return out, rows.Err()
}

func scanStoredReceipt(sc scanner) (store.StoredReceipt, error) {
	var (
		sr      store.StoredReceipt
		rt      string
		ent     *string
		created int64
	)
	if err := sc.Scan(&sr.MutationID, &rt, &ent, &created); err != nil {
		return sr, err
	}
	if err := json.Unmarshal([]byte(rt), &sr.Receipt); err != nil {
		return sr, err
	}
	var err error
	sr.Entity, err = rowcodec.DecodeSnapshot(ent)
	sr.CreatedAt = fromMicros(created)
	return sr, err
}

// stmtContext is the context a write transaction's statements run with:
// ctx without its cancellation, or ctx's error if it is already done. The
// driver arms a watcher goroutine per statement run with a cancellable
// context, and the transaction needs none: its statements are short, run
// on a lock already held, and a caller whose ctx ends meets its error at
// the next statement and rolls back.
func stmtContext(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// Space is the locked space row as read by WriteBegin; Append does not
// change it.
func (t *writeTx) Space() store.Space { return t.space }

// Entities are the records loaded by WriteBegin.
func (t *writeTx) Entities() map[store.EntityKey]store.Record { return t.entities }

// Receipts are the stored receipts loaded by WriteBegin.
func (t *writeTx) Receipts() map[string]store.StoredReceipt { return t.receipts }

// usable reports why the transaction can take no more statements.
func (t *writeTx) usable() error {
	switch {
	case t.done:
		return sql.ErrTxDone
	case t.failed != nil:
		return fmt.Errorf("%w: %w", ErrTxFailed, t.failed)
	}
	return nil
}

// fail records the first statement error; the transaction can then only
// be rolled back, so a half-written commit can never be committed.
func (t *writeTx) fail(err error) error {
	if err != nil && t.failed == nil {
		t.failed = err
	}
	return err
}

// Append writes the commit row (its changes included), the records it
// leaves and its receipt. Everything is encoded and checked before the first statement,
// so a rejected Append (such as a wrong seq) leaves the transaction usable.
func (t *writeTx) Append(ctx context.Context, c store.Commit, records []store.Record) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return fmt.Errorf("sqlite: append: %w", err)
	}
	if c.Seq != t.next {
		return fmt.Errorf("sqlite: append: seq %d, want %d", c.Seq, t.next)
	}
	ctx, err := stmtContext(ctx)
	if err != nil {
		return wrap("append", err)
	}
	num, err := t.number(ctx, &c, records)
	if err != nil {
		return wrap("append", t.fail(err))
	}
	a, err := t.encodeAppend(&c, records, num)
	if err != nil {
		return wrap("append: encode", err)
	}
	if t.stale { // Commit fails anyway: nothing more to write
		t.next++
		return nil
	}
	if err := t.fail(t.exec(ctx, a)); err != nil {
		return wrap("append", err)
	}
	t.next++
	return nil
}

// appendArgs are the encoded statements of one Append.
type appendArgs struct {
	commit  []any
	records [][]any
	receipt []any // nil when the commit has no mutation id
}

func (t *writeTx) encodeAppend(c *store.Commit, records []store.Record, num any) (appendArgs, error) {
	var a appendArgs
	var err error
	if a.commit, err = commitArgs(t.space.ID, ridOf(t.num, c.Seq), c, t.writeID, num); err != nil {
		return a, err
	}
	a.records = make([][]any, len(records))
	for i := range records {
		if a.records[i], err = recordArgs(t.space.ID, &records[i], t.nums[records[i].Key()]); err != nil {
			return a, err
		}
	}
	if c.Receipt.MutationID != "" {
		var ent *store.Record
		if len(c.Changes) > 0 {
			ent = c.Changes[0].After
		}
		sr := store.StoredReceipt{MutationID: c.Receipt.MutationID, Receipt: c.Receipt, Entity: ent, CreatedAt: c.TS}
		if a.receipt, err = receiptArgs(t.space.ID, &sr); err != nil {
			return a, err
		}
	}
	return a, nil
}

// commitArgs are the insert arguments of a commit row at rid whose
// primary entity is numbered num (nil for none); a writeID of 0 stores
// NULL.
func commitArgs(space string, rid int64, c *store.Commit, writeID int64, num any) ([]any, error) {
	second, err := rowcodec.SecondEntity(c)
	if err != nil {
		return nil, err
	}
	var type2, id2 any
	if second != nil {
		type2, id2 = second.Type, second.ID
	}
	changes, err := rowcodec.EncodeChanges(c.Changes)
	if err != nil {
		return nil, err
	}
	rt, err := rowcodec.EncodeReceipt(c.Receipt)
	if err != nil {
		return nil, err
	}
	var causedBy any
	if c.Provenance.CausedBy != 0 {
		causedBy = c.Provenance.CausedBy
	}
	var wid any
	if writeID != 0 {
		wid = writeID
	}
	return []any{space, c.Seq, micros(c.TS), c.Actor, c.Op, c.Type, c.EntityID, type2, id2,
		rowcodec.RawText(c.Payload, "{}"), rt, rowcodec.EncodeProvenance(c.Provenance), causedBy, c.Provenance.Depth, changes,
		len(c.Changes), wid, rid, num}, nil
}

func receiptArgs(space string, sr *store.StoredReceipt) ([]any, error) {
	rt, err := rowcodec.MarshalReceipt(sr.Receipt)
	if err != nil {
		return nil, err
	}
	ent, err := rowcodec.EncodeSnapshot(sr.Entity)
	if err != nil {
		return nil, err
	}
	created := sr.CreatedAt
	if created.IsZero() {
		created = now()
	}
	return []any{space, sr.MutationID, rt, ent, micros(created)}, nil
}

// exec runs the statements of one Append: the entity rows first, so a
// prediction found wrong (t.stale) skips the rest.
func (t *writeTx) exec(ctx context.Context, a appendArgs) error {
	for _, args := range a.records {
		if t.firstRow(args) {
			if err := t.runFirsts(ctx, [][]any{args}); err != nil || t.stale {
				return err
			}
			continue
		}
		if err := t.run(ctx, sqlUpsertEntity, args); err != nil {
			return fmt.Errorf("entity: %w", err)
		}
	}
	if err := t.run(ctx, sqlInsertCommit, a.commit); err != nil {
		return fmt.Errorf("commit row: %w", err)
	}
	if a.receipt != nil {
		if err := t.run(ctx, sqlUpsertReceipt, a.receipt); err != nil {
			return fmt.Errorf("receipt: %w", err)
		}
	}
	return nil
}

// firstRow reports whether an entity row's key is unseen (predicted
// absent and not read) and takes it out: its row is then the first, and
// later rows of the key in this transaction update it.
func (t *writeTx) firstRow(args []any) bool {
	if len(t.unseen) == 0 {
		return false
	}
	k := store.EntityKey{Type: args[1].(string), ID: args[2].(string)}
	if !t.unseen[k] {
		return false
	}
	delete(t.unseen, k)
	return true
}

func (t *writeTx) run(ctx context.Context, query string, args []any) error {
	ctx, err := stmtContext(ctx)
	if err != nil {
		return err
	}
	st, err := t.stmt(ctx, query)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

// ReceiptPut upserts a stored receipt of a mutation that appended nothing.
func (t *writeTx) ReceiptPut(ctx context.Context, r store.StoredReceipt) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return fmt.Errorf("sqlite: put receipt: %w", err)
	}
	args, err := receiptArgs(t.space.ID, &r)
	if err != nil {
		return wrap("put receipt: encode", err)
	}
	return wrap("put receipt", t.fail(t.run(ctx, sqlUpsertReceipt, args)))
}

// Commit commits; the space's head is then the last appended seq (read
// from the commits, see spaceHead). On any error the transaction is
// rolled back. Either way the write connection is released.
func (t *writeTx) Commit(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	// A stale transaction is retried whole, so ErrStale wins over a later
	// statement's failure.
	if err := t.usable(); err != nil && (t.done || !t.stale) {
		_ = t.end()
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	if err := t.verifyUnseen(); err != nil {
		_ = t.end()
		return wrap("commit: verify predicted absent entities", err)
	}
	if t.stale {
		_ = t.end()
		return fmt.Errorf("sqlite: commit: an entity predicted absent exists: %w", store.ErrStale)
	}
	t.finish()
	defer t.s.wr.release()
	if err := t.s.wr.commit(); err != nil {
		return wrap("commit", err)
	}
	left := t.space
	left.Head = t.next - 1
	t.s.memos.committed(t.gen, spaceMemo{space: left, num: t.num})
	t.s.ckpt.committed(t.next - 1 - t.space.Head)
	t.s.sweepWAL()
	return nil
}

// verifyUnseen checks that the keys predicted absent whose rows the
// transaction did not write (a put rejected, say) have none, and marks
// the transaction stale if one has: what it decided from the prediction
// must hold when it commits. A put of a new entity writes its row, so
// there is usually nothing left to check.
func (t *writeTx) verifyUnseen() error {
	if t.stale || len(t.unseen) == 0 {
		return nil
	}
	keys := make([]store.EntityKey, 0, len(t.unseen))
	for k := range t.unseen {
		keys = append(keys, k)
	}
	found, err := t.loadEntities(context.Background(), keys)
	if err != nil {
		return err
	}
	t.stale = len(found) > 0
	return nil
}

// Rollback abandons the transaction and releases the write connection; it
// is a no-op after Commit or a previous Rollback.
func (t *writeTx) Rollback(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.end()
}

// end rolls back and releases the write connection unless the
// transaction already ended. t.mu is held.
func (t *writeTx) end() error {
	if t.done {
		return nil
	}
	t.finish()
	defer t.s.wr.release()
	return wrap("rollback", t.s.wr.abort())
}

// finish marks the transaction ended and stops abandon's registration.
// t.mu is held.
func (t *writeTx) finish() {
	t.done = true
	if t.stop != nil {
		t.stop()
	}
}
