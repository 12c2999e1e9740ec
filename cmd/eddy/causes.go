package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
)

// causeLink is one row of a causal chain; a pruned link has only a seq.
type causeLink = client.Cause

func (a *app) causesCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "causes SEQ",
		Short: "Walk a row's causal chain to its root; needs log:read",
		Long: `Print the causal chain of a changelog row: the row itself, the row whose
trigger delivery wrote it, and so on down to the root (depth 0, an API write
or an engine row). The root's line says how many rows it has caused so far
against the space's causal budget, and the depth cap. A cause pruned below
the horizon ends the chain. Needs an admin token or one with the log:read
scope.`,
		Example: `  eddy causes 4190
  eddy causes 4190 --json`,
		Args: exactArgs("SEQ"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			seq, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || seq < 1 {
				return usagef("SEQ %q: want a row seq (an integer >= 1)", args[0])
			}
			return a.causes(cmd, seq, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer instead of a table")
	return cmd
}

func (a *app) causes(cmd *cobra.Command, seq int64, asJSON bool) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	ans, err := c.sp.Causes(cmd.Context(), seq)
	if err != nil {
		return err
	}
	names := make([]string, len(ans.Chain))
	for i, l := range ans.Chain {
		names[i] = strconv.FormatInt(l.Seq, 10)
	}
	return a.show(view{value: ans, kind: "change", names: names, table: func(tw io.Writer, _ bool) {
		fmt.Fprintln(tw, "SEQ\tDEPTH\tTRIGGER\tDELIVERY\tCAUSE")
		for i, l := range ans.Chain {
			fmt.Fprintln(tw, causeLine(l, i == len(ans.Chain)-1, ans))
		}
	}}, asJSON)
}

// causeLine is one table line: the link and what caused it; the root's
// says what it has caused against the causal budget and the depth cap.
func causeLine(l causeLink, last bool, ans client.Causes) string {
	if l.Pruned {
		return fmt.Sprintf("%d\t-\t-\t-\tpruned (below the horizon)", l.Seq)
	}
	cause := "caused by the next row"
	if last {
		cause = fmt.Sprintf("root: caused %d of budget %d rows, depth cap %d", ans.RootRows, ans.Budget, ans.Cap)
	}
	return fmt.Sprintf("%d\t%d\t%s\t%s\t%s", l.Seq, l.Depth, orDash(cell(l.Trigger, 32)), orDash(cell(l.Delivery, 32)), cause)
}
