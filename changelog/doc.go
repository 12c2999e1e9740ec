// Package changelog is eddy's log: mutations, type definitions, applying a
// mutation to a record (a pure function), and the Log service that appends
// commits gaplessly per space (with group commit), and reads them back as
// raw pulls, forward pages and backward history, with retention.
//
// Every applied mutation appends exactly one commit in the same database
// transaction as its entity change. A seq is consumed only by an appended
// commit: no-ops, replays, rejections and rolled-back transactions consume
// nothing, so each space's sequence has no gaps, and because the space
// write lock is the first statement of every write transaction, seq order
// is commit-visibility order.
package changelog
