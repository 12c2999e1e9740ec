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
// A WriteTx holds the write connection until Commit or Rollback, and
// callers must always end one: the context given to WriteBegin bounds the
// wait for the lock, and once it is done the transaction's next statement
// fails, but only Commit or Rollback releases the lock. The store holds
// that connection for its life and runs BEGIN IMMEDIATE, COMMIT and every
// write statement as statements prepared on it once (writer.go).
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
