package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

func (a *app) typesCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "types",
		Short: "Manage type definitions",
	}, a.typesApplyCommand("apply"), a.typesListCommand(), a.typesGetCommand(), a.typesDeleteCommand())
}

// applyCommand is `eddy apply`: types, functions, triggers and views.
func (a *app) applyCommand() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Apply declarations from a YAML or JSON file (types, functions, triggers, views)",
		Long: `Put every declaration of a YAML or JSON file ('-' for stdin) into the space.
The document holds up to four maps from name to definition, applied in this
order (so a trigger may name a function of the same file), each in name order:

  types:
    task:
      properties:
        title: {kind: string, required: true}
  functions:
    stamp-completed:
      kind: expr
      writes: [task]
      code: patch("task", entity.id, {"completedAt": now})
  triggers:
    on-done:
      source: {changes: {types: [task], ops: [patch]}}
      function: stamp-completed
  views:
    open-tasks:
      version: v1
      types: [task]
      filter: {cel: "entity.properties.done != true"}

Each line of output says whether a definition was created or updated; warnings
(such as cycles in the trigger graph) go to standard error. The first refused
definition stops the run; those before it stay applied.`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usagef("missing -f FILE")
			}
			return a.apply(cmd, file, applySections)
		}),
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "YAML or JSON file ('-' for stdin)")
	return cmd
}

func (a *app) typesApplyCommand(use string) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   use + " -f FILE",
		Short: "Put the type definitions of a YAML or JSON file",
		Long: `Put every type definition of a YAML or JSON file ('-' for stdin) into the
space. The document holds a map 'types' from type name to definition:

  types:
    task:
      strict: true
      properties:
        title: {kind: string, required: true}
        status: {kind: string}
      states:
        status:
          initial: open
          transitions: {open: [done], done: [open]}

'eddy apply' also takes functions, triggers and views.`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usagef("missing -f FILE")
			}
			return a.apply(cmd, file, applySections[:1])
		}),
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "YAML or JSON file ('-' for stdin)")
	return cmd
}

// applySection is one top-level key of an apply document.
type applySection struct {
	key  string // document key and API collection, e.g. "types"
	kind string // singular, e.g. "type"
}

// applySections are the sections of an apply document, in apply order.
var applySections = []applySection{{"types", "type"}, {"functions", "function"}, {"triggers", "trigger"}, {"views", "view"}}

// applyDocument is a parsed apply document: per section key, definitions
// by name.
type applyDocument map[string]map[string]json.RawMessage

// apply puts each definition of the file, section by section in the
// order given, names in order within a section.
func (a *app) apply(cmd *cobra.Command, file string, sections []applySection) error {
	data, err := a.readFile(file)
	if err != nil {
		return err
	}
	doc, err := parseApplyDocument(data, sections)
	if err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	for _, sec := range sections {
		defs := doc[sec.key]
		for _, name := range slices.Sorted(maps.Keys(defs)) {
			if err := a.applyOne(cmd, c, sec, name, defs[name]); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyOne puts one definition and reports it and its warnings.
func (a *app) applyOne(cmd *cobra.Command, c *client, sec applySection, name string, def json.RawMessage) error {
	resp, err := c.do(cmd.Context(), request{method: http.MethodPut, path: spacePath(a.space, sec.key, name), body: def})
	if err != nil {
		return fmt.Errorf("%s %s: %w", sec.kind, name, err)
	}
	verb := "updated"
	if resp.status == http.StatusCreated {
		verb = "created"
	}
	fmt.Fprintf(a.stdout, "%s %s %s\n", sec.kind, name, verb)
	var answer struct {
		Warnings []struct {
			Message string `json:"message"`
		} `json:"warnings"`
	}
	if json.Unmarshal(resp.body, &answer) == nil {
		for _, w := range answer.Warnings {
			fmt.Fprintf(a.stderr, "warning: %s %s: %s\n", sec.kind, name, w.Message)
		}
	}
	return nil
}

// parseTypesDocument reads a YAML or JSON document {types: {name: def}} and
// returns each definition as JSON.
func parseTypesDocument(data []byte) (map[string]json.RawMessage, error) {
	doc, err := parseApplyDocument(data, applySections[:1])
	if err != nil {
		return nil, err
	}
	return doc["types"], nil
}

// parseApplyDocument reads a YAML or JSON document holding some of the
// given sections, each a non-empty map from name to a definition map, and
// returns the definitions as JSON.
func parseApplyDocument(data []byte, sections []applySection) (applyDocument, error) {
	keys := make([]string, len(sections))
	for i, sec := range sections {
		keys[i] = "'" + sec.key + "'"
	}
	want := strings.Join(keys, ", ")
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, usagef("parse: %v", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil || len(raw) == 0 {
		return nil, usagef("the document must be a map with keys among %s", want)
	}
	doc := applyDocument{}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		i := slices.IndexFunc(sections, func(s applySection) bool { return s.key == k })
		if i < 0 {
			return nil, usagef("unknown key %q: this command applies %s", k, want)
		}
		defs, err := parseSection(sections[i], raw[k])
		if err != nil {
			return nil, err
		}
		doc[k] = defs
	}
	return doc, nil
}

// parseSection reads one section: a non-empty map of definition maps.
func parseSection(sec applySection, raw json.RawMessage) (map[string]json.RawMessage, error) {
	var defs map[string]json.RawMessage
	if err := json.Unmarshal(raw, &defs); err != nil || len(defs) == 0 {
		return nil, usagef("'%s' must map %s names to definitions", sec.key, sec.kind)
	}
	for name, def := range defs {
		if d := bytes.TrimSpace(def); len(d) == 0 || d[0] != '{' {
			return nil, usagef("%s %s: the definition must be a map", sec.kind, name)
		}
	}
	return defs, nil
}

func (a *app) typesListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Print the space's type definitions",
		Args:  noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			body, err := c.getJSON(cmd.Context(), spacePath(a.space, "types"), nil, nil)
			if err != nil {
				return err
			}
			return a.printJSON(body)
		}),
	}
}

