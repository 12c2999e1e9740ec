package sqlite

import "context"

// sqlEntityTypeAfter seeks the primary key (space, type, id) to the first
// type after ?2.
const sqlEntityTypeAfter = `SELECT type FROM entities WHERE space = ?1 AND type > ?2 ORDER BY type LIMIT 1`

// EntityTypeAfter returns the smallest entity type of a space greater than
// after; store.ErrNotFound when there is none.
func (s *Store) EntityTypeAfter(ctx context.Context, space, after string) (string, error) {
	row, err := s.rqueryRow(ctx, sqlEntityTypeAfter, space, after)
	if err != nil {
		return "", wrap("entity type after", err)
	}
	var typ string
	return typ, wrap("entity type after", row.Scan(&typ))
}
