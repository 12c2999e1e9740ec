package postgres

import (
	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

// An optimistic write sends everything in one round trip: the claim of
// the space, one eddy_expect check per other prediction and the writes,
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
// the new head (claimSpaceNotifyQ).
const (
	claimSpaceQ = `WITH claimed AS (UPDATE spaces SET head = $4
		WHERE id = $1 AND head = $2 AND schema_version = $3 RETURNING 1)
		SELECT eddy_expect(EXISTS (SELECT 1 FROM claimed))`
	claimSpaceNotifyQ = claimSpaceQ + ", " + notifyHeadPrefix + "$4::bigint)"
	expectEntityQ     = `SELECT eddy_expect(EXISTS (SELECT 1 FROM entities
		WHERE space = $1 AND type = $2 AND id = $3 AND version = $4 AND kind = $5))`
	expectNoEntityQ = `SELECT eddy_expect(NOT EXISTS (SELECT 1 FROM entities
		WHERE space = $1 AND type = $2 AND id = $3))`
	expectNoReceiptQ = `SELECT eddy_expect(NOT EXISTS (SELECT 1 FROM receipts
		WHERE space = $1 AND mutation_id = $2 AND created_at >= $3))`

	// A group's predictions of several entities (or receipts) are checked
	// by one statement, not one per key: each statement costs the server
	// a bind, an execution and its messages, and a group of 16 new
	// entities sent 16. Each key is still probed on its own, every
	// primary key column bound by equality: the probe is a LATERAL
	// subquery with a LIMIT, which the planner cannot flatten into a join
	// (a hash of the whole space), so the plan is a nested loop over the
	// keys whose inner probe is planned as the single-key statement's.
	// An entity predicted absent has a NULL version and kind, so it passes
	// only if its row is missing; one predicted present passes only if
	// its row has that version and kind.
	expectEntitiesQ = `SELECT eddy_expect(NOT EXISTS (SELECT 1
		FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[]) AS u(type, id, version, kind)
		LEFT JOIN LATERAL (SELECT e.version, e.kind FROM entities AS e
			WHERE e.space = $1 AND e.type = u.type AND e.id = u.id LIMIT 1) AS e ON true
		WHERE e.version IS DISTINCT FROM u.version OR e.kind IS DISTINCT FROM u.kind))`
	expectNoReceiptsQ = `SELECT eddy_expect(NOT EXISTS (SELECT 1
		FROM unnest($2::text[]) AS u(mutation_id)
		CROSS JOIN LATERAL (SELECT 1 FROM receipts AS r
			WHERE r.space = $1 AND r.mutation_id = u.mutation_id AND r.created_at >= $3 LIMIT 1) AS r))`
)

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

// queueExpect queues the claim of the space (moving its head to last and,
// past the predicted head and if notify is set, notifying it) and the
// checks of an optimistic transaction's prediction.
func queueExpect(b *pgx.Batch, p *store.WriteBeginParams, last int64, notify bool) {
	claim := claimSpaceQ
	if last > p.Expect.Head && notify {
		claim = claimSpaceNotifyQ
	}
	b.Queue(claim, p.Space, p.Expect.Head, p.Expect.SchemaVersion, last)
	queueExpectEntities(b, p)
	switch len(p.MutationIDs) {
	case 0:
	case 1:
		b.Queue(expectNoReceiptQ, p.Space, p.MutationIDs[0], p.ReceiptsSince)
	default:
		b.Queue(expectNoReceiptsQ, p.Space, textArray(p.MutationIDs), p.ReceiptsSince)
	}
}

// queueExpectEntities queues the check of the predicted entities: one
// single-key statement for one entity, one array statement for several.
func queueExpectEntities(b *pgx.Batch, p *store.WriteBeginParams) {
	switch len(p.Entities) {
	case 0:
		return
	case 1:
		k := p.Entities[0]
		if r, ok := p.Expect.Records[k]; ok {
			b.Queue(expectEntityQ, p.Space, k.Type, k.ID, r.Version, r.Kind)
		} else {
			b.Queue(expectNoEntityQ, p.Space, k.Type, k.ID)
		}
		return
	}
	types, ids := keyArrays(p.Entities)
	versions, kinds := make(nullInt8Array, len(p.Entities)), make(nullTextArray, len(p.Entities))
	for i, k := range p.Entities {
		if r, ok := p.Expect.Records[k]; ok {
			versions[i], kinds[i] = &r.Version, &r.Kind
		}
	}
	b.Queue(expectEntitiesQ, p.Space, types, ids, versions, kinds)
}
