package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eddy-run/eddy/store"
)

// SQLSTATE codes raised by eddy_fence (migration 0005).
const (
	codeFenced  = "EDY02"
	codeMissing = "EDY03"
)

// wrapTrigger is wrap that also maps eddy_fence's codes: EDY02 onto
// store.ErrFenced and EDY03 onto store.ErrNotFound.
func wrapTrigger(op string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case codeFenced:
			return fmt.Errorf("postgres: %s: %w", op, &sentinelError{sentinel: store.ErrFenced, err: err})
		case codeMissing:
			return fmt.Errorf("postgres: %s: %w", op, &sentinelError{sentinel: store.ErrNotFound, err: err})
		}
	}
	return wrap(op, err)
}

// fenced returns a wrapped store.ErrFenced with context.
func fenced(op, what string) error {
	return fmt.Errorf("postgres: %s: %s: %w", op, what, store.ErrFenced)
}

// openStatusesSQL lists the open delivery statuses literally, as the
// partial index deliveries_open_idx does, so the planner can use it.
const openStatusesSQL = "('pending', 'running', 'retrying')"

// stoppedWhereSQL selects the stopped deliveries (store.DeliveryStatus.
// Stopped) as the partial index deliveries_stopped_idx does.
const stoppedWhereSQL = "status NOT IN ('pending', 'running', 'retrying', 'succeeded')"

// optTime maps a zero time to NULL and any other to UTC microseconds.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	v := microUTC(t)
	return &v
}

// fromOptTime maps NULL to the zero time and any other to UTC.
func fromOptTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

const stateColumns = "space, trigger, cursor, start, skipped, fired, owner, epoch, lease_expires, updated_at"

// scanState reads one trigger_state row selected with stateColumns.
func scanState(row pgx.Row) (store.TriggerState, error) {
	var s store.TriggerState
	var skipped []byte
	var fired, expires *time.Time
	err := row.Scan(&s.Space, &s.Trigger, &s.Cursor, &s.Start, &skipped, &fired,
		&s.Owner, &s.Epoch, &expires, &s.UpdatedAt)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(skipped, &s.Skipped); err != nil {
		return s, fmt.Errorf("decode skipped ranges: %w", err)
	}
	if s.Skipped == nil {
		s.Skipped = []store.SeqRange{}
	}
	s.Fired, s.LeaseExpires, s.UpdatedAt = fromOptTime(fired), fromOptTime(expires), s.UpdatedAt.UTC()
	return s, nil
}

// encodeSkipped returns ranges as the JSON stored in skipped ("[]" for
// none).
func encodeSkipped(ranges []store.SeqRange) string {
	if len(ranges) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ranges) // a slice of int pairs always encodes
	return string(b)
}

const deliveryColumns = `space, id, trigger, seq, entity_type, entity_id, status, attempts, depth,
	last_error, next_attempt_at, created_at, updated_at`

// scanDelivery reads one deliveries row selected with deliveryColumns.
func scanDelivery(row pgx.Row) (store.Delivery, error) {
	var d store.Delivery
	var attempts, depth int32
	var next *time.Time
	err := row.Scan(&d.Space, &d.ID, &d.Trigger, &d.Seq, &d.Entity.Type, &d.Entity.ID, &d.Status,
		&attempts, &depth, &d.LastError, &next, &d.CreatedAt, &d.UpdatedAt)
	d.Attempts, d.Depth = int(attempts), int(depth)
	d.NextAttemptAt, d.CreatedAt, d.UpdatedAt = fromOptTime(next), d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return d, err
}

// stmt is one statement of a trigger write, queued into a batch.
type stmt struct {
	sql  string
	args []any
	// trigger orders the fenced updates of trigger_state rows.
	trigger string
}

// stmts is an ordered list of statements.
type stmts []stmt

// add appends a statement.
func (q *stmts) add(sql string, args ...any) { *q = append(*q, stmt{sql: sql, args: args}) }

