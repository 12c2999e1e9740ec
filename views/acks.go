package views

import (
	"context"
	"fmt"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// pushedIn returns, per push client, the last ordinal the commits
// admitted (nil when none came from a push).
func pushedIn(commits []*store.Commit) map[string]int64 {
	var out map[string]int64
	for _, c := range commits {
		id, ord, ok := changelog.PushedBy(&c.Provenance)
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]int64{}
		}
		out[id] = max(out[id], ord)
	}
	return out
}

// acks returns the acknowledgements a page over commits carries for its
// reader (DESIGN.md section 8): for each push client the reader owns,
// the last ordinal that landed in the page's range. An anonymous reader
// gets none.
func (s *Service) acks(ctx context.Context, space string, r Reader, commits []*store.Commit) (map[string]int64, error) {
	owner := readerID(r)
	pushed := pushedIn(commits)
	if owner == "" || len(pushed) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(pushed))
	for id := range pushed {
		ids = append(ids, id)
	}
	owned, err := s.log.ClientsOwned(ctx, space, owner, ids)
	if err != nil {
		return nil, fmt.Errorf("acks: %w", err)
	}
	for id := range pushed {
		if !owned[id] {
			delete(pushed, id)
		}
	}
	if len(pushed) == 0 {
		return nil, nil
	}
	return pushed, nil
}
