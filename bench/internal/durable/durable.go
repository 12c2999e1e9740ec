// Package durable is scenario 1, durable append: commits/s into one
// space with 1 and 16 writers, eddy on SQLite (strict and relaxed
// durability) and on PostgreSQL, against
// JetStream synchronous publish on file storage (each publish waits for
// its ack) and raw PostgreSQL single-row INSERT transactions.
//
// Every writer of eddy commits one put of a new entity per request
// through changelog.Log.Write; every JetStream writer publishes a message
// of the same JSON to the stream; every raw writer runs one autocommit
// INSERT of it. All systems are open at once and measured in rounds, one
// after the other within a round, and each figure is the best of its
// rounds: a burst of load from elsewhere on the machine costs a round,
// not the comparison.
package durable

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/bench/internal/harness"
	"github.com/eddy-run/eddy/bench/internal/report"
)

// writerCounts are the concurrencies measured.
var writerCounts = []int{1, 16}

// op is one commit of the system under test.
type op func(ctx context.Context, i int64) error

// system is one thing measured; open returns its op and a cleanup.
type system struct {
	name string
	open func(context.Context, harness.Config) (op, func() error, error)
}

// figures maps a writer count to commits/s.
type figures map[int]float64

// Names of the systems, also their pprof labels.
const (
	eddySQLite = "eddy sqlite"
	eddyRelax  = "eddy sqlite relaxed"
	eddyPG     = "eddy postgres"
	jetStream  = "jetstream"
	jsSync     = "jetstream fsync always"
	rawInsert  = "raw insert"
)

var systems = []system{
	{eddySQLite, func(ctx context.Context, c harness.Config) (op, func() error, error) {
		return openEddy(ctx, c, harness.SQLite)
	}},
	{eddyRelax, func(ctx context.Context, c harness.Config) (op, func() error, error) {
		return openEddyWith(ctx, c, harness.SQLite, func(cfg *eddy.Config) { cfg.Durability = eddy.DurabilityRelaxed })
	}},
	{eddyPG, func(ctx context.Context, c harness.Config) (op, func() error, error) {
		return openEddy(ctx, c, harness.Postgres)
	}},
	{jetStream, func(ctx context.Context, c harness.Config) (op, func() error, error) {
		return openJetStream(ctx, c, false)
	}},
	{jsSync, func(ctx context.Context, c harness.Config) (op, func() error, error) {
		return openJetStream(ctx, c, true)
	}},
	{rawInsert, openRaw},
}

// Run opens every system, measures them in rounds and compares them.
func Run(ctx context.Context, c harness.Config) (report.Section, error) {
	sec := report.Section{Title: "Durable append (commits/s into one space)"}
	rounds, window := harness.Pick(c, 2, 3), harness.Pick(c, 500*time.Millisecond, time.Second)
	ops := make([]op, len(systems))
	for i, s := range systems {
		o, done, err := s.open(ctx, c)
		if err != nil {
			return sec, fmt.Errorf("durable append: %s: %w", s.name, err)
		}
		defer done() //nolint:errcheck // best effort at the end of the scenario
		ops[i] = o
	}
	best := map[string]figures{}
	for r := range rounds {
		for i, s := range systems {
			c.Log.Info("durable append", "round", r+1, "system", s.name)
			err := harness.Labeled(ctx, "system", s.name, func(ctx context.Context) error { return measure(ctx, window, ops[i], best, s.name) })
			if err != nil {
				return sec, fmt.Errorf("durable append: %s: %w", s.name, err)
			}
		}
	}
	sec.Rows = rows(best)
	sec.Notes = []string{
		fmt.Sprintf("Best of %d rounds of %v per figure (every system measured once per round, in turn), after a warm-up of %v; one space, one put of a new entity per commit.", rounds, window, window/5),
		"eddy: SQLite in WAL mode with synchronous=FULL (fsync per group commit); PostgreSQL with its defaults (synchronous_commit=on). Relaxed: eddy.Config.Durability relaxed (serve --durability relaxed), SQLite synchronous=NORMAL in WAL mode (no fsync per commit), compared with JetStream's default store, which does not fsync per message either.",
		"JetStream: the default file store acks after writing to the OS and fsyncs every 2 minutes; \"fsync always\" sets sync_interval: always. Writers share one connection and wait for each ack.",
		"Raw PostgreSQL: one autocommit INSERT of the same JSON into a table with a bigserial key, one pooled connection per writer, same server.",
	}
	return sec, nil
}

// measure runs o for window at every writer count (after a warm-up on
// the first round) and keeps the best figures in best[name].
func measure(ctx context.Context, window time.Duration, o op, best map[string]figures, name string) error {
	if best[name] == nil {
		best[name] = figures{}
		if _, err := harness.Throughput(ctx, 1, window/5, o); err != nil {
			return err
		}
	}
	for _, w := range writerCounts {
		var v float64
		err := harness.Labeled(ctx, "writers", strconv.Itoa(w), func(ctx context.Context) (err error) {
			v, err = harness.Throughput(ctx, w, window, o)
			return err
		})
		if err != nil {
			return err
		}
		best[name][w] = max(best[name][w], v)
	}
	return nil
}

// rows turns the figures into the comparisons of issue 15: strict
// durability against the peers that also fsync every acknowledged write
// (raw PostgreSQL INSERT transactions, JetStream with fsync always), relaxed
// durability against JetStream's default store, which does not.
func rows(f map[string]figures) []report.Row {
	row := func(measure, eddy string, ev float64, peer string, pv float64) report.Row {
		return report.Row{Measure: measure, Unit: "commits/s", Eddy: eddy, EddyVal: ev, Peer: peer, PeerVal: pv}
	}
	const eS, eP, eR = "eddy (SQLite)", "eddy (PostgreSQL)", "eddy (SQLite, relaxed)"
	sqlite, pg, js, sync, raw, relaxed := f[eddySQLite], f[eddyPG], f[jetStream], f[jsSync], f[rawInsert], f[eddyRelax]
	return []report.Row{
		row("1 writer", eP, pg[1], "raw PG INSERT tx", raw[1]).RatioAtLeast(0.5, "≥ 0.50×"),
		row("16 writers", eP, pg[16], "raw PG INSERT tx", raw[16]),
		row("16 writers ÷ 1 writer", eP+" 16w", pg[16], eP+" 1w", pg[1]).RatioAtLeast(5, "≥ 5×"),
		row("1 writer", eS, sqlite[1], "JetStream, fsync always", sync[1]).RatioAtLeast(1, "≥ 1×"),
		row("16 writers", eS, sqlite[16], "JetStream, fsync always", sync[16]),
		row("16 writers ÷ 1 writer", eS+" 16w", sqlite[16], eS+" 1w", sqlite[1]).RatioAtLeast(5, "≥ 5×"),
		row("1 writer", eP, pg[1], "JetStream, fsync always", sync[1]),
		row("16 writers", eP, pg[16], "JetStream, fsync always", sync[16]),
		row("1 writer", eS, sqlite[1], "JetStream sync publish", js[1]),
		row("16 writers", eS, sqlite[16], "JetStream sync publish", js[16]),
		row("1 writer, relaxed", eR, relaxed[1], "JetStream sync publish", js[1]),
		row("16 writers, relaxed", eR, relaxed[16], "JetStream sync publish", js[16]).RatioAtLeast(1, "≥ 1×"),
	}
}
