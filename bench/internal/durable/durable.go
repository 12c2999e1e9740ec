// Package durable is scenario 1, durable append: commits/s into one
// space with 1 and 16 writers, eddy on SQLite (strict and relaxed
// durability) and on PostgreSQL, against
// JetStream synchronous publish on file storage (each publish waits for
// its ack) and raw PostgreSQL single-row INSERT transactions; and eddy on
// SQLite and on PostgreSQL with a trigger on every commit against eddy
// without one. Each
// figure is set beside the disk's own write-and-sync rate in the run.
//
// Every writer of eddy commits one put of a new entity per request
// through changelog.Log.Write; every JetStream writer publishes a message
// of the same JSON to the stream; every raw writer runs one autocommit
// INSERT of it. Each system runs in a child process of its own (so no
// system pays for another's heap, and each runs with the Go runtime set
// up as it ships); all are open at once and measured in rounds, one
// after the other within a round, and each figure is the best of its
// rounds: a burst of load from elsewhere on the machine costs a round,
// not the comparison.
package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/bench/internal/harness"
	"github.com/eddy-run/eddy/bench/internal/report"
)

// writerCounts are the concurrencies measured.
var writerCounts = []int{1, 16}

// op is one commit of the system under test.
type op func(ctx context.Context, i int64) error

// system is one thing measured; open starts an instance of it.
type system struct {
	name string
	open func(context.Context, harness.Config) (instance, error)
}

// instance is an open system: its op, what to wait for after a
// measurement (nil: nothing) and its cleanup.
type instance struct {
	op     op
	settle func(context.Context) error
	close  func() error
	// served marks eddy, measured with the runtime as eddy serve sets it
	// up (harness.AsServed).
	served bool
}

// figures maps a writer count to a figure (commits/s, or µs of CPU a
// commit).
type figures map[int]float64

// results are every system's figures, by system name.
type results struct {
	// rate is the best round's commits/s.
	rate map[string]figures
	// cpu is this process's CPU time a commit, in µs, in the round rate
	// comes from.
	cpu map[string]figures
}

// Names of the systems, also their pprof labels.
const (
	eddySQLite = "eddy sqlite"
	eddyRelax  = "eddy sqlite relaxed"
	eddyPG     = "eddy postgres"
	eddyTrig   = "eddy sqlite trigger"
	eddyPGTrig = "eddy postgres trigger"
	jetStream  = "jetstream"
	jsSync     = "jetstream fsync always"
	rawInsert  = "raw insert"
)

var systems = []system{
	{eddySQLite, func(ctx context.Context, c harness.Config) (instance, error) {
		return openEddy(ctx, c, harness.SQLite)
	}},
	{eddyRelax, func(ctx context.Context, c harness.Config) (instance, error) {
		return openEddyWith(ctx, c, harness.SQLite, func(cfg *eddy.Config) { cfg.Durability = eddy.DurabilityRelaxed })
	}},
	{eddyPG, func(ctx context.Context, c harness.Config) (instance, error) {
		return openEddy(ctx, c, harness.Postgres)
	}},
	{jetStream, func(ctx context.Context, c harness.Config) (instance, error) {
		return openJetStream(ctx, c, false)
	}},
	{jsSync, func(ctx context.Context, c harness.Config) (instance, error) {
		return openJetStream(ctx, c, true)
	}},
	{rawInsert, openRaw},
	{eddyTrig, func(ctx context.Context, c harness.Config) (instance, error) {
		return openTriggered(ctx, c, harness.SQLite)
	}},
	{eddyPGTrig, func(ctx context.Context, c harness.Config) (instance, error) {
		return openTriggered(ctx, c, harness.Postgres)
	}},
}

