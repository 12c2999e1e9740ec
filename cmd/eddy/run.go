package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
)

func (a *app) triggersRunCommand() *cobra.Command {
	var entity string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "run NAME --entity TYPE/ID",
		Short: "Run a trigger's function once on an entity and write its actions",
		Long: `Run the function of the trigger NAME once on the entity TYPE/ID, as a
delivery caused by the commit that last changed the entity, and write the
actions it returns (actor trigger:NAME, one level deeper than that commit).
The trigger's when is not evaluated and no cursor moves. Prints the
delivery id, the depth and each write's status and seq.`,
		Args: exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			typ, id, ok := strings.Cut(entity, "/")
			if !ok || typ == "" || id == "" {
				return usagef("--entity TYPE/ID is required")
			}
			return a.runTrigger(cmd, args[0], typ, id, asJSON)
		}),
	}
	cmd.Flags().StringVar(&entity, "entity", "", "the entity to run on, as TYPE/ID")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

// runTrigger asks the server to run the trigger name once on typ/id.
func (a *app) runTrigger(cmd *cobra.Command, name, typ, id string, asJSON bool) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	r, err := c.sp.RunTrigger(cmd.Context(), name, client.EntityKey{Type: typ, ID: id})
	if err != nil {
		return err
	}
	if asJSON || a.formatted() {
		return a.show(view{value: r, kind: "delivery", names: []string{r.Delivery}}, asJSON)
	}
	fmt.Fprintf(a.stdout, "delivery %s (trigger %s, caused by seq %d, depth %d)\n", r.Delivery, r.Trigger, r.Seq, r.Depth)
	if len(r.Receipts) == 0 {
		fmt.Fprintln(a.stdout, "no actions")
	}
	for i, rc := range r.Receipts {
		fmt.Fprintf(a.stdout, "  %d: %s seq %d\n", i, rc.Status, rc.Seq)
	}
	return nil
}
