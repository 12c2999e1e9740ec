package postgres

import "context"

// entityTypeAfterQ seeks the primary key (space, type, id) to the first
// type after $2.
const entityTypeAfterQ = `SELECT type FROM entities WHERE space = $1 AND type > $2 ORDER BY type LIMIT 1`

// EntityTypeAfter returns the smallest entity type of a space greater than
// after; store.ErrNotFound when there is none.
func (s *Store) EntityTypeAfter(ctx context.Context, space, after string) (string, error) {
	var typ string
	err := s.pool.QueryRow(ctx, entityTypeAfterQ, space, after).Scan(&typ)
	return typ, wrap("entity type after", err)
}
