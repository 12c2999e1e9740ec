package postgres

import (
	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

// An optimistic write sends everything in one round trip: BEGIN, the
// space lock, one eddy_expect check per prediction, the writes and
// COMMIT. A failed check raises EDY01, PostgreSQL skips the rest of the
// batch (COMMIT included) and Commit reports store.ErrStale.
const (
	expectSpaceQ = `SELECT eddy_expect(EXISTS (SELECT 1 FROM spaces
		WHERE id = $1 AND head = $2 AND schema_version = $3))`
	expectEntityQ = `SELECT eddy_expect(EXISTS (SELECT 1 FROM entities
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

// queueExpect queues BEGIN, the space lock and the checks of an
// optimistic transaction's prediction.
func queueExpect(b *pgx.Batch, p *store.WriteBeginParams) {
	b.Queue("BEGIN")
	b.Queue(lockQ, p.Space)
	b.Queue(expectSpaceQ, p.Space, p.Expect.Head, p.Expect.SchemaVersion)
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
