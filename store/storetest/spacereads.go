package storetest

import (
	"context"
	"sync/atomic"

	"github.com/eddy-run/eddy/store"
)

// SpaceReads wraps a Store and counts its SpaceGet calls, for tests that
// hold a read path to the lookups of its space it makes.
type SpaceReads struct {
	store.Store
	n atomic.Int64
}

// SpaceGet counts the call and passes it on.
func (s *SpaceReads) SpaceGet(ctx context.Context, id string) (store.Space, error) {
	s.n.Add(1)
	return s.Store.SpaceGet(ctx, id)
}

// Reads returns the SpaceGet calls since the last Reset.
func (s *SpaceReads) Reads() int64 { return s.n.Load() }

// Reset starts the count again from zero.
func (s *SpaceReads) Reset() { s.n.Store(0) }
