package sqlite

import (
	"sync"

	"github.com/eddy-run/eddy/store"
)

// A write transaction starts by reading its space's row, whose head
// looks up the space's last commit: a tenth of a one-put commit's CPU.
// The write connection's last commit to a space already knows that row:
// the row as read, with the head its commits moved. It stays the row as
// long as nothing else wrote, which the next transaction can tell at
// the cost of one PRAGMA:
//
//   - another connection (another process on the same file) committed:
//     PRAGMA data_version, read on the write connection, has changed;
//   - this connection ran any other write transaction that may write a
//     space's row or commits (pruning, a type definition, an epoch
//     rotation: Store.finish) since: it dropped every memo. A delivery's
//     completion (Store.lazyWriteTx) writes neither and keeps them: with
//     a trigger, one completes between most commits.
//
// Nothing else writes the spaces row or a space's commits (creating a
// space, outside a transaction, adds a row no memo can be of), so a memo
// that passes both is the row the read would return.
//
// Transactions on the write connection follow each other, but a
// committed one records its memo after its COMMIT has released the
// connection, when the next may already have begun. So each begin takes
// a new generation, and a memo is recorded only by the transaction of
// the latest one: an older commit's late memo would hold an old head.

// spaceMemos are the space rows the write connection's commits left.
type spaceMemos struct {
	mu sync.Mutex
	// gen counts the write connection's transactions begun.
	gen uint64
	// version is the data_version the memos were taken at.
	version int64
	m       map[string]spaceMemo
}

// spaceMemo is one space's row and number as a commit left them.
type spaceMemo struct {
	space store.Space
	num   int64
}

// maxSpaceMemos bounds the spaces remembered; past it, all are dropped.
const maxSpaceMemos = 64

// begin starts a write transaction on space at data_version version: it
// returns the space's memo, if one holds, and the transaction's
// generation. The memo is taken: a transaction that does not commit
// leaves none.
func (ms *spaceMemos) begin(space string, version int64) (spaceMemo, bool, uint64) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.gen++
	if version != ms.version {
		ms.m, ms.version = nil, version
	}
	sm, ok := ms.m[space]
	delete(ms.m, space)
	return sm, ok, ms.gen
}

// committed records the row a commit of the transaction of generation
// gen left, unless another transaction has begun since.
func (ms *spaceMemos) committed(gen uint64, sm spaceMemo) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if gen != ms.gen {
		return
	}
	if ms.m == nil || len(ms.m) >= maxSpaceMemos {
		ms.m = make(map[string]spaceMemo)
	}
	ms.m[sm.space.ID] = sm
}

// drop forgets every memo and voids the records of transactions under
// way: another write transaction is running on the write connection.
func (ms *spaceMemos) drop() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.gen++
	ms.m = nil
}
