package main

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/internal/gcpace"
	"github.com/eddy-run/eddy/internal/polltest"
)

// TestServeRetentionFlags checks that the retention flags parse into the
// eddy.Config serve opens, with no pruning by default.
func TestServeRetentionFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		want     changelog.Retention
		interval time.Duration
	}{
		{"defaults", nil, changelog.Retention{}, time.Minute},
		{"all", []string{"--retain-age", "720h", "--retain-rows", "1000000", "--housekeep-interval", "30s"},
			changelog.Retention{MaxAge: 720 * time.Hour, MaxRows: 1_000_000}, 30 * time.Second},
		{"rows only", []string{"--retain-rows=5"}, changelog.Retention{MaxRows: 5}, time.Minute},
	}
	for _, tt := range tests {
		var o serveOptions
		cmd := &cobra.Command{}
		o.bind(cmd, func(string) string { return "" })
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatalf("%s: parse: %v", tt.name, err)
		}
		if err := o.validate(); err != nil {
			t.Fatalf("%s: validate: %v", tt.name, err)
		}
		cfg := o.config("d", nil)
		if cfg.Retention.MaxAge != tt.want.MaxAge || cfg.Retention.MaxRows != tt.want.MaxRows || cfg.HousekeepInterval != tt.interval || cfg.DataDir != "d" {
			t.Errorf("%s: config retention %+v every %s, want %+v every %s", tt.name, cfg.Retention, cfg.HousekeepInterval, tt.want, tt.interval)
		}
	}
}

// TestServeTriggerFlags checks that the trigger engine flags reach the
// eddy.Config, with the engine's defaults and the engine on by default.
func TestServeTriggerFlags(t *testing.T) {
	t.Parallel()
	parse := func(args ...string) eddy.Config {
		var o serveOptions
		cmd := &cobra.Command{}
		o.bind(cmd, func(string) string { return "" })
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		if err := o.validate(); err != nil {
			t.Fatal(err)
		}
		return o.config("d", nil)
	}
	def := parse()
	if def.NoEngine || def.Engine.LeaseTTL != engine.DefaultLeaseTTL || def.Engine.Poll != engine.DefaultPoll || def.Engine.Batch != engine.DefaultBatch {
		t.Fatalf("defaults: %+v no-engine %v", def.Engine, def.NoEngine)
	}
	cfg := parse("--no-triggers", "--lease-ttl", "5s", "--trigger-poll", "250ms", "--trigger-batch", "200")
	if !cfg.NoEngine || cfg.Engine.LeaseTTL != 5*time.Second || cfg.Engine.Poll != 250*time.Millisecond || cfg.Engine.Batch != 200 {
		t.Fatalf("set: %+v no-engine %v", cfg.Engine, cfg.NoEngine)
	}
}

// TestServeRetentionFlagsInvalid checks that bad values are usage errors
// before anything opens.
func TestServeRetentionFlagsInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--retain-age", "-1h"}, "--retain-age must not be negative"},
		{[]string{"--retain-rows", "-1"}, "--retain-rows must not be negative"},
		{[]string{"--housekeep-interval", "0s"}, "--housekeep-interval must be positive"},
		{[]string{"--retain-rows", "many"}, "invalid argument"},
		{[]string{"--lease-ttl", "10ms"}, "--lease-ttl must be at least 300ms"},
		{[]string{"--trigger-poll", "0s"}, "--trigger-poll must be positive"},
		{[]string{"--trigger-batch", "0"}, "--trigger-batch must be between 1 and 100000"},
	}
	for _, tt := range tests {
		var stderr strings.Builder
		a := &app{stdout: io.Discard, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
		args := append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, tt.args...)
		if code := a.run(context.Background(), args); code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), exitUsage, tt.want)
		}
	}
}

