package postgres

import (
	"sync"
	"unsafe"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

var _ store.Recycler = (*Store)(nil)

// maxLentPages bounds the pages read with Recycle that are remembered
// until handed back: a page read ahead and never taken, or never handed
// back, is forgotten (left to the garbage collector) when this many
// newer ones are out. Until then its memory stays reachable from here: a
// puller that stops mid-catch-up leaves its two pages read ahead (about
// a megabyte each at 1,000 commits), and at most maxLentPages such pages
// are kept.
const maxLentPages = 16

// lentPages remembers the memory of the pages read with Recycle, by the
// start of their slice, until it is handed back.
type lentPages struct {
	mu    sync.Mutex
	pages map[unsafe.Pointer]*rowcodec.Memory
	order []unsafe.Pointer // oldest first
}

// lend remembers the memory m of the page that starts at start (nil for
// an empty page: nothing to remember), forgetting the oldest page past
// maxLentPages.
func (l *lentPages) lend(start unsafe.Pointer, m *rowcodec.Memory) {
	if start == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pages == nil {
		l.pages = make(map[unsafe.Pointer]*rowcodec.Memory, maxLentPages)
	}
	if len(l.order) == maxLentPages {
		delete(l.pages, l.order[0])
		l.order = append(l.order[:0], l.order[1:]...)
	}
	l.pages[start] = m
	l.order = append(l.order, start)
}

// take returns and forgets the memory of the page that starts at start,
// or nil.
func (l *lentPages) take(start unsafe.Pointer) *rowcodec.Memory {
	if start == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.pages[start]
	if m == nil {
		return nil
	}
	delete(l.pages, start)
	for i, k := range l.order {
		if k == start {
			l.order = append(l.order[:i], l.order[i+1:]...)
			break
		}
	}
	return m
}

// start returns where s's elements start: the same for a page and any
// slice of it that starts where it does (a prefix, or the page filtered
// in place), nil for a slice with no room.
func start[T any](s []T) unsafe.Pointer {
	if cap(s) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(s))
}

// RecycleRaw hands back the memory of a page RawCommits read with
// Recycle, for the next pages (store.Recycler).
func (s *Store) RecycleRaw(commits []store.RawCommit) { s.recycle(start(commits)) }

// RecycleRows hands back the memory of a page Rows read with Recycle,
// for the next pages (store.Recycler).
func (s *Store) RecycleRows(rows []store.Row) { s.recycle(start(rows)) }

func (s *Store) recycle(at unsafe.Pointer) {
	if m := s.lent.take(at); m != nil {
		m.Release()
	}
}
