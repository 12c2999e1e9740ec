package postgres

import (
	"sync"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

var _ store.RawRecycler = (*Store)(nil)

// maxLentPages bounds the pages read with CommitsParams.Recycle that are
// remembered until handed back: a page read ahead and never taken, or
// never handed back, is forgotten (left to the garbage collector) when
// this many newer ones are out.
const maxLentPages = 16

// lentPages remembers the memory of the raw pages read with Recycle, by
// their first commit, until RecycleRaw hands it back.
type lentPages struct {
	mu    sync.Mutex
	pages map[*store.RawCommit]*rowcodec.Memory
	order []*store.RawCommit // oldest first
}

// lend remembers the memory of the page commits, forgetting the oldest
// page past maxLentPages.
func (l *lentPages) lend(commits []store.RawCommit, m *rowcodec.Memory) {
	if len(commits) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pages == nil {
		l.pages = make(map[*store.RawCommit]*rowcodec.Memory, maxLentPages)
	}
	if len(l.order) == maxLentPages {
		delete(l.pages, l.order[0])
		l.order = append(l.order[:0], l.order[1:]...)
	}
	l.pages[&commits[0]] = m
	l.order = append(l.order, &commits[0])
}

// take returns and forgets the memory of the page commits is a prefix
// of, or nil.
func (l *lentPages) take(commits []store.RawCommit) *rowcodec.Memory {
	if len(commits) == 0 {
		return nil
	}
	key := &commits[0]
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.pages[key]
	if m == nil {
		return nil
	}
	delete(l.pages, key)
	for i, k := range l.order {
		if k == key {
			l.order = append(l.order[:i], l.order[i+1:]...)
			break
		}
	}
	return m
}

// RecycleRaw hands back the memory of a page RawCommits read with
// Recycle, for the next pages (store.RawRecycler).
func (s *Store) RecycleRaw(commits []store.RawCommit) {
	if m := s.lent.take(commits); m != nil {
		m.Release()
	}
}
