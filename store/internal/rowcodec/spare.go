package rowcodec

import (
	"sync"
	"unsafe"

	"github.com/eddy-run/eddy/store"
)

// Spare memory for arenas. A page of 1,000 whole commits takes about
// 860 bytes of new memory a row: the copies of its text and JSON (the
// blocks) and the commits themselves. A forwarding reader (GET .../log)
// encodes the page and drops it, so a catch-up allocates the size of the
// log, and the garbage collector ran every few pages, slowing the pull
// (with GOGC=800 the same pull ran 15-70% faster). A page whose reader is
// done with it hands its memory back (Memory.Release), and the next
// arenas take their blocks and commit slices from here instead of
// allocating them.
//
// The spares are bounded (maxSpareBytes): what does not fit is left to
// the garbage collector, as is the memory of every page never released.

// maxSpareBytes bounds the memory kept for reuse: a few pages' worth.
const maxSpareBytes = 8 << 20

// rawCommitBytes is the size of one commit of a spare slice.
const rawCommitBytes = int(unsafe.Sizeof(store.RawCommit{}))

// rowBytes is the size of one row of a spare slice.
const rowBytes = int(unsafe.Sizeof(store.Row{}))

var spares struct {
	mu      sync.Mutex
	blocks  [][]byte
	commits [][]store.RawCommit
	rows    [][]store.Row
	bytes   int
}

// spareBlock returns an empty spare block with room for at least lo
// bytes and at most hi, or nil.
func spareBlock(lo, hi int) []byte {
	spares.mu.Lock()
	defer spares.mu.Unlock()
	for i, b := range spares.blocks {
		if c := cap(b); c >= lo && c <= hi {
			spares.blocks = deleteAt(spares.blocks, i)
			spares.bytes -= c
			return b
		}
	}
	return nil
}

// spareCommits returns an empty spare commit slice with room for need
// commits and at most twice that, or nil.
func spareCommits(need int) []store.RawCommit {
	return spareSlice(&spares.commits, need, rawCommitBytes)
}

// spareRows returns an empty spare row slice with room for need rows and
// at most twice that, or nil.
func spareRows(need int) []store.Row {
	return spareSlice(&spares.rows, need, rowBytes)
}

// spareSlice takes from list an empty slice with room for need elements
// of size bytes each and at most twice that, or returns nil.
func spareSlice[T any](list *[][]T, need, size int) []T {
	spares.mu.Lock()
	defer spares.mu.Unlock()
	for i, c := range *list {
		if n := cap(c); n >= need && n <= 2*need {
			*list = deleteAt(*list, i)
			spares.bytes -= n * size
			return c
		}
	}
	return nil
}

// keepSlice adds s, emptied, to list unless the spares are full.
// spares.mu must be held.
func keepSlice[T any](list *[][]T, s []T, size int) {
	if s != nil && spares.bytes+cap(s)*size <= maxSpareBytes {
		*list = append(*list, s[:0])
		spares.bytes += cap(s) * size
	}
}

// deleteAt removes s[i], moving the last element there.
func deleteAt[T any](s []T, i int) []T {
	last := len(s) - 1
	s[i] = s[last]
	var zero T
	s[last] = zero
	return s[:last]
}

// Memory is the memory behind one page of commits or rows
// (Arena.CommitsPage, Arena.RowsPage).
type Memory struct {
	blocks  [][]byte
	commits []store.RawCommit
	rows    []store.Row
}

// Release hands the page's memory back for the next arenas. Call it
// only when nothing refers to the page's commits, nor to any string or
// JSON of theirs, any more: the next page overwrites them. Release is
// safe for concurrent use with other pages; a Memory is released once.
func (m *Memory) Release() {
	// Drop the pointers into old pages.
	clear(m.commits[:cap(m.commits)])
	clear(m.rows[:cap(m.rows)])
	spares.mu.Lock()
	defer spares.mu.Unlock()
	for _, b := range m.blocks {
		if spares.bytes+cap(b) > maxSpareBytes {
			break
		}
		spares.blocks = append(spares.blocks, b[:0])
		spares.bytes += cap(b)
	}
	keepSlice(&spares.commits, m.commits, rawCommitBytes)
	keepSlice(&spares.rows, m.rows, rowBytes)
	m.blocks, m.commits, m.rows = nil, nil, nil
}
