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
// JSON is kept as exact text (not jsonb) so bytes round-trip unchanged, ids
// and types are COLLATE "C" so they order bytewise, and timestamps are
// timestamptz returned in UTC at microsecond precision.
package postgres
