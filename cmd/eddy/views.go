package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

func (a *app) viewsCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "views",
		Short: "Filtered view sync: inspect views, bootstrap, delta, watch, backtest (save them with 'eddy apply')",
		Long: `A view is a filtered subset of a space that clients keep in sync: bootstrap it
page by page, then follow its delta (or its live stream) from the cursor the
last bootstrap page gives. Save views with 'eddy apply -f' (a 'views:'
section); docs/views.md explains the protocol.`,
	}, a.viewsListCommand(),
		a.definitionGetCommand("views", "view"),
		a.definitionDeleteCommand("views", "view", "its cursors stop working"),
		a.viewsBootstrapCommand(), a.viewsDeltaCommand(), a.viewsWatchCommand(), a.viewsBacktestCommand(),
		a.rotateEpochCommand())
}

// viewInfo is a view as GET .../views lists it.
type viewInfo struct {
	Name    string                     `json:"name"`
	Version string                     `json:"version"`
	Types   []string                   `json:"types"`
	Filter  map[string]json.RawMessage `json:"filter"`
	Fields  []string                   `json:"fields"`
}

// filterText summarizes a view's filter on one line.
func (v viewInfo) filterText() string {
	for kind, raw := range v.Filter {
		return kind + " " + string(compact(raw))
	}
	return "-"
}

func (a *app) viewsListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the space's views",
		Args:  noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			body, err := a.getBody(cmd, spacePath(a.space, "views"))
			if err != nil || asJSON {
				return a.printOrFail(body, err)
			}
			var out struct {
				Views []viewInfo `json:"views"`
			}
			if err := json.Unmarshal(body, &out); err != nil {
				return fmt.Errorf("decode views: %w", err)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tTYPES\tFIELDS\tFILTER")
			for _, v := range out.Views {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.Name, v.Version, strings.Join(v.Types, ","),
					orDash(strings.Join(v.Fields, ",")), cell(v.filterText(), 70))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

func (a *app) rotateEpochCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rotate-epoch",
		Short: "Give the space a new epoch: every view cursor and bootstrap token of it must reset",
		Long: `Rotate the space's epoch (admin). Use it when the retained history no longer
addresses the same past, for example after restoring an older backup: every
view cursor and bootstrap token of the space then answers reset_required
with reason epoch_changed, and clients bootstrap again from scratch.`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			resp, err := c.do(cmd.Context(), request{method: http.MethodPost, path: spacePath(a.space, "rotate-epoch")})
			if err != nil {
				return err
			}
			var sp struct {
				Epoch string `json:"epoch"`
			}
			if err := json.Unmarshal(resp.body, &sp); err != nil {
				return fmt.Errorf("decode space: %w", err)
			}
			fmt.Fprintf(a.stdout, "space %s: new epoch %s\n", a.space, sp.Epoch)
			return nil
		}),
	}
}

// readDefinition reads a YAML or JSON definition file ('-' for stdin) as
// JSON.
func (a *app) readDefinition(file string) (json.RawMessage, error) {
	data, err := a.readFile(file)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, usagef("%s: %v", file, err)
	}
	if d := bytes.TrimSpace(js); len(d) == 0 || d[0] != '{' {
		return nil, usagef("%s: the definition must be a map", file)
	}
	return js, nil
}
