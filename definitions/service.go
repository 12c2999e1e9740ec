package definitions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// Service manages the function and trigger definitions of every space.
// It is safe for concurrent use.
type Service struct {
	log *changelog.Log
	st  store.Store
	now func() time.Time
	// handlers are the process's Go handlers (dry runs, "registered").
	handlers *functions.Registry
	hooks    TriggerHooks
	exec     Executor
	egress   *functions.Egress

	// mu serializes definition writes (put and delete, both kinds) so the
	// cross-checks between functions and triggers hold within a process.
	mu sync.Mutex
}

// Options tune a Service. The zero value is usable.
type Options struct {
	// Now is the clock of dry runs (the expr variable now and the
	// webhook-timestamp); default time.Now.
	Now func() time.Time
	// Handlers are the Go handlers of this process: dry runs of go
	// functions call them, and GET answers say whether a go function's
	// handler is registered. Default an empty registry.
	Handlers *functions.Registry
	// Hooks, if set, hear about every saved and deleted trigger (the
	// trigger engine keeps each trigger's cursor and deliveries).
	Hooks TriggerHooks
	// Executor runs functions for manual runs and dry runs, the way the
	// trigger engine's deliveries run them (*engine.Engine). Without one,
	// Run and TestFunction of a function that must run fail.
	Executor Executor
	// Egress is the webhook destination policy a saved webhook's URL must
	// pass (nil: functions.DefaultDeny only). The engine checks it again
	// at connect time.
	Egress *functions.Egress
}

// Executor runs a function once, recording nothing: the trigger engine's
// attempt path (engine.(*Engine).Invoke), so a manual run or a dry run
// uses the same HTTP client, timeout, cause-token keys and clock as a
// delivery.
type Executor interface {
	Invoke(ctx context.Context, space string, t *triggers.Trigger, f *functions.Function, d causality.Effect, c *store.Commit, in functions.Input) ([]changelog.Mutation, error)
}

// errNoExecutor answers a run when the Service has no Executor.
var errNoExecutor = errors.New("definitions: no executor to run functions")

// TriggerHooks is told about trigger definitions as they are stored and
// removed. An error fails the request (the definition stays stored).
type TriggerHooks interface {
	// TriggerSaved runs after a trigger definition was stored.
	TriggerSaved(ctx context.Context, space string, t *triggers.Trigger) error
	// TriggerDeleted runs after a trigger definition was removed.
	TriggerDeleted(ctx context.Context, space, name string) error
}

// New returns a Service over the log's store.
func New(log *changelog.Log, opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Handlers == nil {
		opts.Handlers = &functions.Registry{}
	}
	return &Service{log: log, st: log.Store(), now: opts.Now, handlers: opts.Handlers, hooks: opts.Hooks, exec: opts.Executor, egress: opts.Egress}
}

// checkSpace returns not_found unless the space exists.
func (s *Service) checkSpace(ctx context.Context, space string) error {
	_, err := s.log.Space(ctx, space)
	return err
}

// checkName refuses a definition name that is not a valid type name; the
// problem names the URL parameter "name".
func checkName(kind, name string) error {
	if !changelog.ValidTypeName(name) {
		return problem.Param("name", "%q is not a valid %s name (want [a-z][a-z0-9-]*, dot-separated)", name, kind)
	}
	return nil
}

// get returns the stored JSON of a definition (not_found if absent).
func (s *Service) get(ctx context.Context, space, kind, name string) (json.RawMessage, error) {
	if err := checkName(kind, name); err != nil {
		return nil, err
	}
	if err := s.checkSpace(ctx, space); err != nil {
		return nil, err
	}
	d, err := s.st.DefinitionGet(ctx, space, kind, name)
	if err != nil {
		return nil, notFound(kind, name, err)
	}
	return d.Def, nil
}

// put stores the canonical JSON v of a definition and reports whether it
// created it.
func (s *Service) put(ctx context.Context, space, kind, name string, v any) (bool, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return false, fmt.Errorf("encode %s: %w", kind, err)
	}
	created, err := s.st.DefinitionPut(ctx, space, kind, store.Definition{Name: name, Def: raw, UpdatedAt: s.now()})
	if err != nil {
		return false, fmt.Errorf("put %s: %w", kind, err)
	}
	return created, nil
}

// delete removes a definition (not_found if absent).
func (s *Service) delete(ctx context.Context, space, kind, name string) error {
	if err := s.st.DefinitionDelete(ctx, space, kind, name); err != nil {
		return notFound(kind, name, err)
	}
	return nil
}

// list returns the stored definitions of a kind, ordered by name.
func (s *Service) list(ctx context.Context, space, kind string) ([]store.Definition, error) {
	ds, err := s.st.DefinitionList(ctx, space, kind)
	if err != nil {
		return nil, fmt.Errorf("list %ss: %w", kind, err)
	}
	return ds, nil
}

// notFound turns store.ErrNotFound into a not_found problem naming the
// definition, and wraps other errors.
func notFound(kind, name string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return problem.New(problem.NotFound, "%s %q not found", kind, name)
	}
	return fmt.Errorf("%s %s: %w", kind, name, err)
}
