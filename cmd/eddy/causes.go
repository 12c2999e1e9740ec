package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// causesAnswer is the answer of GET .../changes/{seq}/causes.
type causesAnswer struct {
	Seq   int64       `json:"seq"`
	Chain []causeLink `json:"chain"`
}

// causeLink is one row of a causal chain; a pruned link has only a seq.
type causeLink struct {
	Seq      int64  `json:"seq"`
	Depth    int    `json:"depth"`
	Trigger  string `json:"trigger"`
	Delivery string `json:"delivery"`
	Pruned   bool   `json:"pruned"`
}

func (a *app) causesCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "causes SEQ",
		Short: "Walk a row's causal chain to its root; needs log:read",
		Long: `Print the causal chain of a changelog row: the row itself, the row whose
trigger delivery wrote it, and so on down to the root (depth 0, an API write
or an engine row). A cause pruned below the horizon ends the chain. Needs an
admin token or one with the log:read scope.`,
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
	c, err := a.client()
	if err != nil {
		return err
	}
	var ans causesAnswer
	body, err := c.getJSON(cmd.Context(), spacePath(a.space, "changes", strconv.FormatInt(seq, 10), "causes"), nil, &ans)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(body)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tDEPTH\tTRIGGER\tDELIVERY\tCAUSE")
	for i, l := range ans.Chain {
		fmt.Fprintln(tw, causeLine(l, i == len(ans.Chain)-1))
	}
	return tw.Flush()
}

// causeLine is one table line: the link and what caused it.
func causeLine(l causeLink, last bool) string {
	if l.Pruned {
		return fmt.Sprintf("%d\t-\t-\t-\tpruned (below the horizon)", l.Seq)
	}
	cause := "caused by the next row"
	if last {
		cause = "root"
	}
	return fmt.Sprintf("%d\t%d\t%s\t%s\t%s", l.Seq, l.Depth, orDash(cell(l.Trigger, 32)), orDash(cell(l.Delivery, 32)), cause)
}
