// Package postgres is eddy's PostgreSQL driver: store.Store over a pgx/v5
// connection pool, with embedded numbered migrations.
//
// The write path is pipelined. WriteBegin sends BEGIN, the space lock
// (SELECT ... FOR UPDATE) and the loads of the named entities and receipts
// as one batch, one round trip; Append only buffers; Commit sends every
// buffered insert and upsert, the head update with its NOTIFY and COMMIT
// as a second batch. A commit therefore costs two round trips however many
// commits a group carries, or one when the writer predicts the reads
// (store.Expectation): then Commit sends the claim of the space, the
// checks of the prediction and the writes as one pipeline, which
// PostgreSQL runs as one implicit transaction with no BEGIN or COMMIT.
//
// A commit is one commits row: its wire row, receipt, provenance and its
// changes as one JSON array, indexed by (space, seq), by its primary
// entity and, for the merge and split commits that change a second
// entity, by that one in a partial index; a commit whose changes touch a
// third entity is refused. Entity rows that WriteBegin read under the
// space lock are written with a plain INSERT or UPDATE; rows it did not
// read, and several rows it found present, are upserted (the upsert's
// conflict check finds each row through the primary key whatever plan the
// statistics would choose for a join).
//
// JSON is kept as exact text (not jsonb) so bytes round-trip unchanged, ids
// and types are COLLATE "C" so they order bytewise, and timestamps are
// timestamptz returned in UTC at microsecond precision.
package postgres
