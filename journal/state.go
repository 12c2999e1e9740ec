package journal

import (
	"context"
	"errors"
	"fmt"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Entity states of a state check.
const (
	// StatePresent: the entity exists and the client may read it.
	StatePresent = "present"
	// StateGone: there is no such entity (never was, or deleted).
	StateGone = "gone"
	// StateHidden: the entity exists and the client may not read it; its
	// content is never sent.
	StateHidden = "hidden"
)

// StateResult is the state of one entity a client asked about.
type StateResult struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	State string `json:"state"`
	// Version is the entity's version when present, or its deleting seq
	// when gone by a deletion.
	Version int64 `json:"version,omitempty"`
}

// State answers, in request order, the state of each entity named: how a
// client that rebuilds after cursor_expired reconciles what it holds and
// the fetch did not name, and the only way a warned record is recovered.
// At most MaxStateIDs ids, each a valid type and id; otherwise bad_request
// and nothing is read.
func (s *Service) State(ctx context.Context, space string, c Client, ids []store.EntityKey) ([]StateResult, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := checkIDs(ids); err != nil {
		return nil, err
	}
	if _, err := s.log.Space(ctx, space); err != nil {
		return nil, err
	}
	out := make([]StateResult, len(ids))
	for i, k := range ids {
		res, err := s.stateOf(ctx, space, c.Reader, k)
		if err != nil {
			return nil, err
		}
		out[i] = res
	}
	return out, nil
}

func checkIDs(ids []store.EntityKey) error {
	if len(ids) > MaxStateIDs {
		return problem.Param("ids", "at most %d ids per state check, got %d", MaxStateIDs, len(ids))
	}
	for i, k := range ids {
		switch {
		case !changelog.ValidTypeName(k.Type):
			return problem.Param("ids", "ids[%d].type: %q is not a valid type name", i, k.Type).With("index", i)
		case !changelog.ValidID(k.ID):
			return problem.Param("ids", "ids[%d].id: %q is not a valid entity id", i, k.ID).With("index", i)
		}
	}
	return nil
}

func (s *Service) stateOf(ctx context.Context, space string, r Reader, k store.EntityKey) (StateResult, error) {
	res := StateResult{Type: k.Type, ID: k.ID, State: StateGone}
	rec, err := s.st.EntityGet(ctx, space, k)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return res, nil
	case err != nil:
		return StateResult{}, fmt.Errorf("state check: %w", err)
	case rec.Kind == store.KindDeleted:
		res.Version = rec.Version
	case r.CanReadRecord(&rec):
		res.State, res.Version = StatePresent, rec.Version
	default:
		res.State = StateHidden
	}
	return res, nil
}
