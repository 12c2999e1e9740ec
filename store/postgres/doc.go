// Package postgres is eddy's PostgreSQL driver: store.Store over a pgx/v5
// connection pool, with embedded numbered migrations.
//
// The write path is pipelined. WriteBegin sends BEGIN, the space lock
// (SELECT ... FOR UPDATE) and the loads of the named entities and receipts
// as one batch, one round trip; Append only buffers; Commit sends every
// buffered insert and upsert, the head update, the NOTIFY and COMMIT as a
// second batch. A commit therefore costs two round trips however many
// commits a group carries.
//
// A commit is one commits row: its wire row, receipt, provenance and its
// changes as one JSON array, indexed by (space, seq), by its primary
// entity and, for the merge and split commits that change a second
// entity, by that one in a partial index; a commit whose changes touch a
// third entity is refused. Entity rows that WriteBegin read under the
// space lock are written with a plain INSERT or UPDATE; only rows it did
// not read are upserted.
//
// JSON is kept as exact text (not jsonb) so bytes round-trip unchanged, ids
// and types are COLLATE "C" so they order bytewise, and timestamps are
// timestamptz returned in UTC at microsecond precision.
package postgres