// TestServeJournalFlags checks that the journal flags reach the
// eddy.Config (defaults 2 s and 30 days) and that bad values are usage
// errors.
func TestServeJournalFlags(t *testing.T) {
	t.Parallel()
	parse := func(args ...string) (eddy.Config, error) {
		var o serveOptions
		cmd := &cobra.Command{}
		o.bind(cmd, func(string) string { return "" })
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		return o.config("d", nil), o.validate()
	}
	if cfg, err := parse(); err != nil || cfg.JournalSafeWindow != 2*time.Second || cfg.JournalRetention != 30*24*time.Hour {
		t.Fatalf("defaults: %v %v %v", cfg.JournalSafeWindow, cfg.JournalRetention, err)
	}
	if cfg, err := parse("--safe-window-seconds=0.5", "--journal-retention-days=0.5"); err != nil || cfg.JournalSafeWindow != 500*time.Millisecond || cfg.JournalRetention != 12*time.Hour {
		t.Fatalf("set: %v %v %v", cfg.JournalSafeWindow, cfg.JournalRetention, err)
	}
	for _, bad := range [][]string{{"--safe-window-seconds=0"}, {"--journal-retention-days=0"}} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%v: no usage error", bad)
		}
	}
}

// TestServeDurabilityFlag: --durability is strict by default, relaxed on
// request, and anything else a usage error.
func TestServeDurabilityFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
		ok   bool
	}{{nil, eddy.DurabilityStrict, true}, {[]string{"--durability", "relaxed"}, eddy.DurabilityRelaxed, true}, {[]string{"--durability=fast"}, "", false}} {
		var o serveOptions
		cmd := &cobra.Command{}
		o.bind(cmd, func(string) string { return "" })
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		err := o.validate()
		if (err == nil) != tc.ok {
			t.Fatalf("%v: validate = %v", tc.args, err)
		}
		if tc.ok && o.config("d", nil).Durability != tc.want {
			t.Errorf("%v: durability %q, want %q", tc.args, o.config("d", nil).Durability, tc.want)
		}
	}
}

// TestServeGCPaceFlag: --gc-min-interval is 100ms by default and starts
// the pacer (a process allocating hundreds of MB a second gets a GC
// percent above the default, and the default back on stop); 0 or a GOGC
// in the environment leave the percent alone, and a negative interval is
// a usage error.
func TestServeGCPaceFlag(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	parse := func(args ...string) (serveOptions, error) {
		var o serveOptions
		cmd := &cobra.Command{}
		o.bind(cmd, func(string) string { return "" })
		if err := cmd.ParseFlags(args); err != nil {
			return o, err
		}
		return o, o.validate()
	}
	noEnv := func(string) string { return "" }
	quiet := slog.New(slog.DiscardHandler)
	o, err := parse()
	if err != nil || o.gcMinInterval != 100*time.Millisecond {
		t.Fatalf("default: %v, %v; want 100ms", o.gcMinInterval, err)
	}
	loaded := func() int {
		var keep []byte
		for range 64 << 10 { // 256 MiB of garbage, as fast as it goes
			keep = make([]byte, 4096)
		}
		runtime.KeepAlive(keep)
		runtime.GC()
		runtime.GC() // the first cycle's cleanup has run by the second's end
		return gcpace.Percent()
	}
	stop := o.startGCPace(noEnv, quiet)
	// The pacer runs after each cycle, on the runtime's cleanup goroutine.
	polltest.Until(t, "a GC percent above 100 under load", func() bool { return loaded() > 100 })
	stop()
	if p := gcpace.Percent(); p != 100 {
		t.Errorf("after stop: GC percent %d, want 100", p)
	}
	gogc := func(k string) string {
		if k == "GOGC" {
			return "100"
		}
		return ""
	}
	stop = o.startGCPace(gogc, quiet)
	if p := loaded(); p != 100 {
		t.Errorf("GOGC set: GC percent %d under load, want 100 (the operator's)", p)
	}
	stop()
	if o, err = parse("--gc-min-interval", "0"); err != nil {
		t.Fatal(err)
	}
	stop = o.startGCPace(noEnv, quiet)
	if p := loaded(); p != 100 {
		t.Errorf("--gc-min-interval 0: GC percent %d under load, want 100", p)
	}
	stop()
	if _, err := parse("--gc-min-interval=-1s"); err == nil {
		t.Error("--gc-min-interval=-1s: no usage error")
	}
}
