package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/problem"
)

// Tunables of eddy watch; tests shrink them.
var (
	// watchBackoffMin and watchBackoffMax bound the delay before a
	// resumed watch reconnects.
	watchBackoffMin = 250 * time.Millisecond //nolint:revive // Min is minimum, not minutes
	watchBackoffMax = 10 * time.Second
	// watchHeaderTimeout bounds the wait for a watch's response header.
	watchHeaderTimeout = 30 * time.Second
)

// watchOptions are the flags of eddy watch.
type watchOptions struct {
	filter filterOptions
	when   string
	typ    string
	from   int64
	json   bool
	idle   time.Duration
}

func (a *app) watchCommand() *cobra.Command {
	var o watchOptions
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Stream changelog rows live (ndjson watch)",
		Long: `Stream the changelog live: every row committed after --from (default: the
head), filtered like changes and history, plus --when, a CEL expression over
row. --type watches one collection instead (entities/{type}?watch=1).

By default each row is one readable line (colours when stdout is a terminal
and NO_COLOR is unset); --json prints the server's ndjson lines unchanged,
control frames included. A dropped connection is resumed from the last row or
bookmark seen, with backoff, saying so on stderr. A position that fell below
the horizon (compacted) ends the watch with exit 1: re-list, then watch from
the current head. Ctrl-C ends the watch with exit 0.`,
		Example: `  eddy watch
  eddy watch --from 0 --types task --ops put,patch
  eddy watch --when 'row.op == "delete" && row.type == "task"'
  eddy watch --type task --from 120 --json | jq -c .`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if err := a.refuseFormat("watch"); err != nil {
				return err
			}
			if !cmd.Flags().Changed("from") {
				o.from = -1
			} else if o.from < 0 {
				return usagef("--from must not be negative")
			}
			if o.idle < 0 {
				return usagef("--idle-timeout must not be negative")
			}
			if o.typ != "" && len(o.filter.types) > 0 {
				return usagef("--types does not combine with --type (which watches one type)")
			}
			return a.watch(cmd.Context(), o)
		}),
	}
	o.filter.register(cmd)
	f := cmd.Flags()
	f.Int64Var(&o.from, "from", 0, "resume after this seq (exclusive; default: the head)")
	f.StringVar(&o.when, "when", "", "only rows matching this CEL expression over row")
	f.StringVar(&o.typ, "type", "", "watch one collection (GET .../entities/TYPE?watch=1) instead of the changelog")
	f.BoolVar(&o.json, "json", false, "print the server's ndjson lines unchanged")
	f.DurationVar(&o.idle, "idle-timeout", time.Minute, "reconnect when nothing, not even a heartbeat, arrives for this long (0 = never)")
	return cmd
}

// watch runs one eddy watch until ctx ends, SIGINT or SIGTERM arrives, or
// the stream fails for good.
func (a *app) watch(ctx context.Context, o watchOptions) error {
	f, err := o.filter.filter()
	if err != nil {
		return err
	}
	f.When = o.when
	c, err := a.connect()
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := &watcher{a: a, c: c, json: o.json, view: a.newLiveView()}
	err = w.run(ctx, client.WatchOptions{
		From: o.from, Type: o.typ, Filter: f, IdleTimeout: idleOption(o.idle), HeaderTimeout: watchHeaderTimeout,
		MinBackoff: watchBackoffMin, MaxBackoff: watchBackoffMax,
	})
	if ctx.Err() != nil {
		// Interrupted: the normal way a watch ends.
		return nil
	}
	return err
}

