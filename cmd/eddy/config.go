package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// cliConfig is the CLI's config file: named contexts (a server, a token
// file and a space) and the current one, like kubectl's kubeconfig.
type cliConfig struct {
	CurrentContext string                `json:"current-context,omitempty"`
	Contexts       map[string]cliContext `json:"contexts,omitempty"`
}

// cliContext is one named context; empty fields fall back to the
// defaults.
type cliContext struct {
	Server    string `json:"server,omitempty"`
	TokenFile string `json:"token-file,omitempty"`
	Space     string `json:"space,omitempty"`
}

// configPath is the config file: EDDY_CONFIG, else eddy/config.yaml under
// the user's config directory (os.UserConfigDir).
func (a *app) configPath() (string, error) {
	if p := a.getenv("EDDY_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the config directory: %w (set EDDY_CONFIG)", err)
	}
	return filepath.Join(dir, "eddy", "config.yaml"), nil
}

// loadConfig reads the config file; a missing one is empty.
func (a *app) loadConfig() (cliConfig, string, error) {
	path, err := a.configPath()
	if err != nil {
		return cliConfig{}, "", err
	}
	var cfg cliConfig
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, path, nil
	}
	if err != nil {
		return cfg, path, fmt.Errorf("read config: %w", err)
	}
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return cfg, path, usagef("config %s: %v", path, err)
	}
	return cfg, path, nil
}

// saveConfig writes the config file (0600: it names token files).
func saveConfig(path string, cfg cliConfig) error {
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// currentContext returns the context this run uses (--context, else
// EDDY_CONTEXT, else the config's current one) and its name; none is
// the zero context and "".
func (a *app) currentContext() (cliContext, string, error) {
	if a.ctxLoaded {
		return a.ctx, a.ctxName, a.ctxErr
	}
	a.ctxLoaded = true
	name := a.contextFlag
	if name == "" {
		name = a.getenv("EDDY_CONTEXT")
	}
	needed := name != ""
	cfg, path, err := a.loadConfig()
	if err != nil {
		// A broken config matters only to a run that names a context.
		if needed {
			a.ctxErr = err
		}
		return a.ctx, "", a.ctxErr
	}
	if name == "" {
		name = cfg.CurrentContext
	}
	if name == "" {
		return a.ctx, "", nil
	}
	c, ok := cfg.Contexts[name]
	if !ok {
		a.ctxErr = usagef("context %q is not in %s (eddy config get-contexts lists them)", name, path)
		return a.ctx, "", a.ctxErr
	}
	a.ctx, a.ctxName = c, name
	return c, name, nil
}

func (a *app) configCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "config",
		Short: "Manage contexts: named servers, token files and spaces (like kubectl config)",
		Long: `A context names a server, a token file and a space. The current context fills
in what --server, --token and --space (and EDDY_SERVER, EDDY_TOKEN,
EDDY_SPACE) leave unset; --context NAME (or EDDY_CONTEXT) picks another for
one run. Contexts live in eddy/config.yaml under your config directory
(EDDY_CONFIG names another file).`,
		Example: `  eddy config set-context local --server http://127.0.0.1:7070 --token-file ./eddy-data/admin.token
  eddy config set-context team-a --server https://eddy.example.com --token-file ~/.eddy/team-a.token --space team-a
  eddy config use-context team-a
  eddy config get-contexts`,
	}, a.setContextCommand(), a.useContextCommand(), a.getContextsCommand(), a.currentContextCommand(), a.deleteContextCommand())
}

func (a *app) setContextCommand() *cobra.Command {
	var c cliContext
	cmd := &cobra.Command{
		Use:   "set-context NAME [--server URL] [--token-file PATH] [--space NAME]",
		Short: "Create a context, or change the fields given of an existing one",
		Args:  exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			cfg, path, err := a.loadConfig()
			if err != nil {
				return err
			}
			cur, existed := cfg.Contexts[args[0]]
			if cmd.Flags().Changed("server") {
				cur.Server = c.Server
			}
			if cmd.Flags().Changed("token-file") {
				if cur.TokenFile, err = filepath.Abs(c.TokenFile); err != nil {
					return usagef("--token-file: %v", err)
				}
			}
			if cmd.Flags().Changed("space") {
				cur.Space = c.Space
			}
			if cfg.Contexts == nil {
				cfg.Contexts = map[string]cliContext{}
			}
			cfg.Contexts[args[0]] = cur
			if err := saveConfig(path, cfg); err != nil {
				return err
			}
			verb := "modified"
			if !existed {
				verb = "created"
			}
			fmt.Fprintf(a.stdout, "context %s %s in %s\n", args[0], verb, path)
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&c.Server, "server", "", "server URL")
	f.StringVar(&c.TokenFile, "token-file", "", "file holding the token (stored as an absolute path)")
	f.StringVar(&c.Space, "space", "", "space")
	// These flags shadow the global ones: here they are the context's.
	return cmd
}

func (a *app) useContextCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "use-context NAME",
		Short:             "Make a context the current one",
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.completeContexts,
		RunE: action(func(_ *cobra.Command, args []string) error {
			cfg, path, err := a.loadConfig()
			if err != nil {
				return err
			}
			if _, ok := cfg.Contexts[args[0]]; !ok {
				return usagef("context %q is not in %s (eddy config set-context %s creates it)", args[0], path, args[0])
			}
			cfg.CurrentContext = args[0]
			if err := saveConfig(path, cfg); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "switched to context %s\n", args[0])
			return nil
		}),
	}
}

func (a *app) getContextsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get-contexts",
		Short: "List the contexts; * marks the current one",
		Args:  noArgs,
		RunE: action(func(_ *cobra.Command, _ []string) error {
			cfg, _, err := a.loadConfig()
			if err != nil {
				return err
			}
			names := slices.Sorted(maps.Keys(cfg.Contexts))
			return a.show(view{value: cfg, kind: "context", names: names, table: func(tw io.Writer, _ bool) {
				fmt.Fprintln(tw, "CURRENT\tNAME\tSERVER\tSPACE\tTOKEN FILE")
				for _, n := range names {
					c := cfg.Contexts[n]
					mark := ""
					if n == cfg.CurrentContext {
						mark = "*"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", mark, n, orDash(c.Server), orDash(c.Space), orDash(c.TokenFile))
				}
			}}, false)
		}),
	}
}

func (a *app) currentContextCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "current-context",
		Short: "Print the current context's name",
		Args:  noArgs,
		RunE: action(func(_ *cobra.Command, _ []string) error {
			cfg, path, err := a.loadConfig()
			if err != nil {
				return err
			}
			if cfg.CurrentContext == "" {
				return fmt.Errorf("no current context in %s", path)
			}
			fmt.Fprintln(a.stdout, cfg.CurrentContext)
			return nil
		}),
	}
}

func (a *app) deleteContextCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "delete-context NAME",
		Short:             "Delete a context",
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.completeContexts,
		RunE: action(func(_ *cobra.Command, args []string) error {
			cfg, path, err := a.loadConfig()
			if err != nil {
				return err
			}
			if _, ok := cfg.Contexts[args[0]]; !ok {
				return usagef("context %q is not in %s", args[0], path)
			}
			delete(cfg.Contexts, args[0])
			if cfg.CurrentContext == args[0] {
				cfg.CurrentContext = ""
			}
			if err := saveConfig(path, cfg); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "context %s deleted\n", args[0])
			return nil
		}),
	}
}

// completeContexts completes context names.
func (a *app) completeContexts(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	cfg, _, err := a.loadConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return slices.Sorted(maps.Keys(cfg.Contexts)), cobra.ShellCompDirectiveNoFileComp
}
