// Package consume is scenario 2, commit to consumer: the latency from a
// write call to the start of what consumes it, at one steady rate. For
// eddy that is a trigger's in-process (go) function starting (on SQLite
// and on PostgreSQL); for JetStream, a synchronous publish to a file
// stream and a durable consumer with a filter subject receiving the
// message, once pull (Consume) and once push (a deliver subject).
package consume

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/eddy-run/eddy/bench/internal/harness"
	"github.com/eddy-run/eddy/bench/internal/report"
)

// rate is the steady rate of every system, in commits per second.
const rate = 200

// syncName is the JetStream run with an fsync per message, like eddy's
// strict commits: issue 15's targets compare with it.
const syncName = "JetStream pull, fsync always"

// maxP50 is issue 15's p50 target in milliseconds (on a quiet machine).
const maxP50 = 1.0

// warm is the number of warm-up messages before the measured ones.
const warm = 50

// system sends message i (after p.send(i)) to a consumer that calls
// p.receive(i); setup wires it and returns the send and a cleanup.
type system struct {
	name   string
	served bool // eddy, run as eddy serve sets the runtime up
	setup  func(ctx context.Context, c harness.Config, p *probe) (send func(ctx context.Context, i int) error, done func() error, err error)
}

// Run measures every system at the same rate and compares.
func Run(ctx context.Context, c harness.Config) (report.Section, error) {
	n := harness.Pick(c, 300, 2000)
	sec := report.Section{Title: "Commit to consumer (latency, ms)"}
	systems := []system{
		{"eddy (SQLite)", true, eddySetup(harness.SQLite)},
		{"eddy (PostgreSQL)", true, eddySetup(harness.Postgres)},
		{"JetStream pull consumer", false, jetStreamSetup(false, false)},
		{"JetStream push consumer", false, jetStreamSetup(true, false)},
		{syncName, false, jetStreamSetup(false, true)},
	}
	p50, p99 := map[string]float64{}, map[string]float64{}
	var acks, spreads []string
	for _, s := range systems {
		c.Log.Info("commit to consumer", "system", s.name)
		var ds, fromAck []time.Duration
		err := harness.Labeled(ctx, "system", s.name, harness.AsServedIf(s.served, func(ctx context.Context) (err error) {
			ds, fromAck, err = measure(ctx, c, s, n)
			return err
		}))
		if err != nil {
			return sec, fmt.Errorf("commit to consumer: %s: %w", s.name, err)
		}
		p50[s.name], p99[s.name] = harness.Quantile(ds, 0.5), harness.Quantile(ds, 0.99)
		acks = append(acks, fmt.Sprintf("%s %s/%s ms", s.name,
			report.Num(harness.Quantile(fromAck, 0.5)), report.Num(harness.Quantile(fromAck, 0.99))))
		spreads = append(spreads, s.name+" "+spread(ds))
	}
	for _, e := range systems[:2] {
		for _, peer := range systems[2:] {
			row := func(q string, m map[string]float64) report.Row {
				return report.Row{Measure: q, Unit: "ms", Lower: true, Eddy: e.name, EddyVal: m[e.name], Peer: peer.name, PeerVal: m[peer.name]}
			}
			if peer.name != syncName {
				sec.Rows = append(sec.Rows, row("p50", p50), row("p99", p99))
				continue
			}
			// Issue 15 compares strict durability like for like: against
			// JetStream with an fsync per message.
			sec.Rows = append(sec.Rows,
				row("p50", p50).EddyAtMost(maxP50, "< 1 ms (quiet machine)"),
				row("p99", p99).RatioAtMost(1, "≤ 1× (p99 ≤ JetStream's)"))
		}
	}
	disk, err := diskNote(ctx, c, n)
	if err != nil {
		return sec, err
	}
	pg, err := pgNote(ctx, c, n)
	if err != nil {
		return sec, err
	}
	sec.Notes = []string{
		fmt.Sprintf("%d commits at %d/s per system after %d warm-up ones; latency runs from just before the write (eddy Log.Write, JetStream Publish waiting for its ack) to the first line of the consumer.", n, rate, warm),
		"eddy: a trigger on type item with delivery ordering none, concurrency 16, calling a registered go handler. eddy's engine polls each space every second besides being woken by the commit.",
		"The tail (p90 / p99 / p99.9 / max, ms): " + strings.Join(spreads, ", ") + ".",
		"From the write's return instead (p50/p99, negative when the consumer starts before the ack): " + strings.Join(acks, ", ") + ".",
		"JetStream: file storage with default sync (no fsync per message) unless marked fsync always (sync_interval: always), one stream, durable consumers with a filter subject and explicit acks (the handler acks after noting the time).",
		harness.ServedNote,
		disk,
		pg,
	}
	return sec, nil
}

