package definitions

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// PutFunction validates raw as the definition of the function name (see
// functions.ParseFunction; an expr function's code is compiled here) and
// stores its canonical form, creating or replacing it. created reports
// whether it was new. The returned function holds its secret; show
// clients its Public view.
func (s *Service) PutFunction(ctx context.Context, space, name string, raw []byte) (f *functions.Function, created bool, err error) {
	if err := s.checkSpace(ctx, space); err != nil {
		return nil, false, err
	}
	f, err = s.ParseFunction(name, raw)
	if err != nil {
		return nil, false, err
	}
	if f.Kind == functions.KindWebhook {
		if err := s.egress.CheckURL(f.URL); err != nil {
			return nil, false, problem.New(problem.BadRequest, "url: %s (see serve --webhook-allow and --webhook-deny)", err.Error()).With("field", "url")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	created, err = s.put(ctx, space, store.DefFunction, name, f)
	if err != nil {
		return nil, false, err
	}
	return f, created, nil
}

// ParseFunction validates raw as the definition of the function name,
// as PutFunction stores it: parsed, with a secret {"fromEnv": NAME} read
// from this process's environment. It stores nothing.
func (s *Service) ParseFunction(name string, raw []byte) (*functions.Function, error) {
	f, err := functions.ParseFunction(name, raw)
	if err != nil {
		return nil, err
	}
	if err := f.ResolveSecret(os.Getenv); err != nil {
		return nil, err
	}
	return f, nil
}

// Function returns the function name of a space (not_found if absent).
// A go function's Registered tells whether its handler is registered in
// this process.
func (s *Service) Function(ctx context.Context, space, name string) (*functions.Function, error) {
	raw, err := s.get(ctx, space, store.DefFunction, name)
	if err != nil {
		return nil, err
	}
	f, err := parseStoredFunction(name, raw)
	if err != nil {
		return nil, err
	}
	s.markRegistered(f)
	return f, nil
}

// markRegistered sets a go function's Registered from the handlers.
func (s *Service) markRegistered(f *functions.Function) {
	if f.Kind != functions.KindGo {
		return
	}
	_, ok := s.handlers.Lookup(f.Handler)
	f.Registered = &ok
}

// Functions returns a space's functions ordered by name, go functions
// marked as in Function.
func (s *Service) Functions(ctx context.Context, space string) ([]*functions.Function, error) {
	if err := s.checkSpace(ctx, space); err != nil {
		return nil, err
	}
	ds, err := s.list(ctx, space, store.DefFunction)
	if err != nil {
		return nil, err
	}
	out := make([]*functions.Function, 0, len(ds))
	for _, d := range ds {
		f, err := parseStoredFunction(d.Name, d.Def)
		if err != nil {
			return nil, err
		}
		s.markRegistered(f)
		out = append(out, f)
	}
	return out, nil
}

// DeleteFunction removes a function. A function that triggers still name
// is not deleted: the answer is a conflict with details.triggers listing
// them (delete or change those triggers first).
func (s *Service) DeleteFunction(ctx context.Context, space, name string) error {
	if _, err := s.get(ctx, space, store.DefFunction, name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	users, err := s.triggersUsing(ctx, space, name)
	if err != nil {
		return err
	}
	if len(users) > 0 {
		return problem.New(problem.Conflict, "function %q is used by trigger(s) %q; delete or change them first", name, users).
			With("triggers", users)
	}
	return s.delete(ctx, space, store.DefFunction, name)
}

// triggersUsing returns the names of the triggers naming function, sorted.
func (s *Service) triggersUsing(ctx context.Context, space, function string) ([]string, error) {
	ds, err := s.list(ctx, space, store.DefTrigger)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range ds {
		var peek struct {
			Function string `json:"function"`
		}
		if err := json.Unmarshal(d.Def, &peek); err != nil {
			return nil, fmt.Errorf("decode stored trigger %s: %w", d.Name, err)
		}
		if peek.Function == function {
			out = append(out, d.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// functionWrites returns the declared writes of every function of a
// space, keyed by function name, read from their stored canonical JSON.
func (s *Service) functionWrites(ctx context.Context, space string) (map[string][]string, error) {
	ds, err := s.list(ctx, space, store.DefFunction)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(ds))
	for _, d := range ds {
		var peek struct {
			Writes []string `json:"writes"`
		}
		if err := json.Unmarshal(d.Def, &peek); err != nil {
			return nil, fmt.Errorf("decode stored function %s: %w", d.Name, err)
		}
		out[d.Name] = peek.Writes
	}
	return out, nil
}

// parseStoredFunction parses a stored definition; a failure is an
// internal error, not the caller's bad request.
func parseStoredFunction(name string, raw []byte) (*functions.Function, error) {
	f, err := functions.ParseFunction(name, raw)
	if err != nil {
		return nil, fmt.Errorf("stored function %s does not parse: %s", name, err.Error())
	}
	return f, nil
}
