// Package sqlite is eddy's embedded storage driver: store.Store over one
// SQLite database file through modernc.org/sqlite (pure Go, no cgo).
//
// The database runs in WAL mode with synchronous=FULL, so an acknowledged
// commit survives power loss while readers never block the writer. SQLite
// allows one writer per file; the driver therefore funnels every write
// (write transactions, pruning, type definitions, spaces and tokens)
// through a single connection that opens its transactions with
// BEGIN IMMEDIATE. That connection is the process-wide write lock: a
// second writer waits for it in process instead of meeting SQLITE_BUSY.
// Reads use a separate pool of read-only connections.
//
// A WriteTx holds the write connection until Commit or Rollback. Callers
// must always end one; if they forget, the transaction is rolled back and
// the lock released only when the context given to WriteBegin is done.
//
// A commit is one commits row: its wire row, receipt, provenance and its
// changes as one JSON array, indexed by (space, seq), by its primary
// entity and, for the merge and split commits that change a second
// entity, by that one in a partial index. A commit whose changes touch a
// third entity is refused.
//
// Timestamps are stored as int64 unix microseconds and every JSON document
// as exact text, so both round-trip byte for byte.
package sqlite