// triggerWrites are trigger writes sent together in one batch (an
// implicit transaction, or a write transaction's commit batch). The
// fenced updates of trigger_state rows go first, sorted by trigger, and
// the delivery and stance error writes after them: a transaction thus
// takes its trigger_state row locks before any deliveries row lock and
// never upgrades the share lock a fenced delivery update takes on its
// trigger's row, which keeps it from deadlocking with a concurrent
// delivery update, move or advance. The order changes no outcome: the
// delivery writes only read a trigger's epoch, which these updates leave
// alone.
type triggerWrites struct {
	state stmts // fenced trigger_state updates, added with fence
	rows  stmts // deliveries and stance_errors writes, in call order
}

// fence adds the fenced update of trigger's state: sql with args $1
// space and $2 trigger, then rest.
func (w *triggerWrites) fence(sql, space, trigger string, rest ...any) {
	w.state = append(w.state, stmt{sql: sql, args: append([]any{space, trigger}, rest...), trigger: trigger})
}

// queue adds the writes to b. The sort is stable, so two updates of one
// trigger (two advances that chain) keep their order.
func (w *triggerWrites) queue(b *pgx.Batch) {
	slices.SortStableFunc(w.state, func(x, y stmt) int {
		return strings.Compare(x.trigger, y.trigger)
	})
	for _, q := range [...]stmts{w.state, w.rows} {
		for _, s := range q {
			b.Queue(s.sql, s.args...)
		}
	}
}

// Fenced trigger writes. Each is one statement that raises through
// eddy_fence when its UPDATE changed nothing, so the batch carrying it
// (and any COMMIT after it) aborts and nothing is written.
const (
	advanceQ = `WITH u AS (UPDATE trigger_state SET cursor = $4, updated_at = $6
		WHERE space = $1 AND trigger = $2 AND cursor = $3 AND epoch = $5 RETURNING 1)
		SELECT eddy_fence(true, EXISTS (SELECT 1 FROM u))`
	firedQ = `WITH u AS (UPDATE trigger_state SET fired = $4, updated_at = $5
		WHERE space = $1 AND trigger = $2 AND epoch = $3 RETURNING 1)
		SELECT eddy_fence(true, EXISTS (SELECT 1 FROM u))`
	// deliveryFenceCTE selects the delivery's trigger epoch with a key
	// share lock, so a lease changing hands (LeaseAcquire locks the row
	// FOR UPDATE first) waits for (or is seen by) the update, while cursor
	// advances (which change no key) never wait for it; then it updates
	// the delivery when its status and that epoch match. $1 space, $2 id, $3 status, $4 attempts, $5 last
	// error, $6 next attempt, $7 now, $8 from statuses, $9 epoch.
	deliveryFenceCTE = `WITH t AS (SELECT epoch FROM trigger_state
			WHERE space = $1 AND trigger = (SELECT trigger FROM deliveries WHERE space = $1 AND id = $2)
			FOR KEY SHARE),
		u AS (UPDATE deliveries SET status = $3, attempts = $4, last_error = $5,
			next_attempt_at = $6, updated_at = $7
			WHERE space = $1 AND id = $2
			  AND (cardinality($8::text[]) = 0 OR status = ANY($8::text[]))
			  AND ($9::bigint = 0 OR (SELECT epoch FROM t) = $9::bigint)
			RETURNING ` + deliveryColumns + `)`
	deliveryUpdateQ = deliveryFenceCTE + " SELECT " + deliveryColumns + " FROM u"
	// deliveryUpdateSetQ is deliveryFenceCTE for several updates at once,
	// each delivery named once (updateBuf): the trigger rows of their
	// deliveries are locked FOR KEY SHARE first, then every delivery
	// whose status is one of its update's from statuses (a comma-joined
	// list; empty: any) and whose trigger's epoch is its update's (0: any)
	// is updated; it returns the space and id of each updated one.
	// $1 spaces, $2 ids, $3 statuses, $4 attempts, $5 last errors, $6 next
	// attempts, $7 from statuses, $8 epochs, $9 now.
	deliveryUpdateSetQ = `WITH u AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[],
			$5::text[], $6::timestamptz[], $7::text[], $8::bigint[])
			AS u(space, id, status, attempts, last_error, next_attempt_at, from_statuses, epoch)),
		t AS (SELECT space, trigger, epoch FROM trigger_state
			WHERE (space, trigger) IN (SELECT d.space, d.trigger FROM deliveries d
				JOIN u ON d.space = u.space AND d.id = u.id)
			FOR KEY SHARE)
		UPDATE deliveries d SET status = u.status, attempts = u.attempts, last_error = u.last_error,
			next_attempt_at = u.next_attempt_at, updated_at = $9
		FROM u
		WHERE d.space = u.space AND d.id = u.id
		  AND (u.from_statuses = '' OR d.status = ANY(string_to_array(u.from_statuses, ',')))
		  AND (u.epoch = 0 OR (SELECT t.epoch FROM t WHERE t.space = d.space AND t.trigger = d.trigger) = u.epoch)
		RETURNING d.space, d.id`
	deliveryCompleteQ = deliveryFenceCTE + ` SELECT eddy_fence(
		EXISTS (SELECT 1 FROM deliveries WHERE space = $1 AND id = $2), EXISTS (SELECT 1 FROM u))`

	insertDeliveryCols = `space, id, trigger, seq, entity_type, entity_id, status, attempts, depth,
		last_error, next_attempt_at, created_at, updated_at`
	insertDeliveryQ = "INSERT INTO deliveries (" + insertDeliveryCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	insertDeliveriesQ = "INSERT INTO deliveries (" + insertDeliveryCols + `)
		SELECT $1::text, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[],
			$7::text[], $8::int[], $9::int[], $10::text[], $11::timestamptz[], $12::timestamptz[],
			$13::timestamptz[])`
	upsertStanceErrorsQ = `INSERT INTO stance_errors (space, trigger, seq, error)
		SELECT $1::text, * FROM unnest($2::text[], $3::bigint[], $4::text[])
		ON CONFLICT (space, trigger, seq) DO UPDATE SET error = EXCLUDED.error`
)

