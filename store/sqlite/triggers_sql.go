package sqlite

import (
	"encoding/json"
	"time"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// stateCols are the trigger_state columns in the order scanState reads them.
const stateCols = `space, trigger, cursor, start, skipped, fired, owner, epoch, lease_expires, updated_at`

// deliveryCols are the deliveries columns in the order scanDelivery reads
// them (and deliveryArgs writes them).
const deliveryCols = `space, id, trigger, seq, entity_type, entity_id, status, attempts, depth,
last_error, next_attempt_at, created_at, updated_at`

// openWhere selects the open deliveries; it is the deliveries_open
// partial index's WHERE, so SQLite can use the index. Comparisons, not
// an IN list: see migration 0020.
const openWhere = `(status = 'pending' OR status = 'running' OR status = 'retrying')`

// stoppedWhere selects the stopped deliveries (store.DeliveryStatus.
// Stopped); it is the deliveries_stopped partial indexes' WHERE, so
// SQLite can use them.
const stoppedWhere = `status <> 'pending' AND status <> 'running' AND status <> 'retrying' AND status <> 'succeeded'`

// The delivery and stance error statements name their index: without
// ANALYZE statistics SQLite would rather walk a space's primary key
// (TestTriggerPlans).

// Trigger state statements.
const (
	sqlStateInsert = `INSERT INTO trigger_state (` + stateCols + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`

	sqlStateGet = `SELECT ` + stateCols + ` FROM trigger_state WHERE space = ? AND trigger = ?`

	sqlStateList = `SELECT ` + stateCols + ` FROM trigger_state WHERE space = ? ORDER BY trigger`

	sqlStateListAll = `SELECT ` + stateCols + ` FROM trigger_state ORDER BY space, trigger`

	sqlStateDelete = `DELETE FROM trigger_state WHERE space = ? AND trigger = ?`

	sqlDeliveriesDelete = `DELETE FROM deliveries INDEXED BY deliveries_trigger WHERE space = ? AND trigger = ?`

	sqlErrorsDelete = `DELETE FROM stance_errors WHERE space = ? AND trigger = ?`

	sqlPruneDeliveries = `DELETE FROM deliveries INDEXED BY deliveries_seq WHERE space = ? AND seq <= ?`

	sqlPruneErrors = `DELETE FROM stance_errors INDEXED BY stance_errors_seq WHERE space = ? AND seq <= ?`

	// sqlStateMove sets the cursor, the start unless ?4 < 0, and appends
	// the JSON range ?5 to skipped unless it is NULL.
	sqlStateMove = `UPDATE trigger_state SET cursor = ?3,
start = CASE WHEN ?4 >= 0 THEN ?4 ELSE start END,
skipped = CASE WHEN ?5 IS NULL THEN skipped ELSE json_insert(skipped, '$[#]', json(?5)) END,
updated_at = ?6
WHERE space = ?1 AND trigger = ?2 RETURNING ` + stateCols

	sqlDiscardOpen = `UPDATE deliveries INDEXED BY deliveries_open
SET status = 'discarded', updated_at = ?3
WHERE space = ?1 AND trigger = ?2 AND ` + openWhere

	// sqlAdvance moves a cursor, fenced by the cursor and the epoch.
	sqlAdvance = `UPDATE trigger_state SET cursor = ?5, updated_at = ?6
WHERE space = ?1 AND trigger = ?2 AND cursor = ?3 AND epoch = ?4`

	sqlFired = `UPDATE trigger_state SET fired = ?4, updated_at = ?5
WHERE space = ?1 AND trigger = ?2 AND epoch = ?3`

	// sqlLeaseAcquire grants the lease to ?3 when nobody holds it, ?3
	// does, or the holder's lease expired before ?4; the epoch grows when
	// the holder changes (SET reads the old owner).
	sqlLeaseAcquire = `UPDATE trigger_state SET epoch = epoch + (owner <> ?3), owner = ?3,
lease_expires = ?5, updated_at = ?6
WHERE space = ?1 AND trigger = ?2 AND (owner = '' OR owner = ?3 OR lease_expires < ?4)
RETURNING ` + stateCols

	sqlLeaseRelease = `UPDATE trigger_state SET lease_expires = ?5, updated_at = ?6
WHERE space = ?1 AND trigger = ?2 AND owner = ?3 AND epoch = ?4`
)

// Delivery and stance error statements.
const (
	sqlDeliveryInsert = `INSERT INTO deliveries (` + deliveryCols + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

	sqlErrorUpsert = `INSERT INTO stance_errors (space, trigger, seq, error) VALUES (?, ?, ?, ?)
ON CONFLICT (space, trigger, seq) DO UPDATE SET error = excluded.error`

	sqlDeliveryGet = `SELECT ` + deliveryCols + ` FROM deliveries WHERE space = ? AND id = ?`

	sqlDeliveriesAt = `SELECT ` + deliveryCols + ` FROM deliveries INDEXED BY deliveries_seq
WHERE space = ? AND seq = ? ORDER BY trigger, created_at, id`

	// sqlDeliveryComplete applies an update fenced by status (?3, a
	// JSON list; [] for any) and, when ?4 > 0, by the trigger's epoch.
	// The status is found in the list as its quoted JSON string: status
	// IN (SELECT value FROM json_each(?3)) would build the list into an
	// ephemeral b-tree (a table and pager of its own) on every run, about
	// half of a completion's CPU; statuses are plain words, so the quoted
	// form matches exactly one element.
	sqlDeliveryComplete = `UPDATE deliveries SET status = ?5, attempts = ?6, last_error = ?7,
next_attempt_at = ?8, updated_at = ?9
WHERE space = ?1 AND id = ?2
  AND (?3 = '[]' OR instr(?3, '"' || status || '"') > 0)
  AND (?4 = 0 OR ?4 = (SELECT t.epoch FROM trigger_state AS t
                       WHERE t.space = deliveries.space AND t.trigger = deliveries.trigger))`

	// sqlDeliveryUpdate is sqlDeliveryComplete returning the row it left.
	sqlDeliveryUpdate = sqlDeliveryComplete + `
RETURNING ` + deliveryCols

	sqlDeliveryExists = `SELECT count(*) FROM deliveries WHERE space = ? AND id = ?`

	// sqlOpenStats counts a trigger's open deliveries by status through
	// deliveries_open and sqlStoppedStats its stopped ones through
	// deliveries_stopped's entries. sqlDeliveryStats adds the count of
	// all its deliveries (the row of status ''; deliveries_trigger's
	// entries), which leaves the succeeded ones; sqlDeliveryBacklog the
	// parked ones alone.
	sqlOpenStats = `SELECT status, count(*), min(created_at) FROM deliveries INDEXED BY deliveries_open
WHERE space = ?1 AND trigger = ?2 AND ` + openWhere + ` GROUP BY status`

	sqlStoppedStats = `
UNION ALL SELECT status, count(*), 0 FROM deliveries INDEXED BY deliveries_stopped
WHERE space = ?1 AND trigger = ?2 AND ` + stoppedWhere

	sqlDeliveryStats = sqlOpenStats + sqlStoppedStats + ` GROUP BY status
UNION ALL SELECT '', count(*), 0 FROM deliveries INDEXED BY deliveries_trigger WHERE space = ?1 AND trigger = ?2`

	sqlDeliveryBacklog = sqlOpenStats + sqlStoppedStats + ` AND status = 'parked' GROUP BY status`

	sqlOpenThrough = `SELECT count(*) FROM deliveries INDEXED BY deliveries_open
WHERE space = ?1 AND trigger = ?2 AND ` + openWhere + ` AND seq <= ?3`

	sqlErrorsAt = `SELECT trigger, error FROM stance_errors INDEXED BY stance_errors_seq
WHERE space = ? AND seq = ? ORDER BY trigger`
)

func scanState(sc scanner) (store.TriggerState, error) {
	var (
		s                   store.TriggerState
		skipped             string
		fired, expires, upd int64
	)
	err := sc.Scan(&s.Space, &s.Trigger, &s.Cursor, &s.Start, &skipped, &fired, &s.Owner, &s.Epoch, &expires, &upd)
	if err != nil {
		return s, err
	}
	s.Fired, s.LeaseExpires, s.UpdatedAt = fromMicros(fired), fromMicros(expires), fromMicros(upd)
	s.Skipped = []store.SeqRange{}
	if err := json.Unmarshal([]byte(skipped), &s.Skipped); err != nil {
		return s, err
	}
	if s.Skipped == nil {
		s.Skipped = []store.SeqRange{}
	}
	return s, nil
}

// stateArgs are the insert arguments of a trigger_state row.
func stateArgs(s *store.TriggerState) ([]any, error) {
	skipped := s.Skipped
	if skipped == nil {
		skipped = []store.SeqRange{}
	}
	sk, err := rowcodec.Marshal(skipped)
	if err != nil {
		return nil, err
	}
	return []any{s.Space, s.Trigger, s.Cursor, s.Start, sk, micros(s.Fired), s.Owner, s.Epoch,
		micros(s.LeaseExpires), micros(s.UpdatedAt)}, nil
}

func scanDelivery(sc scanner) (store.Delivery, error) {
	var (
		d                  store.Delivery
		next, created, upd int64
	)
	err := sc.Scan(&d.Space, &d.ID, &d.Trigger, &d.Seq, &d.Entity.Type, &d.Entity.ID, &d.Status,
		&d.Attempts, &d.Depth, &d.LastError, &next, &created, &upd)
	d.NextAttemptAt, d.CreatedAt, d.UpdatedAt = fromMicros(next), fromMicros(created), fromMicros(upd)
	return d, err
}

// deliveryArgs are the insert arguments of a delivery of trigger in
// space. An empty status is pending; a zero CreatedAt is stamp and a zero
// UpdatedAt is CreatedAt.
func deliveryArgs(space, trigger string, d *store.Delivery, stamp time.Time) []any {
	status, created, upd := d.Status, d.CreatedAt, d.UpdatedAt
	if status == "" {
		status = store.DeliveryPending
	}
	if created.IsZero() {
		created = stamp
	}
	if upd.IsZero() {
		upd = created
	}
	return []any{space, d.ID, trigger, d.Seq, d.Entity.Type, d.Entity.ID, status, d.Attempts, d.Depth,
		d.LastError, micros(d.NextAttemptAt), micros(created), micros(upd)}
}

// skipArg is a skipped range as a JSON argument, or nil (SQL NULL).
func skipArg(skip *store.SeqRange) (*string, error) {
	if skip == nil {
		return nil, nil
	}
	s, err := rowcodec.Marshal(skip)
	return &s, err
}