// Run starts every system in a child process of its own, measures them
// in rounds and compares them.
func Run(ctx context.Context, c harness.Config) (report.Section, error) {
	sec := report.Section{Title: "Durable append (commits/s into one space)"}
	rounds, window := harness.Pick(c, 2, 3), harness.Pick(c, 500*time.Millisecond, time.Second)
	children := make([]*harness.Child, len(systems))
	for i, s := range systems {
		ch, err := startChild(ctx, c, s.name)
		if err != nil {
			return sec, fmt.Errorf("durable append: %w", err)
		}
		defer ch.Close() //nolint:errcheck // best effort at the end of the scenario
		children[i] = ch
	}
	best := results{rate: map[string]figures{}, cpu: map[string]figures{}}
	for r := range rounds {
		for i, s := range systems {
			c.Log.Info("durable append", "round", r+1, "system", s.name)
			got, err := measureIn(children[i], window)
			if err != nil {
				return sec, fmt.Errorf("durable append: %w", err)
			}
			best.keep(s.name, got)
		}
	}
	sec.Rows = rows(best.rate)
	disk, err := diskNote(ctx, c)
	if err != nil {
		return sec, fmt.Errorf("durable append: %w", err)
	}
	sec.Notes = []string{
		fmt.Sprintf("Best of %d rounds of %v per figure (every system measured once per round, in turn), after a warm-up of %v; one space, one put of a new entity per commit.", rounds, window, window/5),
		"Every system runs in a child process of its own, open for the whole scenario and idle while the others are measured, so its heap, its garbage collector and its CPU time are its own.",
		"eddy: SQLite in WAL mode with synchronous=FULL (fsync per group commit); PostgreSQL with its defaults (synchronous_commit=on). Relaxed: eddy.Config.Durability relaxed (serve --durability relaxed), SQLite synchronous=NORMAL in WAL mode (no fsync per commit), compared with JetStream's default store, which does not fsync per message either.",
		"JetStream: the default file store acks after writing to the OS and fsyncs every 2 minutes; \"fsync always\" sets sync_interval: always. Writers share one connection and wait for each ack.",
		"Raw PostgreSQL: one autocommit INSERT of the same JSON into a table with a bigserial key, one pooled connection per writer, same server.",
		"With a trigger: eddy (strict) with a trigger on every note calling a go function that writes nothing (delivery ordering none, concurrency 16); each commit's delivery is written in the commit's transaction and its completion afterwards. Its figure counts commits whose function has run: the window plus the time the deliveries still queued at its end take.",
		harness.ServedNote,
		scalingNote(best.rate),
		cpuNote(best.cpu),
		disk,
	}
	return sec, nil
}

// scalingNote gives the peers' own 16 ÷ 1 writer ratios in this run, the
// context of eddy's: a store whose one writer already waits for little
// has little for group commit to share (raw PostgreSQL's ratio bounds
// what eddy on PostgreSQL can show).
func scalingNote(best map[string]figures) string {
	ratios := eachSystem([]label{
		{"raw PG INSERT transactions", rawInsert},
		{"JetStream with fsync always", jsSync},
		{"JetStream's default store", jetStream},
		{"eddy (SQLite, relaxed)", eddyRelax},
	}, best, func(f figures) (string, bool) { return report.Num(f[16]/f[1]) + "×", f[1] > 0 })
	return "16 writers ÷ 1 writer of the others in this run: " + ratios + "."
}

// label names a system of the run in a note.
type label struct{ name, key string }

// eachSystem lists, for every labelled system whose figures format
// accepts, its name and what format makes of them.
func eachSystem(labels []label, fs map[string]figures, format func(figures) (string, bool)) string {
	var parts []string
	for _, l := range labels {
		if s, ok := format(fs[l.key]); ok {
			parts = append(parts, l.name+" "+s)
		}
	}
	return strings.Join(parts, ", ")
}

// diskNote measures the disk alone, back to back: the most commits per
// second one writer can wait for, at one page per sync (about what
// JetStream writes per message) and at six (an eddy SQLite commit of one
// put wrote about six WAL pages until round 9's rowid commits table; 4.3
// since, counted with strace; six is kept so runs compare).
func diskNote(ctx context.Context, c harness.Config) (string, error) {
	n := harness.Pick(c, 300, 1000)
	var parts []string
	for _, pages := range []int{1, 6} {
		run, err := harness.DiskSync(ctx, c.Dir, pages, n, 0)
		if err != nil {
			return "", err
		}
		var sum time.Duration
		for _, d := range run.Latencies {
			sum += d
		}
		parts = append(parts, fmt.Sprintf("%d page(s) %s syncs/s, %s µs of CPU each", pages,
			report.Num(float64(n)/sum.Seconds()), report.Num(micros(run.CPUPerSync()))))
	}
	return fmt.Sprintf("The disk alone in this run (%d writes each followed by fdatasync(2), back to back, into a file synced beforehand like a reused WAL): %s; the one-writer rows of strict systems cannot pass these, and a commit that waits for its sync pays that CPU too.", n, strings.Join(parts, ", ")), nil
}

