package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
)

func (a *app) triggersCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "triggers",
		Short: "Inspect, operate, backtest, run and delete triggers (save them with 'eddy apply')",
	}, a.triggersListCommand(),
		a.triggersGetCommand(),
		a.triggersDescribeCommand(),
		a.triggersEnableCommand(),
		a.triggersDisableCommand(),
		a.triggersResetCommand(),
		a.triggersReplayCommand(),
		a.triggersBacktestCommand(),
		a.triggersRunCommand(),
		a.definitionDeleteCommand("triggers", "trigger", ""))
}

func (a *app) triggersGetCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Print a trigger: its row of the list's table (-o yaml for the definition and status)",
		Long: `Print the trigger NAME as its row of 'eddy triggers list' (the same columns;
-o wide: the wide ones). -o yaml or -o json (or --json) prints the server's
answer: the definition with its runtime "status". 'eddy triggers describe
NAME' shows the status at a glance.`,
		Args: exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			info, err := c.sp.GetTrigger(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.show(view{value: info, kind: "trigger", names: []string{args[0]}, table: triggerTable([]client.Trigger{info.Trigger})}, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

func (a *app) triggersDescribeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Print a trigger's status at a glance and its definition",
		Long: `Print the trigger NAME: its runtime status (enabled, cursor, head and lag,
lease owner and epoch, delivery counts by status, the oldest open delivery)
when the server runs the trigger engine, then its definition as JSON.
-o prints the server's answer (the definition with its "status") as 'get' does.`,
		Args: exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			info, err := c.sp.GetTrigger(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.formatted() || info.Status == nil {
				return a.show(view{value: info, kind: "trigger", names: []string{args[0]}}, false)
			}
			return a.printTrigger(info)
		}),
	}
}

// printTrigger prints a trigger's status above its definition.
func (a *app) printTrigger(info client.TriggerInfo) error {
	if err := printStatus(a.stdout, triggerStatus(*info.Status), time.Now()); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, "\ndefinition:")
	return a.printValue(info.Trigger)
}

// triggerInfo is a trigger as GET .../triggers lists it.
type triggerInfo client.Trigger

// source summarizes a trigger's source on one line.
func (t triggerInfo) source() string {
	if c := t.Source.Cron; c != nil {
		return fmt.Sprintf("cron %s (%s)", c.Schedule, c.Timezone)
	}
	c := t.Source.Changes
	if c == nil {
		return "-"
	}
	parts := []string{"changes"}
	if len(c.Types) > 0 {
		parts = append(parts, "types="+strings.Join(c.Types, ","))
	}
	if len(c.Ops) > 0 {
		parts = append(parts, "ops="+strings.Join(c.Ops, ","))
	}
	if c.When != "" {
		parts = append(parts, "when=…")
	}
	return strings.Join(parts, " ")
}

func (a *app) triggersListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the space's triggers",
		Args:  noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			ts, err := c.sp.Triggers(cmd.Context())
			if err != nil {
				return err
			}
			return a.show(view{value: map[string]any{"triggers": orEmpty(ts)}, kind: "trigger", table: triggerTable(ts)}, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

// triggerTable is the table of triggers.
func triggerTable(ts []client.Trigger) func(io.Writer, bool) {
	return func(tw io.Writer, wide bool) {
		head := "NAME\tFUNCTION\tENABLED\tSOURCE"
		if wide {
			head += "\tWHEN"
		}
		fmt.Fprintln(tw, head)
		for _, t := range ts {
			ti := triggerInfo(t)
			line := fmt.Sprintf("%s\t%s\t%v\t%s", t.Name, t.Function, ti.enabled(), ti.source())
			if wide {
				when := "-"
				if t.Source.Changes != nil && t.Source.Changes.When != "" {
					when = t.Source.Changes.When
				}
				line += "\t" + when
			}
			fmt.Fprintln(tw, line)
		}
	}
}

// enabled reports the trigger's enabled flag (nil means the default,
// true).
func (t triggerInfo) enabled() bool { return t.Enabled == nil || *t.Enabled }
