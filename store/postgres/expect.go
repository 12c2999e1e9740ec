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
	for _, k := range p.Entities {
		if r, ok := p.Expect.Records[k]; ok {
			b.Queue(expectEntityQ, p.Space, k.Type, k.ID, r.Version, r.Kind)
		} else {
			b.Queue(expectNoEntityQ, p.Space, k.Type, k.ID)
		}
	}
	for _, id := range p.MutationIDs {
		b.Queue(expectNoReceiptQ, p.Space, id, p.ReceiptsSince)
	}
}
