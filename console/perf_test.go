package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// The load of the stream page: loadRate commits a second for loadRows
// commits.
const (
	loadRate = 200
	loadRows = 2000
)

// streamLatency writes loadRows rows at loadRate commits a second while
// the stream page watches and measures, for every row, the time from its
// commit (the row's ts) to its insertion on the page; in the same run a Go
// client watching the same stream over HTTP is the baseline. The figures
// are logged, never asserted: what is asserted is that the browser
// receives every row.
func streamLatency(t *testing.T, s *stack) { //nolint:thelper // a subtest body
	p := s.tab(t).on(t)
	p.signIn(s.admin)
	p.visible(`#stream-status[data-state="live"]`)
	eval[bool](p, `(() => {
		window.__seen = new Map();
		window.__long = [];
		new MutationObserver((ms) => {
			const now = Date.now();
			for (const m of ms) for (const n of m.addedNodes) if (n.dataset && n.dataset.seq) __seen.set(Number(n.dataset.seq), now);
		}).observe(document.getElementById("rows"), { childList: true, subtree: true });
		window.__loaf = { n: 0, total: 0, script: 0, render: 0, worst: 0 };
		try {
			new PerformanceObserver((l) => { for (const e of l.getEntries()) __long.push(e.duration); }).observe({ type: "longtask" });
			new PerformanceObserver((l) => {
				for (const e of l.getEntries()) {
					const f = __loaf;
					f.n++; f.total += e.duration; f.worst = Math.max(f.worst, e.duration);
					f.render += e.renderStart ? e.startTime + e.duration - e.renderStart : 0;
					for (const sc of e.scripts || []) f.script += sc.duration;
				}
			}).observe({ type: "long-animation-frame" });
		} catch {}
		return true;
	})()`)

	sp, err := s.e.Log().Space(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	baseline := watchBaseline(t, s, sp.Head)
	first, last, rate := writeLoad(t, s)
	p.until(fmt.Sprintf(`(() => { for (let q = %d; q <= %d; q++) if (!__seen.has(q)) return false; return true; })()`, first, last))
	seen := eval[map[string]int64](p, `Object.fromEntries(__seen)`)
	long := eval[[]float64](p, `__long`)
	var loaf struct{ N, Total, Script, Render, Worst float64 }
	if err := json.Unmarshal([]byte(eval[string](p, `JSON.stringify(__loaf)`)), &loaf); err != nil {
		t.Fatal(err)
	}
	var got map[int64]time.Time
	select {
	case got = <-baseline:
	case <-time.After(stepTimeout):
		t.Fatal("the baseline watch did not receive every row")
	}

	ts := rowTimes(t, s, first, last)
	var browser, client []time.Duration
	for seq := first; seq <= last; seq++ {
		at, ok := seen[strconv.FormatInt(seq, 10)]
		if !ok {
			t.Fatalf("the page never showed row %d", seq)
		}
		browser = append(browser, time.UnixMilli(at).Sub(ts[seq]))
		client = append(client, got[seq].Sub(ts[seq]))
	}
	b, c := quantiles(browser), quantiles(client)
	t.Logf("stream page at %.0f commits/s, %d rows, every row received: commit to row on the page p50 %v p99 %v max %v; "+
		"Go watch client (baseline, same run) p50 %v p99 %v max %v; page/baseline p99 ratio %.1f; long tasks %d (longest %.0fms); "+
		"long animation frames %.0f, %.0fms in all (%.0fms rendering, %.0fms script), the longest %.0fms",
		rate, len(browser), b[0], b[1], b[2], c[0], c[1], c[2], float64(b[1])/float64(max(c[1], time.Millisecond)), len(long), slices.Max(append(long, 0)),
		loaf.N, loaf.Total, loaf.Render, loaf.Script, loaf.Worst)
}

// quantiles returns the p50, p99 and max of ds, rounded to milliseconds.
func quantiles(ds []time.Duration) [3]time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))].Round(time.Millisecond) }
	return [3]time.Duration{at(0.50), at(0.99), s[len(s)-1].Round(time.Millisecond)}
}

// writeLoad commits loadRows rows, one mutation each, on a schedule of
// loadRate a second: every write starts at its slot in its own goroutine
// (at most 64 in flight), so a slow commit does not delay the next. It
// returns the first and last seq and the rate achieved.
func writeLoad(t *testing.T, s *stack) (first, last int64, rate float64) {
	t.Helper()
	ctx := context.Background()
	gap := time.Second / loadRate
	seqs := make([]int64, loadRows)
	errs := make(chan error, loadRows)
	inFlight := make(chan struct{}, 64)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range loadRows {
		time.Sleep(time.Until(start.Add(time.Duration(i) * gap))) // pacing the load, not waiting for a result
		inFlight <- struct{}{}
		wg.Go(func() {
			defer func() { <-inFlight }()
			res, err := s.e.Log().Write(ctx, changelog.WriteRequest{Space: "default",
				Provenance: store.Provenance{Actor: "loader", Via: "api"},
				Mutations: []changelog.Mutation{{Op: "put", Type: "load", EntityID: fmt.Sprintf("l%d", i),
					Properties: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}}})
			if err != nil {
				errs <- fmt.Errorf("write %d: %w", i, err)
				return
			}
			seqs[i] = res.Receipts[0].Seq
		})
	}
	wg.Wait()
	rate = float64(loadRows) / time.Since(start).Seconds()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return slices.Min(seqs), slices.Max(seqs), rate
}

// watchBaseline watches the space from head over HTTP and sends the
// receive time of every row once loadRows rows arrived.
func watchBaseline(t *testing.T, s *stack, head int64) <-chan map[int64]time.Time {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/v1/spaces/default/changes?watch=1&from=%d", s.srv.URL, head), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	if !sc.Scan() {
		t.Fatalf("baseline watch: no bookmark: %v", sc.Err())
	}
	out := make(chan map[int64]time.Time, 1)
	go func() {
		defer res.Body.Close()
		got := map[int64]time.Time{}
		for len(got) < loadRows && sc.Scan() {
			var row struct {
				Seq *int64 `json:"seq"`
			}
			if json.Unmarshal(sc.Bytes(), &row) == nil && row.Seq != nil {
				got[*row.Seq] = time.Now()
			}
		}
		out <- got
	}()
	return out
}

// rowTimes reads the commit time of the rows first..last.
func rowTimes(t *testing.T, s *stack, first, last int64) map[int64]time.Time {
	t.Helper()
	out := map[int64]time.Time{}
	for from := first - 1; from < last; {
		page, err := s.e.Log().Read(context.Background(), "default", from, changelog.Filter{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Rows {
			if r.Seq <= last {
				out[r.Seq] = r.TS
			}
		}
		from = page.Cursor
	}
	return out
}