// idleOption is --idle-timeout as a WatchOptions.IdleTimeout (0: never).
func idleOption(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// watcher prints one eddy watch.
type watcher struct {
	a       *app
	c       *conn
	json    bool
	view    *liveView
	failing bool // the stream was lost and not yet resumed
	werr    error
}

// run watches until ctx ends or a failure is final; the client resumes
// dropped streams, and the watcher says so on stderr.
func (w *watcher) run(ctx context.Context, o client.WatchOptions) error {
	o.OnDrop = w.dropped
	o.OnResume = func(from int64) {
		w.failing = false
		fmt.Fprintf(w.a.stderr, "eddy: resumed from %s\n", position(from))
	}
	if w.json {
		o.OnControl = w.control
	}
	cw, err := w.c.sp.Watch(ctx, o)
	if err != nil {
		return w.problem(ctx, err)
	}
	defer cw.Close()
	for {
		ev, err := cw.Next()
		if err != nil {
			return w.problem(ctx, err)
		}
		if w.werr != nil {
			return w.werr
		}
		if ev.Kind == client.EventRow {
			if err := w.row(ev); err != nil {
				return err
			}
		}
	}
}

// dropped tells stderr that the stream was lost, or that resuming failed.
func (w *watcher) dropped(d client.Drop) {
	if w.failing {
		fmt.Fprintf(w.a.stderr, "eddy: reconnect failed (%s); retrying in %v\n", plainErr(d.Err), d.Wait.Round(time.Millisecond))
		return
	}
	w.failing = true
	fmt.Fprintf(w.a.stderr, "eddy: connection lost (%s); resuming from %s\n", plainErr(d.Err), position(d.From))
}

// control prints a control frame unchanged (--json).
func (w *watcher) control(line []byte) {
	if w.werr == nil {
		_, w.werr = fmt.Fprintf(w.a.stdout, "%s\n", line)
	}
}

// position names where a resumed stream starts.
func position(pos int64) string {
	if pos < 0 {
		return "the head"
	}
	return strconv.FormatInt(pos, 10)
}

// final reports whether err ends a view watch rather than being resumed.
func final(err error) bool {
	var ce *compactedError
	if errors.As(err, &ce) {
		return true
	}
	switch code := client.CodeOf(err); code {
	case "":
		return false // network errors, EOF, idle
	case problem.Unavailable, problem.Internal, problem.RateLimited:
		return false
	default:
		return !strings.HasPrefix(code, "http_5")
	}
}

// problem turns a compacted error into a *compactedError that says
// where to resume.
func (w *watcher) problem(ctx context.Context, err error) error {
	var ce *client.CompactedError
	if !errors.As(err, &ce) {
		return err
	}
	out := &compactedError{pos: ce.From, horizon: ce.Horizon, head: -1, err: ce.Err}
	if info, herr := w.c.sp.Info(ctx); herr == nil {
		out.head = info.Head
	}
	return out
}

// row prints a row: its line with --json, else in the live view.
func (w *watcher) row(ev client.Event) error {
	if w.json {
		_, err := fmt.Fprintf(w.a.stdout, "%s\n", ev.Raw)
		return err
	}
	_, err := io.WriteString(w.a.stdout, w.view.line(ev.Row))
	return err
}

// compactedError ends a watch whose position fell below the horizon.
type compactedError struct {
	pos     int64 // the position asked for (-1 = the head)
	horizon int64 // the oldest resumable position (-1 = unknown)
	head    int64 // the space head when it happened (-1 = unknown)
	err     *client.Error
}

func (e *compactedError) Error() string {
	var b strings.Builder
	b.WriteString("compacted: ")
	if e.pos >= 0 {
		fmt.Fprintf(&b, "the watch cannot resume from %d: ", e.pos)
	}
	if e.horizon >= 0 {
		fmt.Fprintf(&b, "history starts after %d (the horizon); ", e.horizon)
	} else {
		b.WriteString("those rows were pruned; ")
	}
	b.WriteString("re-list what you track (eddy list TYPE), then resume the watch from the current head")
	if e.head >= 0 {
		fmt.Fprintf(&b, ": eddy watch --from %d", e.head)
	}
	return b.String()
}

// Unwrap returns the server's problem.
func (e *compactedError) Unwrap() error { return e.err }

// liveView formats rows as readable lines, one per row.
type liveView struct {
	color  bool
	seqW   int // widest seq so far
	actorW int // widest actor so far (capped)
}

// newLiveView returns a view that colours when stdout is a terminal and
// NO_COLOR is unset.
func (a *app) newLiveView() *liveView {
	return &liveView{color: a.getenv("NO_COLOR") == "" && isTerminal(a.stdout)}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	// A terminal answers the terminal ioctls; a character device alone
	// (such as /dev/null) is no terminal.
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// ANSI SGR codes of the live view.
const (
	sgrDim     = "2"
	sgrBold    = "1"
	sgrRed     = "31"
	sgrGreen   = "32"
	sgrYellow  = "33"
	sgrMagenta = "35"
	sgrCyan    = "36"
)

// line formats one row, ending in a newline:
//
//	4190  10:00:00.183  owner  put     task/kq3v9x2m41pf  created properties=dueAt,title
func (v *liveView) line(r row) string {
	seq := strconv.FormatInt(r.Seq, 10)
	v.seqW = max(v.seqW, len(seq))
	actor := cell(r.Actor, 24)
	v.actorW = max(v.actorW, len([]rune(actor)))
	var b strings.Builder
	b.WriteString(v.paint(sgrYellow, pad(seq, v.seqW)))
	b.WriteString("  ")
	b.WriteString(v.paint(sgrDim, r.TS.UTC().Format("15:04:05.000")))
	b.WriteString("  ")
	b.WriteString(v.paint(sgrCyan, pad(actor, v.actorW)))
	b.WriteString("  ")
	b.WriteString(v.paint(opColor(r.Op), pad(r.Op, 6)))
	b.WriteString("  ")
	b.WriteString(v.paint(sgrBold, cell(r.Type+"/"+r.EntityID, 64)))
	if s := summarize(r.Payload); s != "" {
		b.WriteString("  ")
		b.WriteString(s)
	}
	b.WriteByte('\n')
	return b.String()
}

// paint wraps s in an SGR code when the view colours.
func (v *liveView) paint(sgr, s string) string {
	if !v.color {
		return s
	}
	return "\x1b[" + sgr + "m" + s + "\x1b[0m"
}

// opColor is the colour of an op.
func opColor(op string) string {
	switch op {
	case "put":
		return sgrGreen
	case "patch":
		return sgrYellow
	case "delete":
		return sgrRed
	default:
		return sgrMagenta
	}
}

// pad right-pads s with spaces to n runes.
func pad(s string, n int) string {
	if k := n - len([]rune(s)); k > 0 {
		return s + strings.Repeat(" ", k)
	}
	return s
}

// summarize renders a row payload as short words: true flags by name
// ("created"), lists of strings as key=a,b (sorted), scalars as key=value
// and anything else as key=<compact JSON>, keys in order. A payload that is
// not an object is shown as compact JSON.
func summarize(payload json.RawMessage) string {
	if len(payload) == 0 || string(payload) == "null" {
		return ""
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		return cell(string(compact(payload)), 120)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	words := make([]string, 0, len(keys))
	for _, k := range keys {
		if w := summarizeValue(k, m[k]); w != "" {
			words = append(words, w)
		}
	}
	return cell(strings.Join(words, " "), 120)
}

// summarizeValue renders one payload member; "" leaves it out.
func summarizeValue(key string, raw json.RawMessage) string {
	if string(raw) == "null" {
		return key + "=null"
	}
	var flag bool
	if json.Unmarshal(raw, &flag) == nil {
		if flag {
			return key
		}
		return ""
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		sort.Strings(list)
		return key + "=" + strings.Join(list, ",")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return key + "=" + s
	}
	return key + "=" + string(compact(raw))
}
