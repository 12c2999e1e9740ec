// Command eddybench runs eddy and real peer systems (NATS JetStream, etcd
// and raw PostgreSQL) on this machine in one run, and reports each of
// eddy's figures next to the peer's, with their ratio, as a Markdown
// table (stdout and -out) and one SVG chart per scenario (-svg).
//
// Scenarios (-scenarios, default all):
//
//  1. durable append: commits/s into one space, against JetStream
//     synchronous publish and raw PostgreSQL INSERT transactions, and
//     with a trigger on every commit against without;
//  2. commit to consumer: latency from a commit to an in-process trigger
//     function starting, against a JetStream durable consumer receiving;
//  3. watch fan-out: 1,000 and 10,000 watchers, against etcd watchers;
//  4. trigger matching: µs per row through the match index, against
//     evaluating every CEL program;
//  5. catch-up: rows/s of a watcher, a pull reader and a trigger, against
//     a raw PostgreSQL scan of the same rows;
//  6. HTTP writes: commits/s through the HTTP API with 1 and 8 writers on
//     SQLite, against the same writes in process.
//
// -quick runs every scenario with smaller sizes (make bench-quick);
// -cpuprofile DIR writes a CPU profile per scenario, for RESULTS.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/eddy-run/eddy/bench/internal/durable"
	"github.com/eddy-run/eddy/bench/internal/fanout"
	"github.com/eddy-run/eddy/bench/internal/harness"
)

func main() {
	switch {
	case fanout.IsClient():
		os.Exit(fanout.RunClients())
	case durable.IsChild():
		os.Exit(durable.RunChild())
	}
	opts := options{}
	flag.BoolVar(&opts.quick, "quick", false, "reduced sizes (under 2 minutes)")
	flag.StringVar(&opts.scenarios, "scenarios", "1,2,3,4,5,6", "comma-separated scenarios to run")
	flag.StringVar(&opts.out, "out", "results/latest.md", "Markdown results file (\"\" for stdout only)")
	flag.StringVar(&opts.svg, "svg", "results/", "directory for the SVG charts (\"\" for none)")
	flag.StringVar(&opts.profile, "cpuprofile", "", "directory for a CPU profile per scenario (scenario-N.cpu.pprof; \"\" for none)")
	flag.StringVar(&opts.pg, "pg", harness.PGURLFromEnv(), "PostgreSQL server (a fresh database is created per measurement)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	err := run(ctx, opts, logger)
	stop()
	if err != nil {
		logger.Error("eddybench failed", "err", err)
		os.Exit(1)
	}
}

// options are the command-line flags.
type options struct {
	quick     bool
	scenarios string
	out, svg  string
	profile   string
	pg        string
}

// selected parses -scenarios.
func (o options) selected() ([]int, error) {
	var ids []int
	for f := range strings.SplitSeq(o.scenarios, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || scenarios[id] == nil {
			return nil, fmt.Errorf("-scenarios: unknown scenario %q (want 1 to 6)", f)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
