package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// errNoEngine answers the trigger operations of a server without an
// engine.
var errNoEngine = problem.New(problem.Unavailable, "the trigger engine is not running")

// needEngine returns errNoEngine when the server has no engine.
func (s *Server) needEngine() error {
	if s.engine == nil {
		return errNoEngine
	}
	return nil
}

// enableBody is the optional body of POST .../triggers/{name}/enable.
type enableBody struct {
	Skip bool `json:"skip"`
}

// replayBody is the body of POST .../triggers/{name}/replay.
type replayBody struct {
	From *int64 `json:"from"`
}

// emptyBody is the body of an operation that takes none: nothing or {}.
type emptyBody struct{}

// opBody is the decoded body of an operation, checked before the engine
// is called.
type opBody interface{ check() error }

func (emptyBody) check() error   { return nil }
func (*enableBody) check() error { return nil }

// triggerOp is one operation on a trigger that answers its status.
type triggerOp func(ctx context.Context, space, name string) (engine.Status, error)

// enableTrigger answers POST .../triggers/{name}/enable: rows committed
// while it was disabled are evaluated, unless the body says
// {"skip": true}.
func (s *Server) enableTrigger(w http.ResponseWriter, r *http.Request) error {
	var body enableBody
	return s.triggerOperation(w, r, &body, func(ctx context.Context, space, name string) (engine.Status, error) {
		return s.engine.Enable(ctx, space, name, body.Skip)
	})
}

// disableTrigger answers POST .../triggers/{name}/disable.
func (s *Server) disableTrigger(w http.ResponseWriter, r *http.Request) error {
	return s.triggerOperation(w, r, &emptyBody{}, func(ctx context.Context, space, name string) (engine.Status, error) {
		return s.engine.Disable(ctx, space, name)
	})
}

// resetTrigger answers POST .../triggers/{name}/reset: back to its start
// policy, open deliveries discarded.
func (s *Server) resetTrigger(w http.ResponseWriter, r *http.Request) error {
	return s.triggerOperation(w, r, &emptyBody{}, func(ctx context.Context, space, name string) (engine.Status, error) {
		return s.engine.Reset(ctx, space, name)
	})
}

// replayTrigger answers POST .../triggers/{name}/replay with the body
// {"from": N}: the rows after N are evaluated again.
func (s *Server) replayTrigger(w http.ResponseWriter, r *http.Request) error {
	var body replayBody
	return s.triggerOperation(w, r, &body, func(ctx context.Context, space, name string) (engine.Status, error) {
		return s.engine.Replay(ctx, space, name, *body.From)
	})
}

// triggerOperation authorizes an admin, decodes the optional body into
// body and checks it, runs op on the engine and answers 200 with the
// trigger's status.
func (s *Server) triggerOperation(w http.ResponseWriter, r *http.Request, body opBody, op triggerOp) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	if err := decodeOptional(r, body); err != nil {
		return err
	}
	if err := body.check(); err != nil {
		return err
	}
	if err := s.needEngine(); err != nil {
		return err
	}
	st, err := op(r.Context(), space, r.PathValue("name"))
	if err != nil {
		return err
	}
	if err := s.setHead(w, r, space); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, st)
	return nil
}

// check requires from, a seq >= 0.
func (b *replayBody) check() error {
	switch {
	case b.From == nil:
		return badRequest("from is required: replay evaluates the rows after this seq again").With("field", "from")
	case *b.From < 0:
		return badRequest("from: %d is not a seq (want an integer >= 0)", *b.From).With("field", "from")
	}
	return nil
}

// triggerStatus returns a trigger's status for GET .../triggers/{name},
// or nil when there is no engine or the engine has no state for it yet.
func (s *Server) triggerStatus(ctx context.Context, space, name string) (*engine.Status, error) {
	if s.engine == nil {
		return nil, nil
	}
	st, err := s.engine.Status(ctx, space, name)
	if problem.CodeOf(err) == problem.NotFound || errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &st, nil
}
