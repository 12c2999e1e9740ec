package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func (a *app) triggersCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "triggers",
		Short: "Inspect, backtest, run and delete triggers (save them with 'eddy apply')",
	}, a.triggersListCommand(),
		a.triggersBacktestCommand(),
		a.triggersRunCommand(),
		a.definitionGetCommand("triggers", "trigger"),
		a.definitionDeleteCommand("triggers", "trigger", ""))
}

// triggerInfo is a trigger as GET .../triggers lists it.
type triggerInfo struct {
	Name   string `json:"name"`
	Source struct {
		Changes *struct {
			Types []string `json:"types"`
			Ops   []string `json:"ops"`
			When  string   `json:"when"`
		} `json:"changes"`
		Cron *struct {
			Schedule string `json:"schedule"`
			Timezone string `json:"timezone"`
		} `json:"cron"`
	} `json:"source"`
	Function string `json:"function"`
	Enabled  bool   `json:"enabled"`
}

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
			body, err := a.getBody(cmd, spacePath(a.space, "triggers"))
			if err != nil || asJSON {
				return a.printOrFail(body, err)
			}
			var out struct {
				Triggers []triggerInfo `json:"triggers"`
			}
			if err := json.Unmarshal(body, &out); err != nil {
				return fmt.Errorf("decode triggers: %w", err)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tFUNCTION\tENABLED\tSOURCE")
			for _, t := range out.Triggers {
				fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", t.Name, t.Function, t.Enabled, t.source())
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}
