package functions

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/eddy-run/eddy/changelog"
)

// Handler is a Go function registered by the program that embeds eddy. It
// returns the actions of one run, like an expr program: a nil or empty
// slice means none. It must honour ctx.
type Handler func(ctx context.Context, in Input) ([]changelog.Mutation, error)

// Errors of the registry and of Go runs.
var (
	// ErrInvalidHandler reports a Register call with an invalid name or a
	// nil handler.
	ErrInvalidHandler = errors.New("invalid handler")
	// ErrDuplicateHandler reports a name registered twice.
	ErrDuplicateHandler = errors.New("handler already registered")
	// ErrHandlerNotRegistered reports a run of a go function whose handler
	// this process has not registered.
	ErrHandlerNotRegistered = errors.New("handler not registered")
	// ErrHandlerPanic reports a handler that panicked (see PanicError).
	ErrHandlerPanic = errors.New("handler panicked")
)

// PanicError is a handler's recovered panic: a handler that panics never
// crashes the process. It wraps ErrHandlerPanic.
type PanicError struct {
	// Value is what the handler panicked with.
	Value any
	// Stack is the handler goroutine's stack at the panic, for logs.
	Stack []byte
}

// Error implements error; it leaves the stack out.
func (e *PanicError) Error() string { return fmt.Sprintf("%s: %v", ErrHandlerPanic, e.Value) }

// Unwrap returns ErrHandlerPanic.
func (e *PanicError) Unwrap() error { return ErrHandlerPanic }

// Registry holds the Go handlers of a process, by name. The zero value is
// an empty registry; it is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	handlers map[string]Handler
}

// Register adds the handler h under name, the value a go function's
// "handler" field names. The name must be a valid handler name
// ([A-Za-z0-9._:-]{1,128}, the rule ParseFunction applies), h must not be
// nil and a name may be registered only once.
func (r *Registry) Register(name string, h Handler) error {
	if !changelog.ValidID(name) {
		return fmt.Errorf("register %q: %w: name must match [A-Za-z0-9._:-]{1,128}", name, ErrInvalidHandler)
	}
	if h == nil {
		return fmt.Errorf("register %q: %w: nil handler", name, ErrInvalidHandler)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.handlers[name]; ok {
		return fmt.Errorf("register %q: %w", name, ErrDuplicateHandler)
	}
	if r.handlers == nil {
		r.handlers = make(map[string]Handler)
	}
	r.handlers[name] = h
	return nil
}

// Lookup returns the handler registered under name.
func (r *Registry) Lookup(name string) (Handler, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.handlers[name]
	return h, ok
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.handlers))
	for name := range r.handlers {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// RunGo runs a go function's handler from reg on in and returns its
// actions, each checked with changelog.ValidateMutation and against the
// declared writes. Errors: ErrHandlerNotRegistered, a *PanicError, the
// handler's own error (wrapped), ErrTooManyActions (more than
// MaxActions), ErrInvalidResult wrapping the *problem.Error of an invalid
// action, ErrUndeclaredWrite, or the context's error.
func (f *Function) RunGo(ctx context.Context, reg *Registry, in Input) ([]changelog.Mutation, error) {
	if f.Kind != KindGo {
		return nil, fmt.Errorf("function %q is not a go function", f.Name)
	}
	h, ok := reg.Lookup(f.Handler)
	if !ok {
		return nil, fmt.Errorf("handler %q: %w", f.Handler, ErrHandlerNotRegistered)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ms, err := callHandler(ctx, h, in)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("handler %q: %w", f.Handler, err)
	}
	ms = slices.Clone(ms) // validation may normalize; the handler keeps its slice
	if err := checkActions(ms); err != nil {
		return nil, fmt.Errorf("handler %q: %w", f.Handler, err)
	}
	if err := f.CheckWrites(ms); err != nil {
		return nil, err
	}
	return ms, nil
}

// callHandler calls h in its own goroutine, turning a panic into a
// *PanicError. It returns ctx's error as soon as ctx is done, even if the
// handler ignores ctx (its late result is dropped).
func callHandler(ctx context.Context, h Handler, in Input) ([]changelog.Mutation, error) {
	type result struct {
		ms  []changelog.Mutation
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if v := recover(); v != nil {
				r = result{err: &PanicError{Value: v, Stack: debug.Stack()}}
			}
			done <- r
		}()
		r.ms, r.err = h(ctx, in)
	}()
	select {
	case r := <-done:
		return r.ms, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// checkActions bounds and validates a handler's actions.
func checkActions(ms []changelog.Mutation) error {
	if len(ms) > MaxActions {
		return fmt.Errorf("%w: %d, more than %d", ErrTooManyActions, len(ms), MaxActions)
	}
	for i := range ms {
		if err := changelog.ValidateMutation(&ms[i]); err != nil {
			return fmt.Errorf("action %d: %w: %w", i, ErrInvalidResult, err)
		}
	}
	return nil
}
