// Package fanout is scenario 3, watch fan-out: 1,000 and 10,000 watchers
// of one space (eddy's ndjson stream, served by server.New on SQLite)
// against as many etcd watchers of one key prefix, with the clients in a
// child process (each side's sockets count against its own open-file
// limit). It reports, per watcher count, the latency from the start of
// a commit to each watcher reading it (p50, p99), to the last watcher
// reading it (p50, p99 over commits), the server's memory per idle
// watcher, and the processor time per commit of the server and of the
// clients, with the server's share in the kernel; at 10,000 watchers, a
// profile of both processes over the commits says which of the kernel's
// work that share is (kprof, where perf is installed).
package fanout

import (
	"context"
	"fmt"
	"runtime"

	"github.com/eddy-run/eddy/bench/internal/harness"
	"github.com/eddy-run/eddy/bench/internal/kprof"
	"github.com/eddy-run/eddy/bench/internal/report"
)

// Targets of issue 5 at 10,000 watchers.
const (
	maxAllP99  = 100 // ms, commit to all watchers
	maxKiB     = 16  // per idle watcher
	maxOfEtcd  = 2.0 // per-watcher memory against etcd's
	fdReserve  = 200 // descriptors kept for everything but the sockets
	targetSize = 10_000
)

// Run measures both systems at every watcher count.
func Run(ctx context.Context, c harness.Config) (report.Section, error) {
	sec := report.Section{Title: "Watch fan-out"}
	l := load{rate: 5, commits: harness.Pick(c, 10, 25)}
	limit := int(harness.FileLimit()) - fdReserve
	for _, n := range []int{1000, targetSize} {
		if n > limit {
			sec.Notes = append(sec.Notes, fmt.Sprintf("%d watchers capped at %d by the open-file limit.", n, limit))
			n = limit
		}
		l.profile = n >= targetSize
		c.Log.Info("watch fan-out", "system", "eddy", "watchers", n)
		var e, x figures
		err := harness.Labeled(ctx, "system", fmt.Sprintf("eddy %d", n), harness.AsServed(func(ctx context.Context) (err error) {
			e, err = eddyFigures(ctx, c, n, l)
			return err
		}))
		if err != nil {
			return sec, fmt.Errorf("watch fan-out: eddy, %d watchers: %w", n, err)
		}
		c.Log.Info("watch fan-out", "system", "etcd", "watchers", n)
		err = harness.Labeled(ctx, "system", fmt.Sprintf("etcd %d", n), func(ctx context.Context) (err error) {
			x, err = etcdFigures(ctx, c, n, l)
			return err
		})
		if err != nil {
			return sec, fmt.Errorf("watch fan-out: etcd, %d watchers: %w", n, err)
		}
		sec.Rows = append(sec.Rows, rows(n, e, x, l.commits)...)
		sec.Notes = append(sec.Notes, cpuNote(n, e, x, l.commits))
		if l.profile {
			sec.Notes = append(sec.Notes, kernelNote(n, e.Kernel, x.Kernel))
		}
		if e.Missing > 0 || x.Missing > 0 {
			sec.Notes = append(sec.Notes, fmt.Sprintf("%d watchers: %d eddy and %d etcd watchers missed rows.", n, e.Missing, x.Missing))
		}
	}
	sec.Notes = append(sec.Notes,
		fmt.Sprintf("%d commits at %d/s after the watchers are open; latency from just before the write (eddy Log.Write, etcd's in-process Put) to a watcher reading the row; \"all\" is per commit, to its last watcher.", l.commits, l.rate),
		"eddy: one HTTP/1.1 connection per watcher, GET .../changes?watch=1 with a bearer token.",
		fmt.Sprintf("etcd: one watch per watcher, each on its own gRPC watch stream, over %d client connections (a connection per watcher would add its HTTP/2 transport).", etcdConns),
		"Memory: growth of this (server) process's Go heap plus stacks, and of its RSS, from before the clients connect to when every watcher is open and idle, divided by the watchers.",
		harness.ServedNote,
	)
	return sec, nil
}

// kernelNote says where each process's samples went over the commits
// at n watchers (kprof), eddy's e and etcd's x: what the kernel did of
// the server's and the clients' time.
func kernelNote(n int, e, x kernelProfile) string {
	side := func(name string, k kernelProfile) string {
		if k.Err != nil {
			return name + ": not taken (" + k.Err.Error() + ")"
		}
		return fmt.Sprintf("%s server %s; its clients %s", name, kprof.Summary(k.Server), kprof.Summary(k.Clients))
	}
	return fmt.Sprintf("Kernel profile at %s watchers (perf record -g at %d Hz of the server and the clients over the commits, kernel frames by system call; a write(2) on loopback also runs the delivery into the reader's socket): %s. %s.",
		report.Num(float64(n)), kprof.Hz, side("eddy", e), side("etcd", x))
}

// rows compares eddy's figures e with etcd's x at n watchers, over
// commits commits.
func rows(n int, e, x figures, commits int) []report.Row {
	label := report.Num(float64(n)) + " watchers, "
	row := func(measure, unit string, ev, xv float64) report.Row {
		return report.Row{Measure: label + measure, Unit: unit, Lower: true, Eddy: "eddy watch", EddyVal: ev, Peer: "etcd watch", PeerVal: xv}
	}
	all := row("commit to all watchers p99", "ms", e.AllP99, x.AllP99)
	mem := row("memory per idle watcher", "KiB", e.GoKiB, x.GoKiB)
	if n >= targetSize {
		all = all.EddyAtMost(maxAllP99, fmt.Sprintf("< %d ms", maxAllP99))
		mem.Target = fmt.Sprintf("≤ %d KiB and ≤ %.0f× etcd", maxKiB, maxOfEtcd)
		met := e.GoKiB <= maxKiB && mem.Ratio() <= maxOfEtcd
		mem.Met = &met
	}
	es, ec, _ := e.perCommit(commits)
	xs, xc, _ := x.perCommit(commits)
	return []report.Row{
		row("delivery p50", "ms", e.P50, x.P50),
		row("delivery p99", "ms", e.P99, x.P99),
		row("commit to all watchers p50", "ms", e.AllP50, x.AllP50),
		all, mem,
		row("RSS per idle watcher", "KiB", e.RSSKiB, x.RSSKiB),
		row("server CPU per commit", "ms", es, xs),
		row("watch clients' CPU per commit", "ms", ec, xc),
	}
}

// cpuNote says where the processor time of a commit went at n watchers:
// with the clients on the same machine, a commit reaches its last
// watcher no sooner than the server's and the clients' time spread over
// every core, whatever the server does in user space.
func cpuNote(n int, e, x figures, commits int) string {
	es, ec, ek := e.perCommit(commits)
	xs, xc, xk := x.perCommit(commits)
	cores := float64(runtime.NumCPU())
	return fmt.Sprintf("CPU per commit at %d watchers: eddy server %.1f ms (%.0f%% in the kernel), its clients %.1f ms; etcd server %.1f ms (%.0f%% in the kernel), its clients %.1f ms. On %d cores, server plus clients put a floor of %.0f ms (eddy) and %.0f ms (etcd) under commit to all watchers; their time in the kernel alone, %.0f ms (eddy) and %.0f ms (etcd).",
		n, es, 100*ek, ec, xs, 100*xk, xc, int(cores), (es+ec)/cores, (xs+xc)/cores,
		e.kernelPerCommit(commits)/cores, x.kernelPerCommit(commits)/cores)
}
