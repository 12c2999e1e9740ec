package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

// An optimistic write sends everything in one round trip: the claim of
// the space, which also checks the other predictions, and the writes,
// with no BEGIN or COMMIT: a batch is one pipeline ending in a single
// Sync, which PostgreSQL runs as one implicit transaction, committed at
// the Sync. A failed check raises EDY01, PostgreSQL skips the rest of the
// batch and rolls it back, and Commit reports store.ErrStale.
//
// The claim is the transaction's first statement and takes the space
// write lock: it moves the head from the predicted value to the new one
// only if the head and schema version are as predicted (an UPDATE waits
// for a concurrent writer's lock and then re-checks its condition), so
// one statement locks, verifies and advances the space. When the
// transaction appends commits, the same statement queues the NOTIFY of
// the new head.
//
// The same statement checks the predicted entities, in the snapshot it
// took when it started: a check statement of its own cost the server a
// bind, an execution and its messages, and the client one more
// statement to build, on every commit. One snapshot is enough because
// every transaction that changes a space's entities appends commits and
// so moves its head: one that committed before the snapshot is visible
// to the check, and one that committed after it moved the head the
// claim re-checks once it holds the lock, so the claim fails. Receipts
// are checked by a statement of their own, after the claim, in a
// snapshot taken once the claim holds the lock: a group whose mutations
// were all rejected stores their receipts without moving the head.
//
// Several entities (or receipts) are checked by one condition (or
// statement), not one per key, each key still probed on its own, every
// primary key column bound by equality: the probe is a LATERAL subquery
// with a LIMIT, which the planner cannot flatten into a join (a hash of
// the whole space), so the plan is a nested loop over the keys whose
// inner probe is planned as the single key's. An entity predicted
// absent has a NULL version and kind, so it passes only if its row is
// missing; one predicted present passes only if its row has that
// version and kind.
const (
	claimSpaceQ = `WITH claimed AS (UPDATE spaces SET head = $4
		WHERE id = $1 AND head = $2 AND schema_version = $3 RETURNING 1)
		SELECT eddy_expect(EXISTS (SELECT 1 FROM claimed)`
	// The checks' conditions, their parameters numbered from $%[1]d.
	entityPresentCond = ` AND EXISTS (SELECT 1 FROM entities
		WHERE space = $1 AND type = $%[1]d AND id = $%[2]d AND version = $%[3]d AND kind = $%[4]d)`
	entityAbsentCond = ` AND NOT EXISTS (SELECT 1 FROM entities
		WHERE space = $1 AND type = $%[1]d AND id = $%[2]d)`
	entitiesCond = ` AND NOT EXISTS (SELECT 1
		FROM unnest($%[1]d::text[], $%[2]d::text[], $%[3]d::bigint[], $%[4]d::text[]) AS u(type, id, version, kind)
		LEFT JOIN LATERAL (SELECT e.version, e.kind FROM entities AS e
			WHERE e.space = $1 AND e.type = u.type AND e.id = u.id LIMIT 1) AS e ON true
		WHERE e.version IS DISTINCT FROM u.version OR e.kind IS DISTINCT FROM u.kind)`
	expectNoReceiptQ = `SELECT eddy_expect(NOT EXISTS (SELECT 1 FROM receipts
		WHERE space = $1 AND mutation_id = $2 AND created_at >= $3))`
	expectNoReceiptsQ = `SELECT eddy_expect(NOT EXISTS (SELECT 1
		FROM unnest($2::text[]) AS u(mutation_id)
		CROSS JOIN LATERAL (SELECT 1 FROM receipts AS r
			WHERE r.space = $1 AND r.mutation_id = u.mutation_id AND r.created_at >= $3 LIMIT 1) AS r))`
	claimNotify = ", " + notifyHeadPrefix + "$4::bigint)"
)

// How a claim checks the predicted entities: the forms of its condition.
const (
	checkNone = iota
	checkPresent
	checkAbsent
	checkMany
	checkForms
)

// claimQueries are the claim statements by notify (0 or 1) and entity
// check form, written once.
var claimQueries = func() (q [2][checkForms]string) {
	conds := [checkForms]string{"", entityPresentCond, entityAbsentCond, entitiesCond}
	for n, tail := range []string{")", ")" + claimNotify} {
		for e, cond := range conds {
			q[n][e] = claimSpaceQ + numbered(cond, 5) + tail
		}
	}
	return q
}()

// numbered returns cond with its parameters numbered from first.
func numbered(cond string, first int) string {
	if cond == "" {
		return ""
	}
	return fmt.Sprintf(cond, first, first+1, first+2, first+3)
}

// predict answers the transaction's reads from p.Expect; nothing is sent
// until Commit.
func (tx *writeTx) predict(p store.WriteBeginParams) {
	tx.expect = &p
	tx.space = store.Space{ID: p.Space, Head: p.Expect.Head, SchemaVersion: p.Expect.SchemaVersion}
	for _, k := range p.Entities {
		if r, ok := p.Expect.Records[k]; ok {
			tx.entities[k] = r
		}
	}
	tx.learn(p.Entities)
}

// queueExpect queues the claim of the space (moving its head to last
// and, past the predicted head and if notify is set, notifying it) with
// the check of the predicted entities, then the check of the receipts
// predicted absent.
func queueExpect(b *pgx.Batch, p *store.WriteBeginParams, last int64, notify bool) {
	n := 0
	if last > p.Expect.Head && notify {
		n = 1
	}
	args := append(make([]any, 0, 8), p.Space, p.Expect.Head, p.Expect.SchemaVersion, last)
	e, args := expectEntities(p, args)
	b.Queue(claimQueries[n][e], args...)
	switch len(p.MutationIDs) {
	case 0:
	case 1:
		b.Queue(expectNoReceiptQ, p.Space, p.MutationIDs[0], p.ReceiptsSince)
	default:
		b.Queue(expectNoReceiptsQ, p.Space, textArray(p.MutationIDs), p.ReceiptsSince)
	}
}

// expectEntities returns the form of the check of the predicted entities
// and args with its parameters added: a single key's condition for one
// entity, the arrays' for several.
func expectEntities(p *store.WriteBeginParams, args []any) (int, []any) {
	switch len(p.Entities) {
	case 0:
		return checkNone, args
	case 1:
		k := p.Entities[0]
		if r, ok := p.Expect.Records[k]; ok {
			return checkPresent, append(args, k.Type, k.ID, r.Version, r.Kind)
		}
		return checkAbsent, append(args, k.Type, k.ID)
	}
	types, ids := keyArrays(p.Entities)
	versions, kinds := make(nullInt8Array, len(p.Entities)), make(nullTextArray, len(p.Entities))
	for i, k := range p.Entities {
		if r, ok := p.Expect.Records[k]; ok {
			versions[i], kinds[i] = &r.Version, &r.Kind
		}
	}
	return checkMany, append(args, types, ids, versions, kinds)
}
