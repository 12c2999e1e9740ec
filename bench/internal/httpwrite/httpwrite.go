// Package httpwrite is scenario 6, HTTP writes: commits/s through eddy's
// HTTP API from a black-box client (POST .../mutations over HTTP/1.1
// keep-alive, one put of a new entity per request, a writer token of the
// one space) with 1 and 8 writers on SQLite, against the same writes made
// in process through changelog.Log.Write on the same eddy in the same
// run: the ratio is what the HTTP layer (parsing, auth, access log,
// encoding, loopback) costs.
package httpwrite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

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

// Run opens eddy on SQLite with its API served as `eddy serve` serves
// it, and measures both ways of writing in rounds.
func Run(ctx context.Context, c harness.Config) (report.Section, error) {
	sec := report.Section{Title: "HTTP writes (commits/s into one space, SQLite)"}
	rounds, window := harness.Pick(c, 2, 3), harness.Pick(c, 500*time.Millisecond, time.Second)
	e, err := harness.OpenEddy(ctx, c, harness.SQLite)
	if err != nil {
		return sec, err
	}
	defer e.Close()
	srv, err := e.ServeAsCLI(ctx, auth.RoleWriter)
	if err != nil {
		return sec, err
	}
	defer srv.Stop()
	var n atomic.Int64 // every commit puts a new entity
	ops := map[string]func(context.Context, int64) error{
		viaHTTP:   httpPut(srv, &n),
		inProcess: func(ctx context.Context, _ int64) error { return localPut(ctx, e, n.Add(1)) },
	}
	best := map[string]map[int]float64{viaHTTP: {}, inProcess: {}}
	for r := range rounds {
		for _, name := range []string{viaHTTP, inProcess} {
			c.Log.Info("http writes", "round", r+1, "system", name)
			err := harness.Labeled(ctx, "system", name, func(ctx context.Context) error {
				return measure(ctx, r == 0, window, ops[name], best[name])
			})
			if err != nil {
				return sec, fmt.Errorf("http writes: %s: %w", name, err)
			}
		}
	}
	h, p := best[viaHTTP], best[inProcess]
	row := func(w int) report.Row {
		return report.Row{Measure: fmt.Sprintf("%d writer%s", w, map[bool]string{true: "s"}[w > 1]), Unit: "commits/s",
			Eddy: "eddy HTTP API", EddyVal: h[w], Peer: "eddy in process (Log.Write)", PeerVal: p[w]}
	}
	sec.Rows = []report.Row{
		row(1).EddyAtLeast(min1, "≥ 2,000/s"),
		row(8).EddyAtLeast(min8, "≥ 5,000/s"),
	}
	sec.Notes = []string{
		fmt.Sprintf("Best of %d rounds of %v per figure (HTTP and in process in turn within a round), after a warm-up of %v; one space on SQLite (strict durability), one put of a new entity per commit.", rounds, window, window/5),
		"HTTP: POST /api/v1/spaces/bench/mutations with a writer token of the space, each writer on its own HTTP/1.1 keep-alive connection, through the handler, listener and server limits `eddy serve` uses (access log formatted at info level, then discarded), on loopback in this process.",
		"In process: the same put through changelog.Log.Write on the same eddy (the baseline: what the HTTP layer adds is the difference).",
	}
	return sec, nil
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