func (a *app) typesGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Print a type definition",
		Args:  exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			body, err := c.getJSON(cmd.Context(), spacePath(a.space, "types", args[0]), nil, nil)
			if err != nil {
				return err
			}
			return a.printJSON(body)
		}),
	}
}

func (a *app) typesDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a type definition (its entities stay)",
		Args:  exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if _, err := c.do(cmd.Context(), request{method: http.MethodDelete, path: spacePath(a.space, "types", args[0])}); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "type %s deleted\n", args[0])
			return nil
		}),
	}
}

func (a *app) tokensCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "tokens",
		Short: "Manage API tokens (admin)",
	}, a.tokensCreateCommand(), a.tokensListCommand(), a.tokensRevokeCommand())
}

// tokenRequest is the body of POST /api/v1/tokens.
type tokenRequest struct {
	Space       string   `json:"space"`
	Role        string   `json:"role"`
	Actor       string   `json:"actor,omitempty"`
	Types       []string `json:"types,omitempty"`
	Scopes      []string `json:"scopes,omitempty"`
	User        string   `json:"user,omitempty"`
	Application string   `json:"application,omitempty"`
}

func (a *app) tokensCreateCommand() *cobra.Command {
	var (
		req    tokenRequest
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "create --role ROLE",
		Short: "Create a token and print its secret (shown once)",
		Long: `Create a token bound to --space ('*' for every space) with a role: admin,
writer or reader. --types limits what it may read to those entity types;
--scopes log:read lets a non-admin token pull the raw log.`,
		Example: `  eddy tokens create --space default --role reader --types task,user
  eddy tokens create --role writer --actor importer
  eddy tokens create --role reader --scopes log:read`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if req.Role == "" {
				return usagef("missing --role (admin, writer or reader)")
			}
			req.Space = a.space
			return a.createToken(cmd, req, asJSON)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&req.Role, "role", "", "admin, writer or reader")
	f.StringVar(&req.Actor, "actor", "", "actor name its writes carry (default token:<id>)")
	f.StringSliceVar(&req.Types, "types", nil, "entity types it may read (default all)")
	f.StringSliceVar(&req.Scopes, "scopes", nil, "extra scopes (log:read)")
	f.StringVar(&req.User, "user", "", "user it acts for (journal clients)")
	f.StringVar(&req.Application, "application", "", "application it belongs to (journal clients)")
	f.BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

func (a *app) createToken(cmd *cobra.Command, req tokenRequest, asJSON bool) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	resp, err := c.do(cmd.Context(), request{method: http.MethodPost, path: "/api/v1/tokens", body: body})
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(resp.body)
	}
	var out struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(resp.body, &out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	fmt.Fprintf(a.stdout, "id:    %s\ntoken: %s\n", out.ID, out.Token)
	fmt.Fprintln(a.stderr, "the token is shown only once: store it now")
	return nil
}

