package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/eddy-run/eddy/client"
)

// applyFlags are the options of eddy apply and eddy diff.
type applyFlags struct {
	files    []string
	prune    bool
	dryRun   bool
	exitCode bool // diff: exit 1 when something would change
}

func (f *applyFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVarP(&f.files, "file", "f", nil, "YAML or JSON file, or a directory of them (*.yaml, *.yml, *.json); '-' for stdin; repeatable")
	fl.BoolVar(&f.prune, "prune", false, "delete the definitions of the sections given that the files no longer declare")
}

// applyHelp is the document format, shared by apply and diff.
const applyHelp = `The files hold up to four maps from name to definition:

  types:
    task:
      properties:
        title: {kind: string, required: true}
  functions:
    stamp-completed:
      kind: expr
      writes: [task]
      code: patch("task", entity.id, {"completedAt": now})
    notify:
      kind: webhook
      url: https://hooks.example.com/eddy
      secret: {fromEnv: NOTIFY_SECRET}   # read by the server at apply
  triggers:
    on-done:
      source: {changes: {types: [task], ops: [patch]}}
      function: stamp-completed
  views:
    open-tasks:
      version: v1
      types: [task]
      filter: {cel: "entity.properties.done != true"}
`

// applyCommand is `eddy apply`: types, functions, triggers and views.
func (a *app) applyCommand() *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR [--dry-run] [--prune]",
		Short: "Apply declarations from YAML or JSON files at once (types, functions, triggers, views)",
		Long: `Apply every declaration of the files to the space at once: the server checks
all of them before it writes any, so one bad definition applies nothing and
the error names its file, line and field. Each line of output says what
happened to one definition: created, changed, unchanged (identical
definitions are not written) or deleted (--prune: definitions of the
sections given that the files no longer declare). --dry-run (or 'eddy diff')
only shows what would happen. Warnings (such as cycles in the trigger graph)
go to standard error. 'eddy export' writes the space's definitions in this
format.

` + applyHelp,
		Example: `  eddy apply -f eddy.yaml
  eddy apply -f config/ --prune --dry-run
  eddy export > eddy.yaml && eddy apply -f eddy.yaml   # everything unchanged`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return a.apply(cmd, f, applySections)
		}),
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "only show what would happen")
	return cmd
}

func (a *app) diffCommand() *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "diff -f FILE|DIR [--prune]",
		Short: "Show what 'eddy apply' would change, with a diff of each changed definition",
		Long: `Compare the files with the space's definitions: each definition is created,
changed (with a diff of its YAML: - before, + after), unchanged, or, with
--prune, would be deleted. Nothing is written. --exit-code exits 1 when
anything would change, for CI.

` + applyHelp,
		Example: `  eddy diff -f eddy.yaml
  eddy diff -f config/ --prune --exit-code`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			f.dryRun = true
			return a.apply(cmd, f, applySections)
		}),
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&f.exitCode, "exit-code", false, "exit 1 when something would change")
	return cmd
}

// apply reads the files and applies (or diffs) them at once.
func (a *app) apply(cmd *cobra.Command, f applyFlags, sections []applySection) error {
	if len(f.files) == 0 {
		return usagef("missing -f FILE")
	}
	in, err := a.readApplyInput(f.files, sections)
	if err != nil {
		return err
	}
	c, err := a.connect()
	if err != nil {
		return err
	}
	ans, err := c.sp.Apply(cmd.Context(), in.doc, client.ApplyParams{Prune: f.prune, DryRun: f.dryRun})
	if err != nil {
		return in.locate(err)
	}
	if a.formatted() {
		return a.show(view{value: ans, kind: "definition"}, false)
	}
	diff := cmd.Name() == "diff"
	changed := a.printApply(ans, diff)
	if f.dryRun && !diff {
		fmt.Fprintln(a.stderr, "dry run: nothing was written")
	}
	if f.exitCode && changed {
		return errChanges
	}
	return nil
}

// errChanges is diff --exit-code's answer when something would change.
var errChanges = errors.New("the files differ from the space's definitions")

