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

func (a *app) typesCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "types",
		Short: "Manage type definitions",
	}, a.typesApplyCommand("apply"), a.typesListCommand(), a.definitionGetCommand("types", "type"), a.typesDeleteCommand())
}

func (a *app) typesApplyCommand(use string) *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   use + " -f FILE",
		Short: "Put the type definitions of a YAML or JSON file",
		Long: `Put every type definition of a YAML or JSON file ('-' for stdin) into the
space, all at once (see 'eddy apply'). The document holds a map 'types' from
type name to definition:

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
			return a.apply(cmd, f, applySections[:1])
		}),
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "only show what would happen")
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
			c, err := a.connect()
			if err != nil {
				return err
			}
			tds, err := c.sp.Types(cmd.Context())
			if err != nil {
				return err
			}
			return a.show(view{value: map[string]any{"types": orEmpty(tds)}, kind: "type", table: typeTable(tds)}, false)
		}),
	}
}

// typeTable is the table of type definitions.
func typeTable(tds []client.TypeDef) func(io.Writer, bool) {
	return func(tw io.Writer, wide bool) {
		head := "NAME\tSTRICT\tPROPERTIES\tSTATES"
		if wide {
			head += "\tCONFLICT GROUPS\tACCESS\tUPDATED (UTC)"
		}
		fmt.Fprintln(tw, head)
		for _, td := range tds {
			var d client.TypeDefinition
			_ = json.Unmarshal(td.Def, &d) // the server's own definition; a part it cannot show is "-"
			line := fmt.Sprintf("%s\t%v\t%s\t%s", td.Type, d.Strict, cell(orDash(strings.Join(slices.Sorted(maps.Keys(d.Properties)), ",")), 60),
				orDash(strings.Join(slices.Sorted(maps.Keys(d.States)), ",")))
			if wide {
				access := "-"
				if d.Access != nil {
					access = d.Access.Read
				}
				line += "\t" + orDash(strings.Join(slices.Sorted(maps.Keys(d.ConflictGroups)), ",")) + "\t" + access +
					"\t" + td.UpdatedAt.UTC().Format("2006-01-02 15:04:05")
			}
			fmt.Fprintln(tw, line)
		}
	}
}

func (a *app) typesDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a type definition (its entities stay)",
		Args:  exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			if err := c.sp.DeleteType(cmd.Context(), args[0]); err != nil {
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
type tokenRequest = client.TokenParams

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
--scopes log:read lets a non-admin token pull the raw log. --user names the
user the token acts for (type access rules are judged for it) and, with
--application, makes a journal client's token.`,
		Example: `  eddy tokens create --space default --role reader --types task,user
  eddy tokens create --role writer --actor importer
  eddy tokens create --role reader --scopes log:read
  eddy tokens create --role reader --user u1 --application mail-app`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if req.Role == "" {
				return usagef("missing --role (admin, writer or reader)")
			}
			req.Space = a.spaceName()
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
	c, err := a.connect()
	if err != nil {
		return err
	}
	out, err := c.CreateToken(cmd.Context(), req)
	if err != nil {
		return err
	}
	if asJSON || a.formatted() {
		return a.show(view{value: out, kind: "token"}, asJSON)
	}
	fmt.Fprintf(a.stdout, "id:    %s\ntoken: %s\n", out.ID, out.Token)
	fmt.Fprintln(a.stderr, "the token is shown only once: store it now")
	return nil
}

// tokenInfo is a token as GET /api/v1/tokens lists it.
type tokenInfo = client.Token

func (a *app) tokensListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			toks, err := c.Tokens(cmd.Context())
			if err != nil {
				return err
			}
			return a.show(view{value: map[string]any{"tokens": orEmpty(toks)}, kind: "token", table: tokenTable(toks)}, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

// tokenTable is the table of tokens.
func tokenTable(toks []tokenInfo) func(io.Writer, bool) {
	return func(tw io.Writer, wide bool) {
		head := "ID\tSPACE\tROLE\tACTOR\tTYPES\tSCOPES\tCREATED (UTC)"
		if wide {
			head += "\tUSER\tAPPLICATION"
		}
		fmt.Fprintln(tw, head)
		for _, t := range toks {
			line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", t.ID, t.Space, t.Role, t.Actor,
				orDash(strings.Join(t.Types, ",")), orDash(strings.Join(t.Scopes, ",")), t.CreatedAt.UTC().Format("2006-01-02 15:04:05"))
			if wide {
				line += "\t" + orDash(t.User) + "\t" + orDash(t.Application)
			}
			fmt.Fprintln(tw, line)
		}
	}
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
			c, err := a.connect()
			if err != nil {
				return err
			}
			if err := c.RevokeToken(cmd.Context(), args[0]); err != nil {
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
	c, err := a.connect()
	if err != nil {
		return err
	}
	info, err := c.sp.Prune(cmd.Context(), client.PruneParams{Through: through, Force: force})
	if err != nil {
		return err
	}
	return a.show(view{value: info, kind: "space", names: []string{info.Space}}, false)
}

func (a *app) spacesCommand() *cobra.Command {
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a space (admin)",
		Args:  exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.spaceCall(cmd, true, args[0])
		}),
	}
	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Print a space's head, horizon, epoch and schema version",
		Args:  exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.spaceCall(cmd, false, args[0])
		}),
	}
	return group(&cobra.Command{Use: "spaces", Short: "Create and inspect spaces"}, create, get)
}

func (a *app) spaceCall(cmd *cobra.Command, create bool, name string) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	var info client.SpaceInfo
	if create {
		info, _, err = c.CreateSpace(cmd.Context(), name)
	} else {
		info, err = c.Space(name).Info(cmd.Context())
	}
	if err != nil {
		return err
	}
	return a.show(view{value: info, kind: "space", names: []string{info.Space}}, false)
}
