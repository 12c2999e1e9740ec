package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) triggersCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "triggers",
		Short: "Inspect, operate, backtest, run and delete triggers (save them with 'eddy apply')",
	}, a.triggersListCommand(),
		a.triggersGetCommand(),
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
		Short: "Print a trigger's status at a glance and its definition",
		Long: `Print the trigger NAME: its runtime status (enabled, cursor, head and lag,
lease owner and epoch, delivery counts by status, the oldest open delivery)
when the server runs the trigger engine, then its definition as JSON.
--json prints the server's answer as is (the definition with its "status").`,
		Args: exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			body, err := a.getBody(cmd, spacePath(a.space, "triggers", args[0]))
			if err != nil || asJSON {
				return a.printOrFail(body, err)
			}
			return a.printTrigger(body)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

// printTrigger prints the status of a GET .../triggers/{name} answer, if
// it has one, above the definition.
func (a *app) printTrigger(body []byte) error {
	def, rawStatus, err := splitKey(body, "status")
	if err != nil {
		return fmt.Errorf("decode trigger: %w", err)
	}
	if rawStatus == nil {
		return a.printJSON(body)
	}
	var st triggerStatus
	if err := json.Unmarshal(rawStatus, &st); err != nil {
		return fmt.Errorf("decode status: %w", err)
	}
	if err := printStatus(a.stdout, st, time.Now()); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, "\ndefinition:")
	return a.printJSON(def)
}

// splitKey removes key from the JSON object body, keeping the order of
// the other keys; it returns the rest and the key's value (nil when
// absent).
func splitKey(body []byte, key string) ([]byte, json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("not a JSON object")
	}
	var (
		rest  bytes.Buffer
		value json.RawMessage
	)
	rest.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		k, _ := tok.(string)
		if k == key {
			value = v
			continue
		}
		if rest.Len() > 1 {
			rest.WriteByte(',')
		}
		kb, _ := json.Marshal(k) // a string always encodes
		rest.Write(kb)
		rest.WriteByte(':')
		rest.Write(v)
	}
	rest.WriteByte('}')
	return rest.Bytes(), value, nil
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
