package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The planner statistics of eddy's busiest tables. Their statements find
// rows by primary key, but every other index of deliveries also ends with
// the delivery's id: on a table never analyzed the planner may take one
// of those for the lookup by id, scanning every delivery of the space, so
// each delivery update costs a scan of all of them. Measured on this
// machine with autovacuum off: a trigger's backlog drained at 300-1,100
// deliveries a second, slower as it grew; after one ANALYZE (27 ms) it
// kept up with 16 writers (about 7,000 a second). Autovacuum analyzes
// these tables too, but only every autovacuum_naptime and not at all
// where it is off, so the store analyzes them itself when they were never
// analyzed or changed much since (statsKeeper).

// statsTables are the tables statsKeeper watches.
var statsTables = []string{"commits", "entities", "deliveries", "receipts", "trigger_state", "stance_errors"}

// Tunables of statsKeeper: how often it looks, and how much a table must
// have changed since it was last analyzed (rows inserted, updated or
// deleted, at least statsMinChanges and statsChangeFraction of its rows).
var (
	statsEvery          = 2 * time.Second
	statsMinChanges     = 500
	statsChangeFraction = 0.2
)

// staleStatsQ names the watched tables of the search path that were
// never analyzed but hold rows, or changed much since they were.
const staleStatsQ = `SELECT c.oid::regclass::text FROM pg_class c
	LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
	WHERE c.oid IN (SELECT to_regclass(t) FROM unnest($1::text[]) AS t)
	  AND ((c.reltuples < 0 AND pg_relation_size(c.oid) > 0)
	    OR coalesce(s.n_mod_since_analyze, 0) > greatest($2::float8, $3::float8 * greatest(c.reltuples, 0)))
	ORDER BY 1`

// codeInsufficientPrivilege is the SQLSTATE of an ANALYZE the role may
// not run.
const codeInsufficientPrivilege = "42501"

// statsKeeper runs analyzeStale every statsEvery until closed. A role
// that may not analyze the tables stops it: their statistics are then
// autovacuum's (or the operator's) alone.
type statsKeeper struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startStatsKeeper starts s's statsKeeper.
func (s *Store) startStatsKeeper() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stats = &statsKeeper{cancel: cancel}
	s.stats.wg.Go(func() {
		t := time.NewTicker(statsEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_, err := s.analyzeStale(ctx)
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == codeInsufficientPrivilege {
				return
			}
		}
	})
}

// close stops the keeper and waits for it.
func (k *statsKeeper) close() {
	k.cancel()
	k.wg.Wait()
}

// analyzeStale analyzes the watched tables whose statistics are missing
// or stale and returns their names.
func (s *Store) analyzeStale(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, staleStatsQ, statsTables, float64(statsMinChanges), statsChangeFraction)
	if err != nil {
		return nil, err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		// n is a regclass's text: a quoted, qualified-as-needed name.
		if _, err := s.pool.Exec(ctx, "ANALYZE "+n); err != nil {
			return names, err
		}
	}
	return names, nil
}
