package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eddy-run/eddy/store"
)

var _ store.ViewStore = (*Store)(nil)

const (
	sqlViewPageInsert = `INSERT INTO view_session_pages (space, id, page, offset, records, expires_at)
VALUES (?, ?, ?, ?, ?, ?)`
	sqlViewSessionInsert = `INSERT INTO view_sessions (space, id, view, reader, watermark, page_size, pages, records, created_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlViewSessionGet = `SELECT view, reader, watermark, page_size, pages, records, created_at, expires_at
FROM view_sessions WHERE space = ? AND id = ?`
	sqlViewPageGet = `SELECT offset, records FROM view_session_pages WHERE space = ? AND id = ? AND page = ?`
	// The expired sessions: headers and headerless page sets alike.
	sqlViewExpired = `SELECT space, id FROM view_sessions WHERE expires_at < ?1
UNION SELECT space, id FROM view_session_pages WHERE expires_at < ?1 LIMIT ?2`
	sqlViewSessionDelete = `DELETE FROM view_sessions WHERE space = ? AND id = ?`
	sqlViewPagesDelete   = `DELETE FROM view_session_pages WHERE space = ? AND id = ?`
	sqlViewOpen          = `SELECT count(*) FROM view_sessions WHERE expires_at >= ?`
)

// sqlEpochRotate sets a space's epoch and returns the space.
var sqlEpochRotate = `UPDATE spaces SET epoch = ? WHERE id = ? RETURNING ` + spaceCols

// ViewSessionPagesPut stores pages of a session being materialized, in
// one write transaction.
func (s *Store) ViewSessionPagesPut(ctx context.Context, space, id string, expires time.Time, pages []store.ViewSessionPage) error {
	err := s.writeTx(ctx, func(tx *connTx) error {
		st, err := tx.stmt(ctx, sqlViewPageInsert)
		if err != nil {
			return err
		}
		for _, p := range pages {
			if _, err := st.ExecContext(ctx, space, id, p.Page, p.Offset, string(p.Records), micros(expires)); err != nil {
				return fmt.Errorf("page %d: %w", p.Page, err)
			}
		}
		return nil
	})
	return wrap("put view session pages", err)
}

// ViewSessionPut stores a session's header; ErrExists if it has one.
func (s *Store) ViewSessionPut(ctx context.Context, v store.ViewSession) error {
	err := s.writeTx(ctx, func(tx *connTx) error {
		_, err := tx.ExecContext(ctx, sqlViewSessionInsert, v.Space, v.ID, v.View, v.Reader, v.Watermark, v.PageSize, v.Pages, v.Records,
			micros(utcMicro(v.CreatedAt)), micros(utcMicro(v.ExpiresAt)))
		return err
	})
	return wrap("put view session", err)
}

// ViewSessionPage returns a session's header and one of its pages.
func (s *Store) ViewSessionPage(ctx context.Context, space, id string, page int) (store.ViewSession, store.ViewSessionPage, error) {
	v := store.ViewSession{Space: space, ID: id}
	row, err := s.rqueryRow(ctx, sqlViewSessionGet, space, id)
	if err != nil {
		return v, store.ViewSessionPage{}, wrap("get view session", err)
	}
	var created, expires int64
	if err := row.Scan(&v.View, &v.Reader, &v.Watermark, &v.PageSize, &v.Pages, &v.Records, &created, &expires); err != nil {
		return v, store.ViewSessionPage{}, wrap("get view session", err)
	}
	v.CreatedAt, v.ExpiresAt = fromMicros(created), fromMicros(expires)
	p := store.ViewSessionPage{Page: page}
	row, err = s.rqueryRow(ctx, sqlViewPageGet, space, id, page)
	if err != nil {
		return v, p, wrap("get view session page", err)
	}
	var recs string
	err = row.Scan(&p.Offset, &recs)
	p.Records = []byte(recs)
	return v, p, wrap("get view session page", err)
}

// ViewSessionsExpire deletes at most limit expired sessions, header and
// pages, in one write transaction.
func (s *Store) ViewSessionsExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	n := 0
	err := s.writeTx(ctx, func(tx *connTx) error {
		rows, err := tx.QueryContext(ctx, sqlViewExpired, micros(before), limit)
		if err != nil {
			return err
		}
		var keys [][2]string
		for rows.Next() {
			var k [2]string
			if err := rows.Scan(&k[0], &k[1]); err != nil {
				return errors.Join(err, rows.Close())
			}
			keys = append(keys, k)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		for _, k := range keys {
			for _, q := range []string{sqlViewSessionDelete, sqlViewPagesDelete} {
				if _, err := tx.ExecContext(ctx, q, k[0], k[1]); err != nil {
					return err
				}
			}
		}
		n = len(keys)
		return nil
	})
	return n, wrap("expire view sessions", err)
}

// ViewSessionsOpen counts the stored sessions not expired at now.
func (s *Store) ViewSessionsOpen(ctx context.Context, now time.Time) (int64, error) {
	row, err := s.rqueryRow(ctx, sqlViewOpen, micros(now))
	if err != nil {
		return 0, wrap("count view sessions", err)
	}
	var n int64
	return n, wrap("count view sessions", row.Scan(&n))
}

// SpaceEpochRotate replaces a space's epoch; ErrNotFound if it is missing.
func (s *Store) SpaceEpochRotate(ctx context.Context, space, epoch string) (store.Space, error) {
	var sp store.Space
	err := s.writeTx(ctx, func(tx *connTx) error {
		var err error
		sp, err = scanSpace(tx.QueryRowContext(ctx, sqlEpochRotate, epoch, space))
		return err
	})
	return sp, wrap("rotate epoch", err)
}
