package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
)

// replayPoll is how often `eddy triggers replay` polls the trigger's
// status while it waits.
const replayPoll = 200 * time.Millisecond

// deliveryStatusOrder is the order delivery counts are printed in.
var deliveryStatusOrder = []string{"pending", "running", "retrying", "succeeded", "failed", "parked", "discarded"}

// triggerStatus is a trigger's runtime status as the server shows it.
type triggerStatus client.TriggerStatus

// position is the status's cursor, head and lag on one line.
func (s triggerStatus) position() string {
	return fmt.Sprintf("cursor %d, head %d, lag %d", s.Cursor, s.Head, s.Lag)
}

// state is "enabled" or "disabled".
func (s triggerStatus) state() string {
	if s.Enabled {
		return "enabled"
	}
	return "disabled"
}

// counts lists the non-zero delivery counts in lifecycle order.
func (s triggerStatus) counts() string {
	var parts []string
	for _, st := range deliveryStatusOrder {
		if n := s.Deliveries[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", st, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// skipped lists the ranges skipped while disabled.
func (s triggerStatus) skipped() string {
	parts := make([]string, len(s.Skipped))
	for i, r := range s.Skipped {
		parts[i] = fmt.Sprintf("%d..%d", r.Lo, r.Hi)
	}
	return strings.Join(parts, ", ")
}

// lease describes who holds the trigger's lease.
func (s triggerStatus) lease(now time.Time) string {
	if s.Owner == "" {
		return fmt.Sprintf("none (epoch %d)", s.Epoch)
	}
	out := fmt.Sprintf("%s, epoch %d", s.Owner, s.Epoch)
	if s.LeaseExpires != nil {
		verb := "expires"
		if s.LeaseExpires.Before(now) {
			verb = "expired"
		}
		out += fmt.Sprintf(" (%s %s)", verb, s.LeaseExpires.UTC().Format(time.RFC3339))
	}
	return out
}

// printStatus writes the status at a glance.
func printStatus(w io.Writer, s triggerStatus, now time.Time) error {
	fmt.Fprintf(w, "trigger %s: %s\n", s.Trigger, s.state())
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  position\t%s (start %d)\n", s.position(), s.Start)
	if len(s.Skipped) > 0 {
		fmt.Fprintf(tw, "  skipped\t%s\n", s.skipped())
	}
	if s.Fired != nil {
		fmt.Fprintf(tw, "  last fired\t%s\n", s.Fired.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "  lease\t%s\n", s.lease(now))
	fmt.Fprintf(tw, "  deliveries\t%s\n", s.counts())
	if s.OldestOpen != nil {
		fmt.Fprintf(tw, "  oldest open\t%s (%s ago)\n", s.OldestOpen.UTC().Format(time.RFC3339), now.Sub(*s.OldestOpen).Round(time.Second))
	}
	return tw.Flush()
}

func (a *app) triggersEnableCommand() *cobra.Command {
	var skip, asJSON bool
	cmd := &cobra.Command{
		Use:   "enable NAME [--skip]",
		Short: "Enable a trigger; rows committed while it was disabled are evaluated unless --skip",
		Long: `Enable the trigger NAME (admin). The rows committed while it was disabled are
then evaluated, oldest first; with --skip they get the stance 'disabled'
instead and the cursor jumps to the head. Prints the trigger's position.`,
		Args: exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.triggerOp(cmd, args[0], "enable", func(sp *client.Space, ctx context.Context) (client.TriggerStatus, error) {
				return sp.EnableTrigger(ctx, args[0], skip)
			}, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&skip, "skip", false, "skip the rows committed while the trigger was disabled")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

func (a *app) triggersDisableCommand() *cobra.Command {
	return a.simpleTriggerOp("disable", "Disable a trigger: its cursor stands still until it is enabled", `Disable the trigger NAME (admin). Its cursor stands still; rows committed
meanwhile are evaluated when it is enabled again, unless 'enable --skip'.
Deliveries already created still run.`)
}

func (a *app) triggersResetCommand() *cobra.Command {
	return a.simpleTriggerOp("reset", "Reset a trigger to its start policy and discard its open deliveries", `Reset the trigger NAME (admin) as if it were newly created: its cursor moves
to its start policy (start head: the current head) and its open deliveries
are discarded. Also clears a trigger stalled by pruned history.`)
}

// simpleTriggerOp is a trigger operation that takes only NAME.
func (a *app) simpleTriggerOp(op, short, long string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   op + " NAME",
		Short: short,
		Long:  long,
		Args:  exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.triggerOp(cmd, args[0], op, func(sp *client.Space, ctx context.Context) (client.TriggerStatus, error) {
				return simpleTriggerOps[op](sp, ctx, args[0])
			}, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

// simpleTriggerOps are the trigger operations that take only NAME.
var simpleTriggerOps = map[string]func(*client.Space, context.Context, string) (client.TriggerStatus, error){
	"disable": (*client.Space).DisableTrigger, "reset": (*client.Space).ResetTrigger,
}

// triggerOpFunc sends one operation on a trigger.
type triggerOpFunc func(sp *client.Space, ctx context.Context) (client.TriggerStatus, error)

// triggerOp sends one operation on a trigger and prints its status.
func (a *app) triggerOp(cmd *cobra.Command, name, op string, send triggerOpFunc, asJSON bool) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	raw, err := send(c.sp, cmd.Context())
	if err != nil {
		return err
	}
	st := triggerStatus(raw)
	if asJSON || a.formatted() {
		return a.show(view{value: raw, kind: "trigger", names: []string{name}}, asJSON)
	}
	past := map[string]string{"enable": "enabled", "disable": "disabled", "reset": "reset"}[op]
	fmt.Fprintf(a.stdout, "trigger %s %s: %s\n", name, past, st.position())
	return nil
}

// replayFlags are the options of `eddy triggers replay`.
type replayFlags struct {
	from   int64
	noWait bool
	asJSON bool
}

func (a *app) triggersReplayCommand() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay NAME --from N [--no-wait]",
		Short: "Move a trigger's cursor back to N and evaluate the rows after it again",
		Long: `Move the cursor of the trigger NAME back to --from (admin): the rows after N
are evaluated again and matched rows delivered again (identical writes are
no-ops, so they leave no wake). Then, unless --no-wait, show the trigger's
cursor, head and lag every 200ms until the cursor reaches the head as of the
replay; Ctrl-C stops waiting, not the replay. Progress goes to stderr, on
one updating line on a terminal.`,
		Example: `  eddy triggers replay stamp-completed --from 0
  eddy triggers replay stamp-completed --from 4100 --no-wait`,
		Args: exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("from") {
				return usagef("missing --from N: the seq after which rows are evaluated again")
			}
			if f.from < 0 {
				return usagef("--from must not be negative")
			}
			return a.replay(cmd, args[0], f)
		}),
	}
	cmd.Flags().Int64Var(&f.from, "from", 0, "evaluate the rows after this seq again")
	cmd.Flags().BoolVar(&f.noWait, "no-wait", false, "return at once instead of showing progress until caught up")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the server's JSON answer (and do not wait)")
	return cmd
}

// replay posts the replay and, unless told not to, waits for the
// trigger to catch up.
func (a *app) replay(cmd *cobra.Command, name string, f replayFlags) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	raw, err := c.sp.ReplayTrigger(cmd.Context(), name, f.from)
	if err != nil {
		return err
	}
	if f.asJSON || a.formatted() {
		return a.show(view{value: raw, kind: "trigger", names: []string{name}}, f.asJSON)
	}
	st := triggerStatus(raw)
	fmt.Fprintf(a.stdout, "trigger %s replaying from %d: %s\n", name, f.from, st.position())
	if f.noWait {
		return nil
	}
	return a.waitCaughtUp(cmd.Context(), c, name, st)
}

// waitCaughtUp polls the trigger's status until its cursor reaches the
// head it had when the wait began, the trigger is disabled, or SIGINT or
// SIGTERM arrives.
func (a *app) waitCaughtUp(ctx context.Context, c *conn, name string, st triggerStatus) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	target := st.Head
	p := &progress{w: a.stderr, live: isTerminal(a.stderr)}
	tick := time.NewTicker(replayPoll)
	defer tick.Stop()
	for st.Enabled && st.Lag > 0 && st.Cursor < target {
		p.show(fmt.Sprintf("replaying %s: cursor %d/%d (lag %d)", name, st.Cursor, st.Head, st.Lag))
		select {
		case <-ctx.Done():
			p.end()
			fmt.Fprintf(a.stderr, "stopped waiting at %s; the replay goes on\n", st.position())
			return nil
		case <-tick.C:
		}
		next, err := a.fetchStatus(ctx, c, name)
		if err != nil {
			p.end()
			if ctx.Err() != nil {
				fmt.Fprintf(a.stderr, "stopped waiting at %s; the replay goes on\n", st.position())
				return nil
			}
			return err
		}
		st = next
	}
	p.end()
	if !st.Enabled {
		fmt.Fprintf(a.stdout, "trigger %s is disabled at %s: the rows are evaluated once it is enabled\n", name, st.position())
		return nil
	}
	fmt.Fprintf(a.stdout, "trigger %s caught up: %s\n", name, st.position())
	return nil
}

// fetchStatus reads a trigger's status from GET .../triggers/{name}.
func (a *app) fetchStatus(ctx context.Context, c *conn, name string) (triggerStatus, error) {
	info, err := c.sp.GetTrigger(ctx, name)
	if err != nil {
		return triggerStatus{}, err
	}
	if info.Status == nil {
		return triggerStatus{}, fmt.Errorf("the server shows no status for trigger %s (is its trigger engine running?)", name)
	}
	return triggerStatus(*info.Status), nil
}

// progress shows a changing line: rewritten in place on a terminal,
// else printed as a plain line each time it changes.
type progress struct {
	w     io.Writer
	live  bool
	last  string
	shown bool
}

// show displays line.
func (p *progress) show(line string) {
	if line == p.last {
		return
	}
	p.last, p.shown = line, true
	if p.live {
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// end finishes a live line.
func (p *progress) end() {
	if p.live && p.shown {
		fmt.Fprintln(p.w)
	}
	p.shown = false
}