// tokenInfo is a token as GET /api/v1/tokens lists it.
type tokenInfo struct {
	ID        string    `json:"id"`
	Space     string    `json:"space"`
	Role      string    `json:"role"`
	Actor     string    `json:"actor"`
	Types     []string  `json:"types"`
	Scopes    []string  `json:"scopes"`
	CreatedAt time.Time `json:"createdAt"`
}

func (a *app) tokensListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			body, err := c.getJSON(cmd.Context(), "/api/v1/tokens", nil, nil)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(body)
			}
			toks, err := decodeTokens(body)
			if err != nil {
				return err
			}
			a.printTokens(toks)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

// decodeTokens accepts {"tokens": [...]} or a bare array.
func decodeTokens(body []byte) ([]tokenInfo, error) {
	var wrapped struct {
		Tokens []tokenInfo `json:"tokens"`
	}
	if err := json.Unmarshal(body, &wrapped); err == nil {
		return wrapped.Tokens, nil
	}
	var bare []tokenInfo
	if err := json.Unmarshal(body, &bare); err != nil {
		return nil, fmt.Errorf("decode tokens: %w", err)
	}
	return bare, nil
}

func (a *app) printTokens(toks []tokenInfo) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSPACE\tROLE\tACTOR\tTYPES\tSCOPES\tCREATED (UTC)")
	for _, t := range toks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Space, t.Role, t.Actor,
			orDash(strings.Join(t.Types, ",")), orDash(strings.Join(t.Scopes, ",")), t.CreatedAt.UTC().Format("2006-01-02 15:04:05"))
	}
	_ = tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *app) tokensRevokeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token",
		Args:  exactArgs("ID"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if _, err := c.do(cmd.Context(), request{method: http.MethodDelete, path: "/api/v1/tokens/" + url.PathEscape(args[0])}); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "token %s revoked\n", args[0])
			return nil
		}),
	}
}

func (a *app) pruneCommand() *cobra.Command {
	var (
		through int64
		force   bool
	)
	cmd := &cobra.Command{
		Use:   "prune --through SEQ",
		Short: "Delete commits up to a seq and move the horizon (admin)",
		Long: `Delete the space's commits with seq <= --through and move its horizon there.
Nothing is renumbered and the head never moves back. Cursors below the new
horizon get 'compacted'. Pruning past rows an enabled trigger has not
judged yet, or that an open delivery still needs, is refused (conflict,
triggers_behind, with the highest seq it may prune through and the
triggers behind); --force prunes anyway, and those triggers never see the
pruned rows.`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("through") {
				return usagef("missing --through SEQ")
			}
			if through < 0 {
				return usagef("--through must not be negative")
			}
			return a.prune(cmd, through, force)
		}),
	}
	cmd.Flags().Int64Var(&through, "through", 0, "delete commits with seq <= this")
	cmd.Flags().BoolVar(&force, "force", false, "prune even past rows enabled triggers have not judged or open deliveries need")
	return cmd
}

func (a *app) prune(cmd *cobra.Command, through int64, force bool) error {
	body, err := json.Marshal(map[string]any{"through": through, "force": force})
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	resp, err := c.do(cmd.Context(), request{method: http.MethodPost, path: spacePath(a.space, "prune"), body: body})
	if err != nil {
		return err
	}
	return a.printJSON(resp.body)
}

func (a *app) spacesCommand() *cobra.Command {
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a space (admin)",
		Args:  exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.spaceCall(cmd, http.MethodPut, args[0])
		}),
	}
	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Print a space's head, horizon, epoch and schema version",
		Args:  exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.spaceCall(cmd, http.MethodGet, args[0])
		}),
	}
	return group(&cobra.Command{Use: "spaces", Short: "Create and inspect spaces"}, create, get)
}

func (a *app) spaceCall(cmd *cobra.Command, method, name string) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	resp, err := c.do(cmd.Context(), request{method: method, path: spacePath(name)})
	if err != nil {
		return err
	}
	return a.printJSON(resp.body)
}