// updateArgs returns the arguments of deliveryFenceCTE for u at now.
func updateArgs(u store.DeliveryUpdate, now time.Time) []any {
	return []any{u.Space, u.ID, string(u.Status), int32(u.Attempts), u.LastError, optTime(u.NextAttemptAt),
		now, texts(u.From), u.Epoch}
}

// updateBuf holds delivery updates as the column arrays of
// deliveryUpdateSetQ.
type updateBuf struct {
	space, id, status, lastError, from textArray
	attempts                           int4Array
	next                               nullTimeArray
	epoch                              int8Array
}

// add buffers u.
func (b *updateBuf) add(u store.DeliveryUpdate) {
	b.space = append(b.space, u.Space)
	b.id = append(b.id, u.ID)
	b.status = append(b.status, string(u.Status))
	b.attempts = append(b.attempts, int32(u.Attempts))
	b.lastError = append(b.lastError, u.LastError)
	b.next = append(b.next, optTime(u.NextAttemptAt))
	b.from = append(b.from, strings.Join(texts(u.From), ","))
	b.epoch = append(b.epoch, u.Epoch)
}

// args returns the arguments of deliveryUpdateSetQ at now.
func (b *updateBuf) args(now time.Time) []any {
	return []any{b.space, b.id, b.status, b.attempts, b.lastError, b.next, b.from, b.epoch, now}
}

// deliveryBuf holds deliveries rows as column arrays.
type deliveryBuf struct {
	id, trigger, etype, eid, status, lastError textArray
	seq                                        int8Array
	attempts, depth                            int4Array
	next                                       nullTimeArray
	created, updated                           timeArray
}