// spread formats the tail of ds: p90 / p99 / p99.9 / max, in ms.
func spread(ds []time.Duration) string {
	qs := []float64{0.9, 0.99, 0.999, 1}
	parts := make([]string, len(qs))
	for i, q := range qs {
		parts[i] = report.Num(harness.Quantile(ds, q))
	}
	return strings.Join(parts, " / ")
}

// commitPages is about how many WAL pages one eddy SQLite commit of this
// scenario writes: the put (commit row, its index entry, the entity) and,
// in the same transaction, its delivery (row and three index entries)
// and the trigger's cursor, plus the previous delivery's completion,
// whose frames this commit's fsync covers. Counted with strace in round
// 10 (1,000 puts at 200/s through eddy on SQLite): 12.2 WAL frames per
// put with this scenario's trigger, 4.3 without.
const commitPages = 12

// diskNote measures the disk alone at the scenario's rate: what a
// commit's fsync costs before eddy or JetStream adds anything.
func diskNote(ctx context.Context, c harness.Config, n int) (string, error) {
	var parts []string
	for _, pages := range []int{1, commitPages} {
		run, err := harness.DiskSync(ctx, c.Dir, pages, n, rate)
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%d page(s) %s/%s ms", pages,
			report.Num(harness.Quantile(run.Latencies, 0.5)), report.Num(harness.Quantile(run.Latencies, 0.99))))
	}
	return fmt.Sprintf("The disk alone in this run, at %d/s (p50/p99 of a write and fdatasync(2) into a file synced beforehand, like a reused WAL): %s. eddy's SQLite commit here writes about %d WAL pages (the put, its delivery and the trigger's cursor in one transaction, and the frames of the previous delivery's completion), JetStream's about one.",
		rate, strings.Join(parts, ", "), commitPages), nil
}

// pgNote measures PostgreSQL alone at the scenario's rate: one autocommit
// INSERT transaction of a row like the put's, on one connection, from
// just before the call to its return. It is the floor under eddy on
// PostgreSQL, whose write is one such transaction (one round trip, one
// WAL flush) with more statements in it.
func pgNote(ctx context.Context, c harness.Config, n int) (string, error) {
	raw, err := harness.OpenRawTable(ctx, c.PGAdminURL, 1)
	if err != nil {
		return "", fmt.Errorf("postgres alone: %w", err)
	}
	defer raw.Close() //nolint:errcheck // best effort at the end of the scenario
	ds := make([]time.Duration, 0, n)
	err = harness.Paced(ctx, rate, warm+n, func(i int) error {
		t0 := time.Now()
		if err := raw.Insert(ctx, fmt.Sprintf(`{"k":%d}`, i)); err != nil {
			return err
		}
		if i >= warm {
			ds = append(ds, time.Since(t0))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("postgres alone: %w", err)
	}
	return fmt.Sprintf("PostgreSQL alone in this run, at %d/s (p50/p99 of one autocommit INSERT transaction of a row like the put's, on the same server, one connection, after %d warm-up ones): %s/%s ms. eddy's write on PostgreSQL is one such transaction (one round trip, one WAL flush) that also writes the entity, the delivery and the trigger's cursor.",
		rate, warm, report.Num(harness.Quantile(ds, 0.5)), report.Num(harness.Quantile(ds, 0.99))), nil
}

// measure runs one system: warm-up, then n paced messages, and returns
// their latencies from the send and from the send's return.
func measure(ctx context.Context, c harness.Config, s system, n int) (fromSend, fromAck []time.Duration, err error) {
	p := newProbe(warm, n)
	send, done, err := s.setup(ctx, c, p)
	if err != nil {
		return nil, nil, err
	}
	defer func() { err = errors.Join(err, done()) }()
	paced := func(from, to int) error {
		return harness.Paced(ctx, rate, to-from, func(i int) error {
			p.send(from + i)
			defer p.ack(from + i)
			return send(ctx, from+i)
		})
	}
	if err := paced(0, warm); err != nil {
		return nil, nil, err
	}
	if err := p.wait(ctx, 0, warm, 30*time.Second); err != nil {
		return nil, nil, fmt.Errorf("warm-up: %w", err)
	}
	if err := paced(warm, warm+n); err != nil {
		return nil, nil, err
	}
	if err := p.wait(ctx, warm, warm+n, 10*time.Second); err != nil {
		return nil, nil, err
	}
	return p.latencies(), p.afterAck(), nil
}
