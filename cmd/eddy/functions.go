package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
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
type functionInfo struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Writes  []string `json:"writes"`
	Code    string   `json:"code"`
	URL     string   `json:"url"`
	Handler string   `json:"handler"`
}

func (a *app) functionsListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the space's functions",
		Args:  noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			body, err := a.getBody(cmd, spacePath(a.space, "functions"))
			if err != nil || asJSON {
				return a.printOrFail(body, err)
			}
			var out struct {
				Functions []functionInfo `json:"functions"`
			}
			if err := json.Unmarshal(body, &out); err != nil {
				return fmt.Errorf("decode functions: %w", err)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tWRITES\tRUNS")
			for _, f := range out.Functions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, f.Kind, orDash(strings.Join(f.Writes, ",")), f.runs())
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
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
			body, err := json.Marshal(map[string]any{"seq": seq, "trigger": trigger})
			if err != nil {
				return fmt.Errorf("encode: %w", err)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			resp, err := c.do(cmd.Context(), request{method: http.MethodPost, path: spacePath(a.space, "functions", args[0], "test"), body: body})
			if err != nil {
				return err
			}
			return a.printJSON(resp.body)
		}),
	}
	cmd.Flags().Int64Var(&seq, "seq", 0, "the seq of the row to run on")
	cmd.Flags().StringVar(&trigger, "trigger", "", "trigger name the function sees")
	return cmd
}

// definitionGetCommand is `eddy functions|triggers get NAME`.
func (a *app) definitionGetCommand(collection, kind string) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Print a " + kind + " definition",
		Args:  exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.printOrFail(a.getBody(cmd, spacePath(a.space, collection, args[0])))
		}),
	}
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
			c, err := a.client()
			if err != nil {
				return err
			}
			if _, err := c.do(cmd.Context(), request{method: http.MethodDelete, path: spacePath(a.space, collection, args[0])}); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s %s deleted\n", kind, args[0])
			return nil
		}),
	}
}

// getBody GETs path and returns the answer's body.
func (a *app) getBody(cmd *cobra.Command, path string) ([]byte, error) {
	c, err := a.client()
	if err != nil {
		return nil, err
	}
	return c.getJSON(cmd.Context(), path, nil, nil)
}

// printOrFail prints body as indented JSON unless err is set.
func (a *app) printOrFail(body []byte, err error) error {
	if err != nil {
		return err
	}
	return a.printJSON(body)
}
