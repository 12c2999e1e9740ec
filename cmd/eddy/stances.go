package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
)

// stanceInfo is one trigger's stance on a row.
type stanceInfo = client.Stance

func (a *app) stancesCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stances SEQ",
		Short: "Show every trigger's stance on a row, with the delivery it got",
		Long: `Print what every trigger of the space made of the changelog row SEQ: pending
(not evaluated yet), not_started, disabled, not_matched, error (its filter
raised), coalesced, echo, or matched with the delivery it got (id, status,
attempts).`,
		Example: `  eddy stances 4190
  eddy stances 4190 --json`,
		Args: exactArgs("SEQ"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			seq, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || seq < 1 {
				return usagef("SEQ %q: want a row seq (an integer >= 1)", args[0])
			}
			return a.stances(cmd, seq, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer instead of a table")
	return cmd
}

func (a *app) stances(cmd *cobra.Command, seq int64, asJSON bool) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	ans, err := c.sp.Stances(cmd.Context(), seq)
	if err != nil {
		return err
	}
	names := make([]string, len(ans.Stances))
	for i, s := range ans.Stances {
		names[i] = s.Trigger
	}
	return a.show(view{value: ans, kind: "trigger", names: names, table: func(tw io.Writer, _ bool) {
		fmt.Fprintln(tw, "TRIGGER\tSTANCE\tDELIVERY\tSTATUS\tATTEMPTS\tERROR")
		for _, s := range ans.Stances {
			fmt.Fprintln(tw, stanceLine(s))
		}
	}}, asJSON)
}

// stanceLine is one table line.
func stanceLine(s stanceInfo) string {
	id, status, attempts := "-", "-", "-"
	if d := s.Delivery; d != nil {
		id, status, attempts = d.ID, d.Status, strconv.Itoa(d.Attempts)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", s.Trigger, s.Stance, id, status, attempts, orDash(cell(s.Error, 72)))
}
