package changelog

import (
	"context"

	"github.com/eddy-run/eddy/store"
)

// Log is the changelog service over one store.
type Log struct {
	st   store.Store
	opts Options
}

// New returns a Log over st. Call Close to stop its committers.
func New(st store.Store, opts Options) *Log { return &Log{st: st, opts: opts} }

// Close stops the per-space committers after they finish queued work.
func (l *Log) Close() error { return nil }

// Store returns the underlying store.
func (l *Log) Store() store.Store { return l.st }

// CreateSpace creates a space (conflict if it exists).
func (l *Log) CreateSpace(ctx context.Context, id string) (store.Space, error) { panic("unimplemented") }

// EnsureSpace creates a space unless it exists and returns it.
func (l *Log) EnsureSpace(ctx context.Context, id string) (store.Space, error) { panic("unimplemented") }

// Space returns one space (not_found if absent).
func (l *Log) Space(ctx context.Context, id string) (store.Space, error) { panic("unimplemented") }

// Spaces returns every space.
func (l *Log) Spaces(ctx context.Context) ([]store.Space, error) { panic("unimplemented") }

// PutType validates and stores a type definition.
func (l *Log) PutType(ctx context.Context, space, typ string, raw []byte) (store.TypeDef, error) {
	panic("unimplemented")
}

// GetType returns a type definition (not_found if absent).
func (l *Log) GetType(ctx context.Context, space, typ string) (store.TypeDef, error) {
	panic("unimplemented")
}

// DeleteType removes a type definition (not_found if absent).
func (l *Log) DeleteType(ctx context.Context, space, typ string) error { panic("unimplemented") }

// Types lists a space's type definitions.
func (l *Log) Types(ctx context.Context, space string) ([]store.TypeDef, error) { panic("unimplemented") }

// Write applies a request's mutations through the space's group committer.
func (l *Log) Write(ctx context.Context, req WriteRequest) (WriteResult, error) { panic("unimplemented") }

// Get returns a live record (not_found for a missing or deleted entity).
func (l *Log) Get(ctx context.Context, space string, key store.EntityKey) (store.Record, error) {
	panic("unimplemented")
}

// List returns one page of a collection consistent as of its head.
func (l *Log) List(ctx context.Context, p ListParams) (ListPage, error) { panic("unimplemented") }

// Pull returns whole commits after a cursor within a soft change budget.
func (l *Log) Pull(ctx context.Context, space string, after int64, limit int) (PullPage, error) {
	panic("unimplemented")
}

// Read returns a forward page of rows with seq > from.
func (l *Log) Read(ctx context.Context, space string, from int64, f Filter, limit int) (Page, error) {
	panic("unimplemented")
}

// History returns a backward page of rows with seq < before (0 = from the
// head), newest first.
func (l *Log) History(ctx context.Context, space string, before int64, f Filter, limit int) (Page, error) {
	panic("unimplemented")
}

// Prune deletes commits <= through and moves the horizon; the head never
// moves back.
func (l *Log) Prune(ctx context.Context, space string, through int64) (store.Space, error) {
	panic("unimplemented")
}
