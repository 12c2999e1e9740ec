package main

import (
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/server"
	"github.com/eddy-run/eddy/watch"
)

// TestServeLimitFlags: the limit flags default to the packages' safe
// defaults, parse into the server, hub and budget, and refuse nonsense.
func TestServeLimitFlags(t *testing.T) {
	t.Parallel()
	parse := func(args ...string) (*serveOptions, error) {
		o := &serveOptions{}
		cmd := &cobra.Command{}
		o.bind(cmd, func(string) string { return "" })
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		return o, o.validate()
	}
	o, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	c := o.limits.conns()
	if c.ReadTimeout != server.DefaultReadTimeout || c.WriteTimeout != server.DefaultWriteTimeout || c.IdleTimeout != server.DefaultIdleTimeout || c.MaxConns != server.DefaultMaxConns {
		t.Errorf("default conns %+v", c)
	}
	w := o.config("d", nil).Watch
	if w.WriteTimeout != watch.DefaultWriteTimeout || w.MaxStreams != watch.DefaultMaxStreams || w.MaxStreamsPerKey != watch.DefaultMaxStreamsPerKey {
		t.Errorf("default watch %+v", w)
	}
	if b := o.limits.whenBudget(); b != predicate.DefaultBudget {
		t.Errorf("default budget %+v", b)
	}
	o, err = parse("--read-timeout=5s", "--write-timeout=1m", "--idle-timeout=10s", "--max-connections=100",
		"--stream-write-timeout=3s", "--max-streams=50", "--max-streams-per-token=5", "--when-cost-budget=2000000", "--when-time-budget=250ms")
	if err != nil {
		t.Fatal(err)
	}
	if c := o.limits.conns(); c != (server.ConnLimits{ReadTimeout: 5 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 10 * time.Second, MaxConns: 100}) {
		t.Errorf("conns %+v", c)
	}
	if w := o.config("d", nil).Watch; w.WriteTimeout != 3*time.Second || w.MaxStreams != 50 || w.MaxStreamsPerKey != 5 {
		t.Errorf("watch %+v", w)
	}
	if b := o.limits.whenBudget(); b != (predicate.Budget{Cost: 2_000_000, Wall: 250 * time.Millisecond}) {
		t.Errorf("budget %+v", b)
	}
	for _, bad := range [][]string{{"--read-timeout=0"}, {"--max-connections=0"}, {"--max-streams=0"}, {"--max-streams-per-token=0"},
		{"--when-cost-budget=10"}, {"--when-time-budget=0s"}, {"--stream-write-timeout=-1s"}} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
