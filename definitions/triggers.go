package definitions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// SavedTrigger is the answer to saving a trigger: the trigger as stored
// and the warnings about it (never nil). Its JSON is the trigger's
// canonical JSON with a "warnings" array added.
type SavedTrigger struct {
	Trigger  *triggers.Trigger
	Warnings []triggers.Warning
}

// MarshalJSON writes the trigger's JSON object with "warnings" appended.
func (t SavedTrigger) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(t.Trigger)
	if err != nil {
		return nil, err
	}
	ws := t.Warnings
	if ws == nil {
		ws = []triggers.Warning{}
	}
	w, err := json.Marshal(ws)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(bytes.TrimSpace(b), []byte("}"))
	b = append(b, `,"warnings":`...)
	return append(append(b, w...), '}'), nil
}

// PutTrigger validates raw as the definition of the trigger name (see
// triggers.ParseTrigger: its CEL and schedule are compiled here), checks
// that its function exists (a bad_request naming the field "function" if
// not), stores its canonical form and reports the cycles of the trigger
// graph through it as warnings. created reports whether it was new.
func (s *Service) PutTrigger(ctx context.Context, space, name string, raw []byte) (saved SavedTrigger, created bool, err error) {
	if err := s.checkSpace(ctx, space); err != nil {
		return SavedTrigger{}, false, err
	}
	t, err := triggers.ParseTrigger(name, raw)
	if err != nil {
		return SavedTrigger{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkFunction(ctx, space, t.Function); err != nil {
		return SavedTrigger{}, false, err
	}
	warnings, err := s.cycleWarnings(ctx, space, t)
	if err != nil {
		return SavedTrigger{}, false, err
	}
	created, err = s.put(ctx, space, store.DefTrigger, name, t)
	if err != nil {
		return SavedTrigger{}, false, err
	}
	if s.hooks != nil {
		if err := s.hooks.TriggerSaved(ctx, space, t); err != nil {
			return SavedTrigger{}, false, err
		}
	}
	return SavedTrigger{Trigger: t, Warnings: warnings}, created, nil
}

// checkFunction refuses a trigger whose function does not exist.
func (s *Service) checkFunction(ctx context.Context, space, function string) error {
	_, err := s.st.DefinitionGet(ctx, space, store.DefFunction, function)
	if errors.Is(err, store.ErrNotFound) {
		return problem.New(problem.BadRequest, "function: unknown function %q (save it first)", function).
			With("field", "function")
	}
	if err != nil {
		return fmt.Errorf("get function %s: %w", function, err)
	}
	return nil
}

// cycleWarnings builds the space's trigger graph with t in place of its
// stored version and returns the cycles through t.
func (s *Service) cycleWarnings(ctx context.Context, space string, t *triggers.Trigger) ([]triggers.Warning, error) {
	ts, err := s.Triggers(ctx, space)
	if err != nil {
		return nil, err
	}
	writes, err := s.functionWrites(ctx, space)
	if err != nil {
		return nil, err
	}
	// NewGraph keeps the last trigger of a name: t replaces the stored one.
	return triggers.CycleWarnings(append(ts, t), writes, t.Name), nil
}

// Trigger returns the trigger name of a space (not_found if absent).
func (s *Service) Trigger(ctx context.Context, space, name string) (*triggers.Trigger, error) {
	raw, err := s.get(ctx, space, store.DefTrigger, name)
	if err != nil {
		return nil, err
	}
	return parseStoredTrigger(name, raw)
}

// Triggers returns a space's triggers ordered by name.
func (s *Service) Triggers(ctx context.Context, space string) ([]*triggers.Trigger, error) {
	if err := s.checkSpace(ctx, space); err != nil {
		return nil, err
	}
	ds, err := s.list(ctx, space, store.DefTrigger)
	if err != nil {
		return nil, err
	}
	out := make([]*triggers.Trigger, 0, len(ds))
	for _, d := range ds {
		t, err := parseStoredTrigger(d.Name, d.Def)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// DeleteTrigger removes a trigger (not_found if absent).
func (s *Service) DeleteTrigger(ctx context.Context, space, name string) error {
	if err := checkName("trigger", name); err != nil {
		return err
	}
	if err := s.checkSpace(ctx, space); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.delete(ctx, space, store.DefTrigger, name); err != nil {
		return err
	}
	if s.hooks != nil {
		return s.hooks.TriggerDeleted(ctx, space, name)
	}
	return nil
}

// parseStoredTrigger parses a stored definition; a failure is an internal
// error, not the caller's bad request.
func parseStoredTrigger(name string, raw []byte) (*triggers.Trigger, error) {
	t, err := triggers.ParseTrigger(name, raw)
	if err != nil {
		return nil, fmt.Errorf("stored trigger %s does not parse: %s", name, err.Error())
	}
	return t, nil
}
