package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

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

// errIdle ends a stream on which nothing, not even a heartbeat, arrived
// for the idle timeout.
var errIdle = errors.New("no data from the server")

// errStreamEnded is a stream that ended without a terminal frame.
var errStreamEnded = errors.New("stream ended")

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
	q, err := o.filter.values()
	if err != nil {
		return err
	}
	if o.when != "" {
		q.Set("when", o.when)
	}
	q.Set("watch", "1")
	c, err := a.client()
	if err != nil {
		return err
	}
	path := spacePath(a.space, "changes")
	if o.typ != "" {
		path = spacePath(a.space, "entities", o.typ)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = watchHeaderTimeout
	defer tr.CloseIdleConnections()
	w := &watcher{
		a: a, c: c, hc: &http.Client{Transport: tr}, path: path, query: q,
		pos: o.from, json: o.json, idle: o.idle, view: a.newLiveView(),
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = w.run(ctx)
	if ctx.Err() != nil {
		// Interrupted: the normal way a watch ends.
		return nil
	}
	return err
}

// watcher is the state of one eddy watch: where it is, and how to ask
// for more.
type watcher struct {
	a     *app
	c     *client
	hc    *http.Client
	path  string
	query url.Values
	pos   int64 // the last row or bookmark seen; -1 = none yet (the head)
	json  bool
	idle  time.Duration
	view  *liveView
}

// run streams and resumes until ctx ends or a failure is final. Before
// the first stream opens every failure is final (a wrong --server or
// token should not spin).
func (w *watcher) run(ctx context.Context) error {
	delay := watchBackoffMin
	opened, lost := false, false
	for {
		s, err := w.stream(ctx, lost)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		opened = opened || s.opened
		if final(err) || !opened {
			return err
		}
		if s.rows > 0 || s.lasted >= watchBackoffMax {
			delay = watchBackoffMin
		}
		w.say(lost, s.opened, err, delay)
		lost = true
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, watchBackoffMax)
	}
}

// say tells stderr that the stream was lost, or that resuming failed.
func (w *watcher) say(lost, opened bool, err error, delay time.Duration) {
	if lost && !opened {
		fmt.Fprintf(w.a.stderr, "eddy: reconnect failed (%v); retrying in %v\n", err, delay.Round(time.Millisecond))
		return
	}
	fmt.Fprintf(w.a.stderr, "eddy: connection lost (%v); resuming from %s\n", err, w.position())
}

// position names where a resumed stream starts.
func (w *watcher) position() string {
	if w.pos < 0 {
		return "the head"
	}
	return strconv.FormatInt(w.pos, 10)
}

// final reports whether err ends the watch rather than being resumed.
func final(err error) bool {
	var ce *compactedError
	if errors.As(err, &ce) {
		return true
	}
	switch code := problem.CodeOf(err); code {
	case "":
		return false // network errors, EOF, idle
	case problem.Unavailable, problem.Internal, problem.RateLimited:
		return false
	default:
		return !strings.HasPrefix(code, "http_5")
	}
}

// streamStats describes one stream attempt.
type streamStats struct {
	opened bool          // the server answered 200
	rows   int           // rows received
	lasted time.Duration // from the request to the end
}

// stream opens one watch from w.pos and consumes it until it ends. It
// always returns an error: how the stream ended.
func (w *watcher) stream(ctx context.Context, resumed bool) (s streamStats, err error) {
	start := time.Now()
	defer func() { s.lasted = time.Since(start) }()
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	resp, err := w.open(sctx)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	s.opened = true
	if resumed {
		fmt.Fprintf(w.a.stderr, "eddy: resumed from %s\n", w.position())
	}
	var timer *time.Timer
	if w.idle > 0 {
		timer = time.AfterFunc(w.idle, func() { cancel(errIdle) })
		defer timer.Stop()
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if cause := context.Cause(sctx); errors.Is(cause, errIdle) {
				return s, fmt.Errorf("%w for %v", errIdle, w.idle)
			}
			if errors.Is(err, io.EOF) {
				return s, errStreamEnded
			}
			return s, err
		}
		if timer != nil {
			timer.Reset(w.idle)
		}
		isRow, err := w.frame(ctx, line)
		if isRow {
			s.rows++
		}
		if err != nil {
			return s, err
		}
	}
}

// open sends the watch request from w.pos and returns the 200 response;
// any other answer is its problem (410 compacted as a *compactedError).
func (w *watcher) open(ctx context.Context) (*http.Response, error) {
	u := *w.c.base
	u.Path += w.path
	q := cloneValues(w.query)
	if w.pos >= 0 {
		q.Set("from", strconv.FormatInt(w.pos, 10))
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+w.c.token)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := w.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", w.path, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return nil, w.problem(ctx, decodeProblem(resp.StatusCode, body))
}

// problem turns a compacted problem into a *compactedError.
func (w *watcher) problem(ctx context.Context, err error) error {
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != problem.Compacted {
		return err
	}
	ce := &compactedError{pos: w.pos, horizon: -1, head: -1, err: pe}
	if h, ok := pe.Details["horizon"].(float64); ok {
		ce.horizon = int64(h)
	}
	var sp struct {
		Head int64 `json:"head"`
	}
	if _, herr := w.c.getJSON(ctx, spacePath(w.a.space), nil, &sp); herr == nil {
		ce.head = sp.Head
	}
	return ce
}

// frame handles one ndjson line: prints it, moves w.pos, and returns the
// error a terminal frame carries. It reports whether the line was a row.
func (w *watcher) frame(ctx context.Context, line []byte) (bool, error) {
	var f struct {
		Seq      *int64         `json:"seq"`
		Bookmark *int64         `json:"bookmark"`
		Error    *problem.Error `json:"error"`
	}
	if err := json.Unmarshal(line, &f); err != nil {
		return false, fmt.Errorf("bad frame %q: %w", cell(string(line), 80), err)
	}
	if f.Seq != nil {
		return true, w.row(line, *f.Seq)
	}
	if w.json {
		if _, err := w.a.stdout.Write(line); err != nil {
			return false, err
		}
	}
	switch {
	case f.Bookmark != nil:
		w.pos = max(w.pos, *f.Bookmark)
	case f.Error != nil:
		return false, w.problem(ctx, f.Error)
	}
	return false, nil // a heartbeat, or a frame this CLI does not know
}

// row moves w.pos to a row's seq and prints it: unchanged with --json,
// else in the live view.
func (w *watcher) row(line []byte, seq int64) error {
	if seq <= w.pos {
		return nil // already seen before a resume
	}
	w.pos = seq
	if w.json {
		_, err := w.a.stdout.Write(line)
		return err
	}
	var r row
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("bad row %d: %w", seq, err)
	}
	_, err := io.WriteString(w.a.stdout, w.view.line(r))
	return err
}

// cloneValues returns a copy of q.
func cloneValues(q url.Values) url.Values {
	c := make(url.Values, len(q)+1)
	for k, vs := range q {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// compactedError ends a watch whose position fell below the horizon.
type compactedError struct {
	pos     int64 // the position asked for (-1 = the head)
	horizon int64 // the oldest resumable position (-1 = unknown)
	head    int64 // the space head when it happened (-1 = unknown)
	err     *problem.Error
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

// isTerminal reports whether w is a character device.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
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