// printApply prints one line per definition (and, for diff, the diff of
// each change) and reports whether anything changes.
func (a *app) printApply(ans client.ApplyAnswer, diff bool) bool {
	changed := false
	for _, r := range ans.Results {
		verb := r.Action
		if ans.DryRun && verb == client.ApplyDeleted {
			verb = "would be deleted"
		}
		fmt.Fprintf(a.stdout, "%s %s %s\n", r.Kind, r.Name, verb)
		for _, w := range r.Warnings {
			fmt.Fprintf(a.stderr, "warning: %s %s: %s\n", r.Kind, r.Name, w)
		}
		if r.Action != client.ApplyUnchanged {
			changed = true
			if diff {
				a.printDiff(r.Before, r.After)
			}
		}
	}
	return changed
}

// printDiff prints the line diff of two definitions' YAML.
func (a *app) printDiff(before, after json.RawMessage) {
	for _, l := range lineDiff(yamlLines(before), yamlLines(after)) {
		fmt.Fprintf(a.stdout, "    %s\n", l)
	}
}

// yamlLines renders a definition as YAML lines (none for nil), without
// its name (the line above says it).
func yamlLines(js json.RawMessage) []string {
	if len(js) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(js, &m) == nil {
		delete(m, "name")
		if b, err := json.Marshal(m); err == nil {
			js = b
		}
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return []string{string(js)}
	}
	return strings.Split(strings.TrimRight(string(y), "\n"), "\n")
}

func (a *app) exportCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "export [-f FILE]",
		Short: "Write the space's types, functions, triggers and views as YAML that 'eddy apply' takes",
		Long: `Write the space's definitions as an apply document: applied back with
'eddy apply -f', every definition is unchanged, and exporting again writes the
same bytes. Secret values are never written: a webhook secret read from the
server's environment shows as {fromEnv: NAME}; one set by value is left out
(declare it with fromEnv to keep it in git). -o json (or --jq) prints the
same document as JSON.`,
		Example: `  eddy export > eddy.yaml
  eddy export -f eddy.yaml && git diff eddy.yaml`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			doc, err := c.sp.Export(cmd.Context())
			if err != nil {
				return err
			}
			if a.formatted() && a.output != outYAML && out == "" {
				return a.show(view{value: doc, names: definitionNames(doc)}, false) // -o json, --jq: the same document
			}
			y, err := exportYAML(doc)
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err = a.stdout.Write(y)
				return err
			}
			return os.WriteFile(out, y, 0o644)
		}),
	}
	cmd.Flags().StringVarP(&out, "file", "f", "", "write to this file instead of standard output")
	return cmd
}

// definitionNames are kind/name of every definition of doc, in apply
// order (-o name of an export).
func definitionNames(doc client.Definitions) []string {
	var names []string
	for _, sec := range applySections {
		for _, name := range slices.Sorted(maps.Keys(doc[sec.key])) {
			names = append(names, sec.kind+"/"+name)
		}
	}
	return names
}

// exportYAML renders an export as YAML, sections in apply order, empty
// ones left out.
func exportYAML(doc client.Definitions) ([]byte, error) {
	var b strings.Builder
	for _, sec := range applySections {
		defs := doc[sec.key]
		if len(defs) == 0 {
			continue
		}
		js, err := encodeJSON(map[string]any{sec.key: defs}, "")
		if err != nil {
			return nil, err
		}
		y, err := yaml.JSONToYAML(js)
		if err != nil {
			return nil, fmt.Errorf("encode yaml: %w", err)
		}
		b.Write(y)
	}
	return []byte(b.String()), nil
}

// applyInput is the definitions read from the files, with where each
// was declared.
type applyInput struct {
	doc   client.Definitions
	where map[string]map[string]defSource // section -> name -> source
}

// defSource is where a definition was declared.
type defSource struct {
	file string
	node *yamlv3.Node // the definition's value
	line int          // the line of its name
}

// readApplyInput reads every file (directories: their *.yaml, *.yml and
// *.json files, in name order); a definition declared twice is an error.
func (a *app) readApplyInput(args []string, sections []applySection) (applyInput, error) {
	files, err := expandFiles(args)
	if err != nil {
		return applyInput{}, err
	}
	in := applyInput{doc: client.Definitions{}, where: map[string]map[string]defSource{}}
	for _, file := range files {
		data, err := a.readFile(file)
		if err != nil {
			return applyInput{}, err
		}
		if err := in.add(file, data, sections); err != nil {
			return applyInput{}, err
		}
	}
	return in, nil
}

