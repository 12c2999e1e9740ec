package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/eddy-run/eddy/client"
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

// filterText summarizes a view's filter on one line.
func filterText(v client.ViewDefinition) string {
	raw, err := json.Marshal(v.Filter)
	if err != nil {
		return "-"
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "-"
	}
	for _, kind := range slices.Sorted(maps.Keys(m)) {
		return kind + " " + string(compact(m[kind]))
	}
	return "-"
}

// viewTable is the table of views.
func viewTable(vs []client.ViewDefinition) func(io.Writer, bool) {
	return func(tw io.Writer, wide bool) {
		head := "NAME\tVERSION\tTYPES\tFIELDS\tFILTER"
		if wide {
			head += "\tSIGNATURE\tUPDATED (UTC)"
		}
		fmt.Fprintln(tw, head)
		for _, v := range vs {
			line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", v.Name, v.Version, strings.Join(v.Types, ","),
				orDash(strings.Join(v.Fields, ",")), cell(filterText(v), 70))
			if wide {
				line += "\t" + v.FilterSignature + "\t" + v.UpdatedAt.UTC().Format("2006-01-02 15:04:05")
			}
			fmt.Fprintln(tw, line)
		}
	}
}

func (a *app) viewsListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the space's views",
		Args:  noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			vs, err := c.sp.Views(cmd.Context())
			if err != nil {
				return err
			}
			return a.show(view{value: map[string]any{"views": orEmpty(vs)}, kind: "view", table: viewTable(vs)}, asJSON)
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
			c, err := a.connect()
			if err != nil {
				return err
			}
			sp, err := c.sp.RotateEpoch(cmd.Context())
			if err != nil {
				return err
			}
			if a.formatted() {
				return a.show(view{value: sp, kind: "space", names: []string{sp.Space}}, false)
			}
			fmt.Fprintf(a.stdout, "space %s: new epoch %s\n", c.sp.Name(), sp.Epoch)
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
