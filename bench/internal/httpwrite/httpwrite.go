// Package httpwrite is scenario 6, HTTP writes: commits/s through eddy's
// HTTP API from a black-box client (POST .../mutations over HTTP/1.1
// keep-alive, one put of a new entity per request, a writer token of the
// one space) with 1 and 8 writers on SQLite, strict and relaxed
// durability, against the same writes made
// in process through changelog.Log.Write on the same eddy in the same
// run: the ratio is what the HTTP layer (parsing, auth, access log,
// encoding, loopback) costs.
package httpwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/bench/internal/harness"
	"github.com/eddy-run/eddy/bench/internal/report"
)

// Targets of issue 15 (SQLite, one space).
const (
	min1 = 2_000
	min8 = 5_000
)

// writerCounts are the concurrencies measured.
var writerCounts = []int{1, 8}

// Names of the two ways of writing, also their pprof labels.
const (
	viaHTTP   = "http"
	inProcess = "in process"
)

// Run measures both ways of writing on eddy on SQLite with strict
// durability, then with relaxed durability.
func Run(ctx context.Context, c harness.Config) (report.Section, error) {
	sec := report.Section{Title: "HTTP writes (commits/s into one space, SQLite)"}
	rounds, window := harness.Pick(c, 2, 3), harness.Pick(c, 500*time.Millisecond, time.Second)
	for _, d := range []struct {
		label string
		tune  func(*eddy.Config)
	}{
		{"", nil},
		{", relaxed", func(cfg *eddy.Config) { cfg.Durability = eddy.DurabilityRelaxed }},
	} {
		h, p, err := runOne(ctx, c, d.tune, rounds, window)
		if err != nil {
			return sec, err
		}
		row := func(w int) report.Row {
			return report.Row{Measure: fmt.Sprintf("%d writer%s%s", w, map[bool]string{true: "s"}[w > 1], d.label), Unit: "commits/s",
				Eddy: "eddy HTTP API", EddyVal: h[w], Peer: "eddy in process (Log.Write)", PeerVal: p[w]}
		}
		if d.tune == nil {
			sec.Rows = append(sec.Rows, row(1).EddyAtLeast(min1, "≥ 2,000/s"), row(8).EddyAtLeast(min8, "≥ 5,000/s"))
		} else {
			sec.Rows = append(sec.Rows, row(1), row(8))
		}
	}
	sec.Notes = []string{
		fmt.Sprintf("Best of %d rounds of %v per figure (HTTP and in process in turn within a round), after a warm-up of %v; one space on SQLite, one put of a new entity per commit.", rounds, window, window/5),
		"Strict durability (the targets) fsyncs every commit: with one writer every request waits for its own fsync, so that row carries a sync per request (scenario 1 measures the disk alone) as well as the HTTP layer; the ratio is the part HTTP can move. Relaxed: eddy.Config.Durability relaxed (serve --durability relaxed), no fsync per commit.",
		"HTTP: POST /api/v1/spaces/bench/mutations with a writer token of the space, each writer on its own HTTP/1.1 keep-alive connection, through the handler, listener and server limits `eddy serve` uses (access log formatted at info level, then discarded), on loopback in this process.",
		"In process: the same put through changelog.Log.Write on the same eddy (the baseline: what the HTTP layer adds is the difference).",
		harness.ServedNote,
	}
	return sec, nil
}

// runOne opens eddy on SQLite (tuned by tune when not nil) with its API
// served as `eddy serve` serves it, and measures both ways of writing in
// rounds: the best commits/s by writer count, via HTTP and in process.
func runOne(ctx context.Context, c harness.Config, tune func(*eddy.Config), rounds int, window time.Duration) (h, p map[int]float64, err error) {
	e, err := harness.OpenEddyWith(ctx, c, harness.SQLite, tune)
	if err != nil {
		return nil, nil, err
	}
	defer e.Close()
	srv, err := e.ServeAsCLI(ctx, auth.RoleWriter)
	if err != nil {
		return nil, nil, err
	}
	defer func() { err = errors.Join(err, srv.Stop()) }()
	var n atomic.Int64 // every commit puts a new entity
	ops := map[string]func(context.Context, int64) error{
		viaHTTP:   httpPut(srv, &n),
		inProcess: func(ctx context.Context, _ int64) error { return localPut(ctx, e, n.Add(1)) },
	}
	best := map[string]map[int]float64{viaHTTP: {}, inProcess: {}}
	for r := range rounds {
		for _, name := range []string{viaHTTP, inProcess} {
			c.Log.Info("http writes", "round", r+1, "system", name, "relaxed", tune != nil)
			err := harness.Labeled(ctx, "system", name, harness.AsServed(func(ctx context.Context) error {
				return measure(ctx, r == 0, window, ops[name], best[name])
			}))
			if err != nil {
				return nil, nil, fmt.Errorf("http writes: %s: %w", name, err)
			}
		}
	}
	return best[viaHTTP], best[inProcess], nil
}

// measure runs o for window at every writer count (after a warm-up when
// first) and keeps the best figures.
func measure(ctx context.Context, first bool, window time.Duration, o func(context.Context, int64) error, best map[int]float64) error {
	if first {
		if _, err := harness.Throughput(ctx, 1, window/5, o); err != nil {
			return err
		}
	}
	for _, w := range writerCounts {
		var v float64
		err := harness.Labeled(ctx, "writers", strconv.Itoa(w), func(ctx context.Context) (err error) {
			v, err = harness.Throughput(ctx, w, window, o)
			return err
		})
		if err != nil {
			return err
		}
		best[w] = max(best[w], v)
	}
	return nil
}

// body is the request of commit i: one put of note h<i>.
func body(i int64) []byte {
	s := strconv.FormatInt(i, 10)
	return []byte(`{"mutations":[{"op":"put","type":"note","entityId":"h` + s + `","properties":{"n":` + s + `,"title":"row ` + s + `"}}]}`)
}

// httpPut returns an op posting body(n) as a black-box client would:
// one keep-alive connection per concurrent writer.
func httpPut(srv *harness.Served, n *atomic.Int64) func(context.Context, int64) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}}
	url := srv.URL + "/api/v1/spaces/" + harness.Space + "/mutations"
	return func(ctx context.Context, _ int64) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body(n.Add(1))))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+srv.Token)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			return err
		}
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s: %.200s", res.Status, b)
		}
		return nil
	}
}

// localPut makes the same commit in process.
func localPut(ctx context.Context, e *harness.Eddy, i int64) error {
	s := strconv.FormatInt(i, 10)
	_, err := e.Put(ctx, "note", "h"+s, []byte(`{"n":`+s+`,"title":"row `+s+`"}`))
	return err
}
