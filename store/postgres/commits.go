package postgres

import (
	"context"
	"encoding/json"
	"math"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

const commitColumns = rowColumns + ", receipt, provenance, changes"

// The reads of Commits and RawCommits, with receipts and without. They
// bound seq on both sides (commitsArgs): a space's seqs have no gaps, so
// the page is the window (after, after+limit], and its plan cannot
// depend on statistics. With only `seq > after`, a table read before
// ANALYZE (or a generic plan made while it was small) bitmap-scans and
// sorts every row past the cursor for each page, which makes a catch-up
// quadratic.
const (
	commitsWindow = ` FROM commits
		WHERE space = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`
	commitsQuery     = "SELECT " + commitColumns + commitsWindow
	commitsLeanQuery = "SELECT " + rowColumns + ", '', provenance, changes" + commitsWindow
)

// rawCommitsQuery returns the read of RawCommits for p: the columns of
// an Arena, each row's stored change count last. With p.ChangesOf, the
// provenance and changes of rows of other types are NULL (not sent),
// unless the row has no stored count; the types are the fifth argument
// (RawCommits appends them to commitsArgs).
func rawCommitsQuery(p store.CommitsParams) string {
	receipt, prov, changes := "receipt", "provenance", "changes"
	if p.NoReceipts {
		receipt = "''"
	}
	if p.ChangesOf != nil {
		const read = "change_count IS NULL OR entity_type = ANY($5::text[])"
		prov, changes = "CASE WHEN "+read+" THEN provenance END", "CASE WHEN "+read+" THEN changes END"
	}
	return "SELECT " + rowColumns + ", " + receipt + ", " + prov + ", " + changes + ", change_count" + commitsWindow
}

// commitsArgs returns the arguments of commitsQuery for p: the window's
// upper end is after+limit (unbounded without a limit).
func commitsArgs(p store.CommitsParams) []any {
	hi := int64(math.MaxInt64)
	if p.Limit > 0 && p.After <= math.MaxInt64-int64(p.Limit) {
		hi = p.After + int64(p.Limit)
	}
	return []any{p.Space, p.After, hi, limitArg(p.Limit)}
}

// scanRawCommit reads one commits row selected with commitColumns,
// leaving its JSON columns encoded.
func scanRawCommit(row pgx.Row, raw *rowcodec.RawCommit) error {
	c := &raw.Commit
	var payload string
	err := row.Scan(&c.Seq, &c.TS, &c.Actor, &c.Op, &c.EntityID, &c.Type, &payload, &raw.Receipt, &raw.Provenance, &raw.Changes)
	if err != nil {
		return err
	}
	c.TS = c.TS.UTC()
	c.Payload = json.RawMessage(payload)
	return nil
}

// Commits returns at most p.Limit whole commits with seq > p.After in seq
// order, each with its changes by ordinal. One statement reads the page,
// so it is one snapshot: a concurrent prune cannot split it.
func (s *Store) Commits(ctx context.Context, p store.CommitsParams) ([]store.Commit, error) {
	query := commitsQuery
	if p.NoReceipts {
		query = commitsLeanQuery
	}
	return s.readCommits(ctx, "commits", query, commitsArgs(p)...)
}

// RawCommits is Commits with the JSON columns left as stored.
func (s *Store) RawCommits(ctx context.Context, p store.CommitsParams) ([]store.RawCommit, error) {
	args := commitsArgs(p)
	if p.ChangesOf != nil {
		args = append(args, p.ChangesOf)
	}
	return s.readRawPage(ctx, "raw commits", p.Limit, p.Recycle, rawCommitsQuery(p), args...)
}

// readRawPage runs a read of whole commits (rawCommitsQuery) into an arena
// (rowcodec.Arena), leaving their JSON columns as stored: a page costs a
// few allocations, not several per row. The arena is made when the first
// row arrives (a tail read that finds nothing allocates nothing) and
// grows in blocks sized from the limit and the last page's row size
// (rowcodec.Arena), so a tail read that finds one row sets aside little
// and a whole page copies nothing twice. With recycle, the page's memory
// is lent until RecycleRaw hands it back (recycle.go).
func (s *Store) readRawPage(ctx context.Context, op string, limit int, recycle bool, query string, args ...any) ([]store.RawCommit, error) {
	a, err := s.readArena(ctx, limit, &s.rawRowBytes, (*rowcodec.Arena).Dest, query, args...)
	switch {
	case err != nil:
		return nil, wrap(op, err)
	case a == nil:
		return []store.RawCommit{}, nil
	case !recycle:
		return a.Commits(), nil
	}
	commits, m := a.CommitsPage()
	s.lent.lend(start(commits), m)
	return commits, nil
}

// readArena runs query and scans its rows into an arena through the
// destinations dest returns: nil when no row came. The arena is made
// for limit rows of the JSON size *rowBytes last measured, which it
// then updates.
func (s *Store) readArena(ctx context.Context, limit int, rowBytes *atomic.Int64, dest func(*rowcodec.Arena) []any, query string, args ...any) (*rowcodec.Arena, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var a *rowcodec.Arena
	var d []any
	raw := rowcodec.RawReadable(rows.FieldDescriptions())
	for rows.Next() {
		if a == nil {
			a = rowcodec.NewArena(limit, int(rowBytes.Load()))
			d = dest(a)
		}
		if raw {
			if err := a.AddRaw(rows.RawValues()); err != nil {
				return nil, err
			}
			continue
		}
		if err := rows.Scan(d...); err != nil {
			return nil, err
		}
		a.Add()
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if a != nil {
		if n := a.JSONBytesPerRow(); n > 0 {
			rowBytes.Store(int64(n))
		}
	}
	return a, nil
}
