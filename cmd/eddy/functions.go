package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
)

func (a *app) functionsCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "functions",
		Short: "Inspect, delete and dry-run functions (save them with 'eddy apply')",
	}, a.functionsListCommand(),
		a.definitionGetCommand("functions", "function"),
		a.definitionDeleteCommand("functions", "function", "fails while a trigger names it"),
		a.functionsTestCommand())
}

// functionInfo is a function as GET .../functions lists it.
type functionInfo client.Function

func (a *app) functionsListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the space's functions",
		Args:  noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			fs, err := c.sp.Functions(cmd.Context())
			if err != nil {
				return err
			}
			return a.show(view{value: map[string]any{"functions": orEmpty(fs)}, kind: "function", table: functionTable(fs)}, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

// functionTable is the table of functions.
func functionTable(fs []client.Function) func(io.Writer, bool) {
	return func(tw io.Writer, wide bool) {
		head := "NAME\tKIND\tWRITES\tRUNS"
		if wide {
			head += "\tTIMEOUT\tREGISTERED"
		}
		fmt.Fprintln(tw, head)
		for _, f := range fs {
			line := fmt.Sprintf("%s\t%s\t%s\t%s", f.Name, f.Kind, orDash(strings.Join(f.Writes, ",")), functionInfo(f).runs())
			if wide {
				reg := "-"
				if f.Registered != nil {
					reg = fmt.Sprint(*f.Registered)
				}
				line += "\t" + orDash(f.Timeout) + "\t" + reg
			}
			fmt.Fprintln(tw, line)
		}
	}
}

// runs summarizes what a function runs: its code's first line (cut
// short), its URL or its handler.
func (f functionInfo) runs() string {
	switch f.Kind {
	case "webhook":
		return f.URL
	case "go":
		return f.Handler
	}
	line, _, more := strings.Cut(strings.TrimSpace(f.Code), "\n")
	if r := []rune(line); len(r) > 60 {
		line, more = string(r[:60]), true
	}
	if more {
		line += "…"
	}
	return line
}

func (a *app) functionsTestCommand() *cobra.Command {
	var (
		seq     int64
		trigger string
	)
	cmd := &cobra.Command{
		Use:   "test NAME --seq N",
		Short: "Dry-run a function on the row at a seq (writes and sends nothing)",
		Long: `Run a function on the committed row at --seq, with entity and before taken
from that commit, and print what it would do: an expr function's actions, or
the request a webhook would be sent (not sent; the signature is not shown).
--trigger sets the name the expr variable trigger holds.`,
		Args: exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("seq") {
				return usagef("missing --seq N")
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			res, err := c.sp.TestFunction(cmd.Context(), args[0], client.TestParams{Seq: seq, Trigger: trigger})
			if err != nil {
				return err
			}
			return a.show(view{value: res, kind: "function", names: []string{args[0]}}, false)
		}),
	}
	cmd.Flags().Int64Var(&seq, "seq", 0, "the seq of the row to run on")
	cmd.Flags().StringVar(&trigger, "trigger", "", "trigger name the function sees")
	return cmd
}

// definitionGetCommand is `eddy types|functions|views get NAME`.
func (a *app) definitionGetCommand(collection, kind string) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Print a " + kind + ": its row of the list's table (-o yaml for the definition)",
		Long: "Print the " + kind + ` NAME as its row of the list's table, the same columns
(-o wide: the wide ones); -o yaml or -o json prints the definition, as one
element of the list's.`,
		Args: exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			def, err := getDefinition(cmd.Context(), c.sp, collection, args[0])
			if err != nil {
				return err
			}
			return a.show(view{value: def, kind: kind, names: []string{args[0]}, table: listRow(def)}, false)
		}),
	}
}

// listRow is the row of one definition in its list's table (so get and
// list print the same columns, and -o wide the same wide ones).
func listRow(def any) func(io.Writer, bool) {
	switch d := def.(type) {
	case client.TypeDef:
		return typeTable([]client.TypeDef{d})
	case client.Function:
		return functionTable([]client.Function{d})
	case client.TriggerInfo:
		return triggerTable([]client.Trigger{d.Trigger})
	case client.ViewDefinition:
		return viewTable([]client.ViewDefinition{d})
	}
	return nil
}

// definitionDeleteCommand is `eddy functions|triggers delete NAME`.
func (a *app) definitionDeleteCommand(collection, kind, note string) *cobra.Command {
	short := "Delete a " + kind
	if note != "" {
		short += " (" + note + ")"
	}
	return &cobra.Command{
		Use:   "delete NAME",
		Short: short,
		Args:  exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			if err := deleteDefinition(cmd.Context(), c.sp, collection, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s %s deleted\n", kind, args[0])
			return nil
		}),
	}
}

// getDefinition reads one definition of a collection (types,
// functions, triggers or views).
func getDefinition(ctx context.Context, sp *client.Space, collection, name string) (any, error) {
	switch collection {
	case "types":
		return sp.GetType(ctx, name)
	case "functions":
		return sp.GetFunction(ctx, name)
	case "triggers":
		return sp.GetTrigger(ctx, name)
	case "views":
		return sp.View(name).Get(ctx)
	}
	return nil, fmt.Errorf("unknown collection %q", collection)
}

// deleteDefinition deletes one definition of a collection.
func deleteDefinition(ctx context.Context, sp *client.Space, collection, name string) error {
	switch collection {
	case "types":
		return sp.DeleteType(ctx, name)
	case "functions":
		return sp.DeleteFunction(ctx, name)
	case "triggers":
		return sp.DeleteTrigger(ctx, name)
	case "views":
		return sp.View(name).Delete(ctx)
	}
	return fmt.Errorf("unknown collection %q", collection)
}