// add merges one file's document.
func (in *applyInput) add(file string, data []byte, sections []applySection) error {
	doc, err := parseApplyDocument(data, sections)
	if err != nil {
		return usagef("%s: %v", displayName(file), err)
	}
	var root yamlv3.Node
	_ = yamlv3.Unmarshal(data, &root) // parseApplyDocument accepted it
	for _, sec := range slices.Sorted(maps.Keys(doc)) {
		if in.doc[sec] == nil {
			in.doc[sec], in.where[sec] = map[string]json.RawMessage{}, map[string]defSource{}
		}
		for name, def := range doc[sec] {
			key, val := mappingEntry(mappingEntryValue(&root, sec), name)
			src := defSource{file: displayName(file), node: val}
			if key != nil {
				src.line = key.Line
			}
			if prev, dup := in.where[sec][name]; dup {
				return usagef("%s:%d and %s:%d both declare %s %s", prev.file, prev.line, src.file, src.line, kindOf(sec), name)
			}
			in.doc[sec][name], in.where[sec][name] = def, src
		}
	}
	return nil
}

// locate names the file and line of the definition a server problem is
// about (details section, name and field).
func (in *applyInput) locate(err error) error {
	pe, ok := problemOf(err)
	if !ok {
		return err
	}
	sec, _ := pe.Details["section"].(string)
	name, _ := pe.Details["name"].(string)
	if sec == "" || name == "" {
		return err
	}
	msg := fmt.Sprintf("%s %s: %s: %s", kindOf(sec), name, pe.Code, strings.TrimPrefix(pe.Message, kindOf(sec)+" "+name+": "))
	src, ok := in.where[sec][name]
	if !ok {
		return &applyError{msg: msg, err: err} // a stored definition the files do not declare
	}
	field, _ := pe.Details["field"].(string)
	line := src.line
	if n := fieldNode(src.node, field); n != nil {
		line = n.Line
	}
	return &applyError{msg: fmt.Sprintf("%s:%d: %s", src.file, line, msg), err: err}
}

// applyError is a refused definition, located in its file.
type applyError struct {
	msg string
	err error
}

func (e *applyError) Error() string { return e.msg }
func (e *applyError) Unwrap() error { return e.err }

// fieldNode finds the node of a dotted field path inside a definition,
// as deep as it exists (nil if not even its first part does).
func fieldNode(def *yamlv3.Node, field string) *yamlv3.Node {
	if def == nil || field == "" {
		return nil
	}
	var found *yamlv3.Node
	cur := def
	for _, part := range strings.Split(field, ".") {
		key, val := mappingEntry(cur, part)
		if key == nil {
			break
		}
		found, cur = key, val
	}
	return found
}

// mappingEntryValue returns the value of key in a document's top mapping.
func mappingEntryValue(root *yamlv3.Node, key string) *yamlv3.Node {
	n := root
	if n.Kind == yamlv3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	_, v := mappingEntry(n, key)
	return v
}

// mappingEntry returns the key and value nodes of key in a mapping node.
func mappingEntry(m *yamlv3.Node, key string) (k, v *yamlv3.Node) {
	if m == nil || m.Kind != yamlv3.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// kindOf is a section's singular.
func kindOf(section string) string {
	for _, s := range applySections {
		if s.key == section {
			return s.kind
		}
	}
	return section
}

// displayName names a file in messages ("-" is stdin).
func displayName(file string) string {
	if file == "-" {
		return "<stdin>"
	}
	return file
}

// expandFiles replaces each directory by its YAML and JSON files.
func expandFiles(args []string) ([]string, error) {
	var out []string
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if arg == "-" || err != nil || !fi.IsDir() {
			out = append(out, arg) // readFile reports what is wrong
			continue
		}
		entries, err := os.ReadDir(arg)
		if err != nil {
			return nil, usagef("read %s: %v", arg, err)
		}
		n := len(out)
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".yaml", ".yml", ".json":
				if !e.IsDir() {
					out = append(out, filepath.Join(arg, e.Name()))
				}
			}
		}
		if len(out) == n {
			return nil, usagef("%s holds no .yaml, .yml or .json files", arg)
		}
	}
	return out, nil
}

// lineDiff returns the lines of a and b marked "-" (only in a), "+"
// (only in b) or " " (in both), in order: a longest-common-subsequence
// diff, fine for definitions of a few hundred lines.
func lineDiff(a, b []string) []string {
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out, i, j = append(out, "  "+a[i]), i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out, i = append(out, "- "+a[i]), i+1
		default:
			out, j = append(out, "+ "+b[j]), j+1
		}
	}
	return out
}
