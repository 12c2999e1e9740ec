package changelog

import (
	"net/url"

	"github.com/eddy-run/eddy/store"
)

// FilterParams are the query parameters ParseFilter reads.
var FilterParams = []string{"types", "ops", "actors", "excludeTypes", "excludeOps", "excludeActors", "q", "entityType", "entityId"}

// Filter selects wire rows. Watch and history share it. Rows a filter
// rejects are consumed and dropped: cursors still move past them.
type Filter struct {
	Types         []string
	Ops           []string
	Actors        []string
	ExcludeTypes  []string
	ExcludeOps    []string
	ExcludeActors []string
	// Q matches free text (case-insensitive) in type, entityId, actor and
	// payload.
	Q          string
	EntityType string
	EntityID   string
	// Allow, if set, is a further predicate: what a principal may read,
	// a CEL `when`. It runs after everything else.
	Allow func(*store.Row) bool
}

// ParseFilter reads the filter parameters of q (plural, repeated or comma
// separated). Bad values are bad_request naming the parameter.
func ParseFilter(q url.Values) (Filter, error) { panic("changelog.ParseFilter: unimplemented") }

// Match reports whether f selects r.
func (f *Filter) Match(r *store.Row) bool { panic("changelog.Filter.Match: unimplemented") }

// RowFilter returns the part of f a driver can evaluate in SQL.
func (f *Filter) RowFilter() store.RowFilter { panic("changelog.Filter.RowFilter: unimplemented") }
