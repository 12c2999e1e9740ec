package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/eddy-run/eddy/bench/internal/harness"
	"github.com/eddy-run/eddy/bench/internal/report"
)

// describe fills the run's description: date, machine, versions.
func describe(ctx context.Context, c harness.Config) report.Meta {
	pg, err := harness.PGVersion(ctx, c.PGAdminURL)
	if err != nil {
		pg = "unreachable: " + err.Error()
	}
	mode := "full"
	if c.Quick {
		mode = "quick"
	}
	return report.Meta{
		Date:     time.Now().UTC().Format("2006-01-02 15:04 MST"),
		Mode:     mode,
		Machine:  machine(),
		Go:       runtime.Version(),
		Postgres: pg,
		NATS:     harness.NATSVersion + " (embedded, file storage)",
		Etcd:     harness.EtcdVersion + " (embedded, single member)",
		Notes: []string{
			"Every peer runs in this process or as a child of it (scenario 1: every system, eddy too, in a child of its own), on loopback, back to back with eddy's measurement.",
			fmt.Sprintf("Open-file limit: %d.", harness.FileLimit()),
		},
	}
}

// machine describes the CPU, memory and kernel.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for l := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	load, _ := os.ReadFile("/proc/loadavg")
	loads := strings.Fields(string(load))
	if len(loads) > 3 {
		loads = loads[:3]
	}
	return fmt.Sprintf("%s, %d CPUs, %s RAM, %s/%s %s; load average at start %s", cpu, runtime.NumCPU(), memTotal(),
		runtime.GOOS, runtime.GOARCH, strings.TrimSpace(string(kernel)), strings.Join(loads, " "))
}

// memTotal reads MemTotal from /proc/meminfo.
func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "?"
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return fmt.Sprintf("%.1f GiB", kb/(1<<20))
		}
	}
	return "?"
}
