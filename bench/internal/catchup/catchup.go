// Package catchup is scenario 5, catch-up: rows/s of a reader starting
// from the beginning of a space of 1,000,000 rows (quick: 100,000) on
// PostgreSQL, for a watcher (the HTTP ndjson stream), a pull reader (GET
// .../log in pages of 1,000, the raw log a forwarding consumer reads) and
// a trigger (the engine's evaluator, start "beginning"), against a raw
// PostgreSQL scan of the same rows in seq order through pgx.
package catchup

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/eddy-run/eddy/bench/internal/harness"
	"github.com/eddy-run/eddy/bench/internal/report"
)

// minShare is issue 5's target: catch-up at half the raw read or more.
const minShare = 0.5

// Run populates a space and times every reader over it.
func Run(ctx context.Context, c harness.Config) (report.Section, error) {
	rows := harness.Pick(c, 100_000, 1_000_000)
	sec := report.Section{Title: fmt.Sprintf("Catch-up over %s rows (rows/s)", report.Num(float64(rows)))}
	e, err := harness.OpenEddy(ctx, c, harness.Postgres)
	if err != nil {
		return sec, err
	}
	defer e.Close()
	start := time.Now()
	if err := populate(ctx, e, rows); err != nil {
		return sec, err
	}
	took := time.Since(start).Round(time.Second)
	c.Log.Info("catch-up populated", "rows", rows, "took", took)
	readers := []struct {
		name   string
		read   func(context.Context, *harness.Eddy, int64) (int64, error)
		served bool // eddy's, run as eddy serve sets the runtime up
	}{
		{"raw", rawScan, false}, {"watcher", watcher, true}, {"pull reader", pull, true}, {"trigger", trigger, true},
		{"raw again", rawScan, false}, {"raw, the pull's columns", rawPullScan, false},
	}
	got := map[string]float64{}
	for _, r := range readers {
		c.Log.Info("catch-up", "reader", r.name)
		t, cpu := time.Now(), processCPU()
		var n int64
		err := harness.Labeled(ctx, "reader", r.name, harness.AsServedIf(r.served, func(ctx context.Context) (err error) {
			n, err = r.read(ctx, e, int64(rows))
			return err
		}))
		if err != nil {
			return sec, fmt.Errorf("catch-up: %s: %w", r.name, err)
		}
		if n != int64(rows) {
			return sec, fmt.Errorf("catch-up: %s read %d rows, want %d", r.name, n, rows)
		}
		got[r.name] = float64(n) / time.Since(t).Seconds()
		c.Log.Info("catch-up read", "reader", r.name, "took", time.Since(t).Round(time.Millisecond),
			"cpu", (processCPU() - cpu).Round(time.Millisecond))
	}
	raw := max(got["raw"], got["raw again"])
	for _, name := range []string{"watcher", "pull reader", "trigger"} {
		sec.Rows = append(sec.Rows, report.Row{Measure: name, Unit: "rows/s", Eddy: "eddy " + name, EddyVal: got[name],
			Peer: "raw PG scan", PeerVal: raw}.RatioAtLeast(minShare, "≥ 0.50×"))
	}
	sec.Rows = append(sec.Rows, report.Row{Measure: "pull reader, against its columns alone", Unit: "rows/s", Eddy: "eddy pull reader", EddyVal: got["pull reader"],
		Peer: "raw PG scan, the pull's columns", PeerVal: got["raw, the pull's columns"]})
	sec.Notes = []string{
		fmt.Sprintf("One space of %s single-put commits on PostgreSQL, written in requests of 1,000 (took %v).", report.Num(float64(rows)), took),
		"Raw: SELECT seq, ts, actor, op, entity_type, entity_id, payload FROM commits WHERE space = $1 ORDER BY seq, scanned into Go values; the better of a scan before and after the eddy readers. Raw, the pull's columns (no target): the same scan of every column a pull page carries (receipt, provenance and changes too), after the others: what PostgreSQL alone takes to send them.",
		"Watcher: GET .../changes?watch=1&from=0 through eddy's HTTP server, read until the last row. Pull: GET .../log?after=N&limit=1000 through the same server on one keep-alive connection, whole commits with their changes and receipts, each page read whole. Trigger: a go function's trigger on task rows with start \"beginning\" and when int(entity.properties.n) % 1000 == 0 (0.1% of the rows), timed from saving it until its cursor reaches the head.",
		harness.ServedNote,
	}
	return sec, nil
}

// processCPU returns the user and system CPU time this process has used
// (0 where getrusage is unavailable): logged per reader, so a change's
// CPU per row can be compared run against run.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
