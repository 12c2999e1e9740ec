// Command audit exports a space's history with the public Go client: it
// pages the changelog backward (newest first) with the API's filters and
// a CEL `when`, keeps the rows of a time range, and writes them as CSV
// or JSON lines, with a progress bar on stderr when that is a terminal
// (or when asked). See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/eddy-run/eddy/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "audit:", err)
		os.Exit(1)
	}
}

// config is what the flags set.
type config struct {
	server, token, space string
	filter               client.Filter
	since, until         time.Time
	format, out          string
	progress             string
	page                 int
}

// listFlag is a comma-separated, repeatable list flag.
type listFlag struct{ dst *[]string }

func (l listFlag) String() string {
	if l.dst == nil {
		return ""
	}
	return strings.Join(*l.dst, ",")
}

func (l listFlag) Set(v string) error {
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*l.dst = append(*l.dst, item)
		}
	}
	return nil
}

// timeFlag is an RFC 3339 time, or a duration back from now ("24h").
type timeFlag struct {
	dst *time.Time
	now time.Time
}

func (f timeFlag) String() string {
	if f.dst == nil || f.dst.IsZero() {
		return ""
	}
	return f.dst.Format(time.RFC3339Nano)
}

func (f timeFlag) Set(v string) error {
	if d, err := time.ParseDuration(v); err == nil {
		*f.dst = f.now.Add(-d)
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 time or a duration such as 24h")
	}
	*f.dst = t
	return nil
}

// parseFlags reads the flags; the server and token default to the eddy
// CLI's (EDDY_SERVER, EDDY_TOKEN, ./eddy-data/admin.token).
func parseFlags(args []string, stderr io.Writer, now time.Time) (config, error) {
	server, token := client.Env()
	cfg := config{}
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.server, "server", server, "eddy's address (EDDY_SERVER)")
	fs.StringVar(&cfg.token, "token", token, "a token that may read the space (EDDY_TOKEN, else ./eddy-data/admin.token)")
	fs.StringVar(&cfg.space, "space", "default", "the space")
	f := &cfg.filter
	fs.Var(listFlag{&f.Types}, "types", "only rows of these types (comma list)")
	fs.Var(listFlag{&f.Ops}, "ops", "only rows of these ops")
	fs.Var(listFlag{&f.Actors}, "actors", "only rows written by these actors")
	fs.Var(listFlag{&f.ExcludeTypes}, "exclude-types", "drop rows of these types")
	fs.Var(listFlag{&f.ExcludeOps}, "exclude-ops", "drop rows of these ops")
	fs.Var(listFlag{&f.ExcludeActors}, "exclude-actors", "drop rows written by these actors")
	fs.StringVar(&f.Q, "q", "", "free text over type, entity id, actor and payload")
	entity := fs.String("entity", "", "only the rows of one entity, TYPE/ID")
	fs.StringVar(&f.When, "when", "", "only rows matching this CEL expression over row")
	fs.Var(timeFlag{&cfg.since, now}, "since", "oldest row time to export: RFC 3339, or a duration back from now (24h)")
	fs.Var(timeFlag{&cfg.until, now}, "until", "newest row time to export (default: now)")
	fs.StringVar(&cfg.format, "format", "csv", "csv or jsonl")
	fs.StringVar(&cfg.out, "out", "-", "output file (- for stdout)")
	fs.StringVar(&cfg.progress, "progress", "auto", "progress bar on stderr: auto (on a terminal), always or never")
	fs.IntVar(&cfg.page, "page", 500, "history page size (1 to 1000)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	switch {
	case fs.NArg() > 0:
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	case cfg.token == "":
		return config{}, errors.New("no token: pass --token or set EDDY_TOKEN")
	case !cfg.until.IsZero() && cfg.since.After(cfg.until):
		return config{}, errors.New("--since is after --until")
	}
	if *entity != "" {
		typ, id, ok := strings.Cut(*entity, "/")
		if !ok || typ == "" || id == "" {
			return config{}, fmt.Errorf("--entity %q: want TYPE/ID", *entity)
		}
		f.EntityType, f.EntityID = typ, id
	}
	return cfg, nil
}

// run exports what the flags select to stdout or --out.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr, time.Now())
	if err != nil {
		return err
	}
	c, err := client.New(cfg.server, client.Options{Token: cfg.token})
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	out, closeOut, err := output(cfg.out, stdout)
	if err != nil {
		return err
	}
	rw, err := newRowWriter(cfg.format, out)
	if err != nil {
		return errors.Join(err, closeOut())
	}
	n, err := export(ctx, c.Space(cfg.space), cfg, rw, stderr)
	if err == nil {
		err = rw.Flush()
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "exported %d rows\n", n)
	return nil
}

// output opens the output file ("-": stdout, not closed).
func output(path string, stdout io.Writer) (io.Writer, func() error, error) {
	if path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}
