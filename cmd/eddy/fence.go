package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
)

// Fence timeouts, as the server takes them.
const (
	defaultFenceTimeout = 5 * time.Second
	maxFenceTimeout     = 60 * time.Second
)

// fenceAnswer is the answer of GET .../fence.
type fenceAnswer struct {
	Seq     int64    `json:"seq"`
	Done    bool     `json:"done"`
	Waiting []string `json:"waiting"`
}

// fenceFlags are the options of `eddy fence`.
type fenceFlags struct {
	triggers []string
	timeout  time.Duration
	asJSON   bool
}

func (a *app) fenceCommand() *cobra.Command {
	var f fenceFlags
	cmd := &cobra.Command{
		Use:   "fence SEQ [--triggers a,b] [--timeout 5s]",
		Short: "Wait until triggers have handled every row up to SEQ; exit 1 if they have not in time",
		Long: `Wait until the named triggers (every enabled one when --triggers is not
given) have evaluated every row <= SEQ and every delivery those rows caused
is finished (succeeded, failed, parked or discarded), or until --timeout
(at most 60s). SEQ is typically the Eddy-Seq header of your own write.
Exits 0 when done, 1 naming the triggers still waiting when not.`,
		Example: `  eddy fence 4190
  eddy fence 4190 --triggers stamp-completed --timeout 30s`,
		Args: exactArgs("SEQ"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			seq, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || seq < 0 {
				return usagef("SEQ %q: want a seq (an integer >= 0)", args[0])
			}
			if f.timeout < 0 || f.timeout > maxFenceTimeout {
				return usagef("--timeout %s: want a duration from 0s to 60s", f.timeout)
			}
			return a.fence(cmd, seq, f)
		}),
	}
	cmd.Flags().StringSliceVar(&f.triggers, "triggers", nil, "the triggers to wait for (default: every enabled one)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", defaultFenceTimeout, "how long the server waits at most")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the server's JSON answer (the exit code still says whether it is done)")
	return cmd
}

func (a *app) fence(cmd *cobra.Command, seq int64, f fenceFlags) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	ans, err := c.sp.Fence(cmd.Context(), seq, client.FenceParams{Triggers: f.triggers, Timeout: f.timeout})
	if err != nil {
		return err
	}
	if f.asJSON || a.formatted() {
		if err := a.show(view{value: ans, kind: "change", names: []string{strconv.FormatInt(ans.Seq, 10)}}, f.asJSON); err != nil {
			return err
		}
	} else if ans.Done {
		fmt.Fprintf(a.stdout, "seq %d: done\n", ans.Seq)
	}
	if !ans.Done {
		return fmt.Errorf("seq %d: not done after %s; waiting for %s", ans.Seq, f.timeout, strings.Join(ans.Waiting, ", "))
	}
	return nil
}
