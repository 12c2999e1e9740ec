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
	owned, err := s.log.ClientsOf(ctx, space, owner)
	if err != nil {
		return nil, fmt.Errorf("acks: %w", err)
	}
	for id := range pushed {
		if _, ok := owned[id]; !ok {
			delete(pushed, id)
		}
	}
	if len(pushed) == 0 {
		return nil, nil
	}
	return pushed, nil
}

// bootstrapAcks returns the acknowledgements the complete page of a
// bootstrap at watermark w carries for its reader: each client of the
// reader whose last commit is at or before w has every ordinal through
// its last one in the snapshot. (A client that pushed after w is acked by
// the delta pages that follow.)
func (s *Service) bootstrapAcks(ctx context.Context, space string, r Reader, w int64) (map[string]int64, error) {
	owner := readerID(r)
	if owner == "" {
		return nil, nil
	}
	owned, err := s.log.ClientsOf(ctx, space, owner)
	if err != nil {
		return nil, fmt.Errorf("acks: %w", err)
	}
	var out map[string]int64
	for id, c := range owned {
		if c.LastSeq <= w && c.LastOrdinal > 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[id] = c.LastOrdinal
		}
	}
	return out, nil
}