// add buffers d of trigger (d.Trigger when set); zero creation and update
// times become now and an empty status pending.
func (k *deliveryBuf) add(d store.Delivery, trigger string, now time.Time) {
	if d.Trigger != "" {
		trigger = d.Trigger
	}
	if d.Status == "" {
		d.Status = store.DeliveryPending
	}
	created := now
	if !d.CreatedAt.IsZero() {
		created = microUTC(d.CreatedAt)
	}
	updated := created
	if !d.UpdatedAt.IsZero() {
		updated = microUTC(d.UpdatedAt)
	}
	k.id = append(k.id, d.ID)
	k.trigger = append(k.trigger, trigger)
	k.seq = append(k.seq, d.Seq)
	k.etype = append(k.etype, d.Entity.Type)
	k.eid = append(k.eid, d.Entity.ID)
	k.status = append(k.status, string(d.Status))
	k.attempts = append(k.attempts, int32(d.Attempts))
	k.depth = append(k.depth, int32(d.Depth))
	k.lastError = append(k.lastError, d.LastError)
	k.next = append(k.next, optTime(d.NextAttemptAt))
	k.created = append(k.created, created)
	k.updated = append(k.updated, updated)
}

// queue adds the insert of the buffered rows of space: a plain INSERT
// for one, an INSERT ... SELECT FROM unnest for several.
func (k *deliveryBuf) queue(q *stmts, space string) {
	switch len(k.id) {
	case 0:
	case 1:
		q.add(insertDeliveryQ, space, k.id[0], k.trigger[0], k.seq[0], k.etype[0], k.eid[0],
			k.status[0], k.attempts[0], k.depth[0], k.lastError[0], k.next[0], k.created[0], k.updated[0])
	default:
		q.add(insertDeliveriesQ, space, k.id, k.trigger, k.seq, k.etype, k.eid, k.status,
			k.attempts, k.depth, k.lastError, k.next, k.created, k.updated)
	}
}

// queueAdvances adds to w the statements applying advances of space at
// now: one fenced cursor update per advance, then one insert of every
// delivery and one upsert of every stance error (the last error of a
// trigger and seq wins).
func queueAdvances(w *triggerWrites, space string, advances []store.Advance, now time.Time) {
	for _, a := range advances {
		w.fence(advanceQ, space, a.Trigger, a.From, a.To, a.Epoch, now)
	}
	var ds deliveryBuf
	var es stanceErrorBuf
	for _, a := range advances {
		for _, d := range a.Deliveries {
			ds.add(d, a.Trigger, now)
		}
		for _, e := range a.Failures {
			es.add(e, a.Trigger)
		}
	}
	ds.queue(&w.rows, space)
	es.queue(&w.rows, space)
}

// stanceErrorBuf holds stance_errors rows as column arrays, one per
// trigger and seq (an upsert may not touch one row twice).
type stanceErrorBuf struct {
	idx            map[stanceErrorKey]int
	trigger, error textArray
	seq            int8Array
}

type stanceErrorKey struct {
	trigger string
	seq     int64
}

// add buffers e of trigger (e.Trigger when set), replacing an earlier
// error of the same trigger and seq.
func (k *stanceErrorBuf) add(e store.FilterFailure, trigger string) {
	if e.Trigger != "" {
		trigger = e.Trigger
	}
	key := stanceErrorKey{trigger, e.Seq}
	if i, ok := k.idx[key]; ok {
		k.error[i] = e.Error
		return
	}
	if k.idx == nil {
		k.idx = map[stanceErrorKey]int{}
	}
	k.idx[key] = len(k.trigger)
	k.trigger, k.seq, k.error = append(k.trigger, trigger), append(k.seq, e.Seq), append(k.error, e.Error)
}

// queue adds the upsert of the buffered rows of space.
func (k *stanceErrorBuf) queue(q *stmts, space string) {
	if len(k.trigger) > 0 {
		q.add(upsertStanceErrorsQ, space, k.trigger, k.seq, k.error)
	}
}

// texts returns v as a non-nil []string, the type a text[] parameter
// takes.
func texts[S ~string](v []S) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = string(s)
	}
	return out
}
