package rowcodec

import (
	"slices"
	"sync"
	"unsafe"

	"github.com/eddy-run/eddy/store"
)

// Spare memory for arenas. A page of 1,000 whole commits takes about
// 860 bytes of new memory a row: the copies of its text and JSON (the
// blocks) and the commits themselves. A forwarding reader (GET .../log,
// a watcher catching up) encodes each page and drops it, so a catch-up
// allocated the size of the log, and the garbage collector ran every few
// pages (with GOGC=800 the same pull ran 15-70% faster). A page whose
// reader is done with it hands its memory back (Memory.Release), and the
// next arenas take their blocks and slices from here instead of
// allocating them.
//
// The spares are bounded (maxSpareBytes). A release that does not fit
// drops the oldest spares first, so what is kept follows the pages being
// read now (a watcher's row pages, then a pull's commit pages); memory
// never released is left to the garbage collector.

// maxSpareBytes bounds the memory kept for reuse: a few pages' worth.
const maxSpareBytes = 8 << 20

// The sizes of one element of a spare slice.
const (
	rawCommitBytes = int(unsafe.Sizeof(store.RawCommit{}))
	rowBytes       = int(unsafe.Sizeof(store.Row{}))
)

// spareList is one kind of spare memory, oldest first.
type spareList[T any] struct {
	items [][]T
	// size is the bytes of one element.
	size int
}

var spares = struct {
	mu      sync.Mutex
	blocks  spareList[byte]
	commits spareList[store.RawCommit]
	rows    spareList[store.Row]
	bytes   int
}{
	blocks:  spareList[byte]{size: 1},
	commits: spareList[store.RawCommit]{size: rawCommitBytes},
	rows:    spareList[store.Row]{size: rowBytes},
}

// spareBlock returns an empty spare block with room for at least lo
// bytes and at most hi, or nil.
func spareBlock(lo, hi int) []byte { return take(&spares.blocks, lo, hi) }

// spareCommits returns an empty spare commit slice with room for need
// commits and at most twice that, or nil.
func spareCommits(need int) []store.RawCommit { return take(&spares.commits, need, 2*need) }

// spareRows returns an empty spare row slice with room for need rows and
// at most twice that, or nil.
func spareRows(need int) []store.Row { return take(&spares.rows, need, 2*need) }

// take removes and returns the newest spare of l with room for at least
// lo elements and at most hi, or nil.
func take[T any](l *spareList[T], lo, hi int) []T {
	spares.mu.Lock()
	defer spares.mu.Unlock()
	for i := len(l.items) - 1; i >= 0; i-- {
		if s := l.items[i]; cap(s) >= lo && cap(s) <= hi {
			l.items = slices.Delete(l.items, i, i+1)
			spares.bytes -= cap(s) * l.size
			return s
		}
	}
	return nil
}

// keep adds s, emptied, to l, dropping the oldest spares (of l first)
// until it fits. spares.mu must be held.
func keep[T any](l *spareList[T], s []T) {
	need := cap(s) * l.size
	if need == 0 || need > maxSpareBytes {
		return
	}
	for spares.bytes+need > maxSpareBytes {
		if !dropOldest(l) && !dropOldest(&spares.blocks) && !dropOldest(&spares.commits) {
			dropOldest(&spares.rows)
		}
	}
	l.items = append(l.items, s[:0])
	spares.bytes += need
}

// dropOldest forgets l's oldest spare, reporting whether there was one.
// spares.mu must be held.
func dropOldest[T any](l *spareList[T]) bool {
	if len(l.items) == 0 {
		return false
	}
	spares.bytes -= cap(l.items[0]) * l.size
	l.items[0] = nil
	l.items = l.items[1:]
	return true
}

// Memory is the memory behind one page of commits or rows
// (Arena.CommitsPage, Arena.RowsPage).
type Memory struct {
	blocks  [][]byte
	commits []store.RawCommit
	rows    []store.Row
}

// Release hands the page's memory back for the next arenas. Call it
// only when nothing refers to the page's commits or rows, nor to any
// string or JSON of theirs, any more: the next page overwrites them.
// Release is safe for concurrent use with other pages; a Memory is
// released once.
func (m *Memory) Release() {
	// Drop the pointers into old pages.
	clear(m.commits[:cap(m.commits)])
	clear(m.rows[:cap(m.rows)])
	spares.mu.Lock()
	defer spares.mu.Unlock()
	for _, b := range m.blocks {
		keep(&spares.blocks, b)
	}
	keep(&spares.commits, m.commits)
	keep(&spares.rows, m.rows)
	m.blocks, m.commits, m.rows = nil, nil, nil
}