// startChild starts the child process measuring the system name, with
// a scratch directory of its own, and waits until it is ready.
func startChild(ctx context.Context, c harness.Config, name string) (*harness.Child, error) {
	dir := filepath.Join(c.Dir, "durable-"+slug(name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ch, err := harness.StartChild(ctx, c, name, append(c.ChildEnv(dir), envSystem+"="+name))
	if err != nil {
		return nil, err
	}
	if _, err := ch.Expect("ready"); err != nil {
		return nil, errors.Join(err, ch.Close())
	}
	return ch, nil
}

// measureIn has a child measure its system for window at every writer
// count and returns the round's figures.
func measureIn(ch *harness.Child, window time.Duration) (round, error) {
	if err := ch.Send("measure " + window.String() + "\n"); err != nil {
		return round{}, err
	}
	j, err := ch.Expect("result ")
	if err != nil {
		return round{}, err
	}
	var r round
	return r, json.Unmarshal([]byte(j), &r)
}

// keep keeps, per writer count, the better of name's best figures and
// r's (the CPU a commit of the round the best rate comes from).
func (best results) keep(name string, r round) {
	if best.rate[name] == nil {
		best.rate[name], best.cpu[name] = figures{}, figures{}
	}
	for w, v := range r.Rate {
		if v > best.rate[name][w] {
			best.rate[name][w], best.cpu[name][w] = v, r.CPU[w]
		}
	}
}

// measure runs in's op for window at every writer count, after a
// warm-up when warmUp is set, and returns the figures.
func measure(ctx context.Context, window time.Duration, in instance, warmUp bool) (round, error) {
	if warmUp {
		if _, err := harness.Throughput(ctx, 1, window/5, in.op); err != nil {
			return round{}, err
		}
	}
	r := round{Rate: figures{}, CPU: figures{}}
	for _, w := range writerCounts {
		err := harness.Labeled(ctx, "writers", strconv.Itoa(w), func(ctx context.Context) (err error) {
			r.Rate[w], r.CPU[w], err = throughput(ctx, w, window, in)
			return err
		})
		if err != nil {
			return round{}, err
		}
	}
	return r, nil
}

// throughput is harness.Throughput of in's op, with this process's CPU
// time a commit in µs; for a system with a settle, it counts the time
// (and the CPU) until settled too (commits per second with their
// background work done).
func throughput(ctx context.Context, writers int, window time.Duration, in instance) (rate, cpuPer float64, err error) {
	start, cpu := time.Now(), harness.CPUNow()
	v, err := harness.Throughput(ctx, writers, window, in.op)
	if err != nil {
		return 0, 0, err
	}
	if in.settle != nil {
		wrote := time.Since(start)
		if err := in.settle(ctx); err != nil {
			return 0, 0, err
		}
		v *= wrote.Seconds() / time.Since(start).Seconds()
	}
	commits := v * time.Since(start).Seconds()
	if commits <= 0 {
		return v, 0, nil
	}
	return v, micros(harness.CPUNow().Since(cpu).Total()) / commits, nil
}

// micros is d in microseconds.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// cpuNote gives this process's CPU time a commit of each system: what a
// one-writer commit pays besides waiting for its sync, and how much of
// a group's work its writers share.
func cpuNote(cpu map[string]figures) string {
	per := eachSystem([]label{
		{"eddy (SQLite)", eddySQLite},
		{"eddy (SQLite, relaxed)", eddyRelax},
		{"JetStream with fsync always", jsSync},
		{"JetStream's default store", jetStream},
		{"eddy (SQLite) + trigger", eddyTrig},
		{"eddy (PostgreSQL)", eddyPG},
		{"raw PG INSERT transactions", rawInsert},
	}, cpu, func(f figures) (string, bool) { return report.Num(f[1]) + " / " + report.Num(f[16]), true })
	return "CPU time a commit of each system's own process in each figure's round, 1 / 16 writers, in µs (user and system; JetStream's server runs in its process with its client, PostgreSQL's does not, so the PostgreSQL figures are eddy's or the client's side alone): " + per + "."
}

// rows turns the figures into the comparisons of issue 15: strict
// durability against the peers that also fsync every acknowledged write
// (raw PostgreSQL INSERT transactions, JetStream with fsync always), relaxed
// durability against JetStream's default store, which does not.
func rows(f map[string]figures) []report.Row {
	row := func(measure, eddy string, ev float64, peer string, pv float64) report.Row {
		return report.Row{Measure: measure, Unit: "commits/s", Eddy: eddy, EddyVal: ev, Peer: peer, PeerVal: pv}
	}
	const eS, eP, eR, eT = "eddy (SQLite)", "eddy (PostgreSQL)", "eddy (SQLite, relaxed)", "eddy (SQLite) + trigger"
	sqlite, pg, js, sync, raw, relaxed := f[eddySQLite], f[eddyPG], f[jetStream], f[jsSync], f[rawInsert], f[eddyRelax]
	trig, pgTrig := f[eddyTrig], f[eddyPGTrig]
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
		row("1 writer, with a trigger", eT, trig[1], eS, sqlite[1]),
		row("16 writers, with a trigger", eT, trig[16], eS, sqlite[16]),
		row("1 writer, with a trigger", eP+" + trigger", pgTrig[1], eP, pg[1]),
		row("16 writers, with a trigger", eP+" + trigger", pgTrig[16], eP, pg[16]),
	}
}
