package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

var _ store.ViewStore = (*Store)(nil)

const (
	sqlViewSessionInsert = `INSERT INTO view_sessions (space, id, view, reader, watermark, page_size, pages, records, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	sqlViewPageGet = `SELECT s.view, s.reader, s.watermark, s.page_size, s.pages, s.records, s.created_at, s.expires_at, p."offset", p.records
		FROM view_sessions s LEFT JOIN view_session_pages p ON p.space = s.space AND p.id = s.id AND p.page = $3
		WHERE s.space = $1 AND s.id = $2`
	// The expired sessions, headers and headerless page sets alike, and
	// everything stored under them.
	sqlViewExpire = `WITH doomed AS (
			SELECT space, id FROM view_sessions WHERE expires_at < $1
			UNION SELECT space, id FROM view_session_pages WHERE expires_at < $1
			LIMIT $2),
		gone_pages AS (DELETE FROM view_session_pages p USING doomed d WHERE p.space = d.space AND p.id = d.id),
		gone AS (DELETE FROM view_sessions s USING doomed d WHERE s.space = d.space AND s.id = d.id)
		SELECT count(*) FROM doomed`
	sqlViewOpen    = `SELECT count(*) FROM view_sessions WHERE expires_at >= $1`
	sqlEpochRotate = `UPDATE spaces SET epoch = $2 WHERE id = $1 RETURNING ` + spaceColumns
)

// ViewSessionPagesPut stores pages of a session being materialized with
// one COPY in one transaction.
func (s *Store) ViewSessionPagesPut(ctx context.Context, space, id string, expires time.Time, pages []store.ViewSessionPage) error {
	rows := make([][]any, len(pages))
	exp := microUTC(expires)
	for i, p := range pages {
		rows[i] = []any{space, id, p.Page, p.Offset, string(p.Records), exp}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"view_session_pages"},
		[]string{"space", "id", "page", "offset", "records", "expires_at"}, pgx.CopyFromRows(rows))
	return wrap("put view session pages", err)
}

// ViewSessionPut stores a session's header; ErrExists if it has one.
func (s *Store) ViewSessionPut(ctx context.Context, v store.ViewSession) error {
	_, err := s.pool.Exec(ctx, sqlViewSessionInsert, v.Space, v.ID, v.View, v.Reader, v.Watermark, v.PageSize, v.Pages, v.Records,
		microUTC(v.CreatedAt), microUTC(v.ExpiresAt))
	return wrap("put view session", err)
}

// ViewSessionPage returns a session's header and one of its pages in one
// round trip.
func (s *Store) ViewSessionPage(ctx context.Context, space, id string, page int) (store.ViewSession, store.ViewSessionPage, error) {
	v := store.ViewSession{Space: space, ID: id}
	p := store.ViewSessionPage{Page: page}
	var (
		offset *int64
		recs   *string
	)
	err := s.pool.QueryRow(ctx, sqlViewPageGet, space, id, page).
		Scan(&v.View, &v.Reader, &v.Watermark, &v.PageSize, &v.Pages, &v.Records, &v.CreatedAt, &v.ExpiresAt, &offset, &recs)
	if err != nil {
		return v, p, wrap("get view session page", err)
	}
	v.CreatedAt, v.ExpiresAt = v.CreatedAt.UTC(), v.ExpiresAt.UTC()
	if offset == nil || recs == nil {
		return v, p, notFound("get view session page", "page out of range")
	}
	p.Offset, p.Records = *offset, []byte(*recs)
	return v, p, nil
}

// ViewSessionsExpire deletes at most limit expired sessions, header and
// pages, in one statement.
func (s *Store) ViewSessionsExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	var n int
	err := s.pool.QueryRow(ctx, sqlViewExpire, microUTC(before), limit).Scan(&n)
	return n, wrap("expire view sessions", err)
}

// ViewSessionsOpen counts the stored sessions not expired at now.
func (s *Store) ViewSessionsOpen(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, sqlViewOpen, microUTC(now)).Scan(&n)
	return n, wrap("count view sessions", err)
}

// SpaceEpochRotate replaces a space's epoch; ErrNotFound if it is missing.
func (s *Store) SpaceEpochRotate(ctx context.Context, space, epoch string) (store.Space, error) {
	sp, err := scanSpace(s.pool.QueryRow(ctx, sqlEpochRotate, space, epoch))
	return sp, wrap("rotate epoch", err)
}
