package store

import "context"

// JournalStore is what the per-user journal reads beyond the log and the
// entities: the entity types a space holds, so its initial fetch can walk
// every type in order without a list of them.
type JournalStore interface {
	// EntityTypeAfter returns the smallest type, bytewise greater than
	// after, of which the space holds a record (live or tombstone);
	// ErrNotFound when there is none. It is one index seek.
	EntityTypeAfter(ctx context.Context, space, after string) (string, error)
}
