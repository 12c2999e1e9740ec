package views_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/definitions"
	"github.com/eddy-run/eddy/journal"
	"github.com/eddy-run/eddy/server"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/storetest"
	"github.com/eddy-run/eddy/views"
)

// BenchmarkBootstrap bootstraps a 10,000-entity view out of a space of
// EDDY_BENCH_ENTITIES entities (default 1,000,000: 990,000 notes and
// 10,000 tasks of project alpha, interleaved) on PostgreSQL, with the
// keyset and the frozen strategy, in process and over HTTP, and compares
// each with a raw keyset scan of the same rows (the driver's EntityList in
// pages of 1000) in the same run. Each figure is the median of 5 runs,
// the strategies taking turns.
// EDDY_BENCH_DATABASE_URL names a database to keep the fixture in across
// runs (it is populated when its space "s" is empty); by default a fresh
// database is made and dropped.
func BenchmarkBootstrap(b *testing.B) {
	entities := 1_000_000
	if n, err := strconv.Atoi(os.Getenv("EDDY_BENCH_ENTITIES")); err == nil && n > 0 {
		entities = n
	}
	ctx := context.Background()
	url := os.Getenv("EDDY_BENCH_DATABASE_URL")
	if url == "" {
		url = pgtest.NewDatabase(b)
	}
	st := storetest.Migrated(b, func(ctx context.Context) (*postgres.Store, error) { return postgres.Open(ctx, url) })
	lg := changelog.New(st, changelog.Options{})
	b.Cleanup(func() { _ = lg.Close() })
	start := time.Now()
	tasks := populate(b, lg, entities)
	b.Logf("populated %d entities (%d tasks) in %v", entities, tasks, time.Since(start))
	svc := views.New(lg, views.Options{})
	if _, _, err := svc.Put(ctx, "s", "alpha", []byte(`{"version":"v1","types":["task"],"filter":{"fieldEquals":{"field":"project","expected":"alpha"}}}`)); err != nil {
		b.Fatal(err)
	}
	// Identified, as the server makes every reader: a frozen session is
	// judged for its opener once, when it is materialized.
	admin := views.Identify(auth.NewReader(&auth.Principal{Space: auth.AllSpaces, Role: auth.RoleAdmin}, nil), "bench")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	api, err := server.New(server.Config{Log: lg, Auth: auth.NewService(st), Views: svc, Logger: quiet,
		Definitions: definitions.New(lg, definitions.Options{}), Journal: journal.New(lg, journal.Options{Logger: quiet})})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	b.Cleanup(srv.Close)
	_, secret, err := auth.NewService(st).Create(ctx, auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin})
	if err != nil {
		b.Fatal(err)
	}
	runs := map[string]func() (int, time.Duration){
		"raw": func() (int, time.Duration) { return timed(func() int { return rawScan(b, st) }) },
		"keyset": func() (int, time.Duration) {
			return timed(func() int { return bootstrap(b, svc, admin, views.Keyset) })
		},
		"frozen": func() (int, time.Duration) {
			return timed(func() int { return bootstrap(b, svc, admin, views.Frozen) })
		},
		"http-keyset": func() (int, time.Duration) {
			return timed(func() int { return httpBootstrap(b, srv.URL, secret, views.Keyset) })
		},
		"http-frozen": func() (int, time.Duration) {
			return timed(func() int { return httpBootstrap(b, srv.URL, secret, views.Frozen) })
		},
		"frozen-pages": func() (int, time.Duration) { return frozenPagesOnly(b, svc, admin) },
	}
	rates := map[string]float64{}
	names := []string{"raw", "keyset", "frozen", "frozen-pages", "http-keyset", "http-frozen"}
	if only := os.Getenv("EDDY_BENCH_ONLY"); only != "" { // for profiling one strategy
		names = strings.Split(only, ",")
	}
	// The strategies take turns, round after round, so that a machine
	// whose load changes slows them alike; each figure is the median.
	samples := map[string][]float64{}
	for range 5 {
		for _, name := range names {
			n, took := runs[name]()
			if n != tasks {
				b.Fatalf("%s read %d rows, want %d", name, n, tasks)
			}
			samples[name] = append(samples[name], float64(n)/took.Seconds())
		}
	}
	for _, name := range names {
		slices.Sort(samples[name])
		rates[name] = samples[name][len(samples[name])/2]
		b.ReportMetric(rates[name], name+"-rows/s")
	}
	for _, name := range []string{"keyset", "frozen", "http-keyset", "http-frozen"} {
		if rates[name] > 0 && rates["raw"] > 0 {
			b.ReportMetric(100*rates[name]/rates["raw"], name+"-%-of-raw")
		}
	}
}

// populate writes n entities in batches of 1000: every 100th a task of
// project alpha, the others notes. It returns the number of tasks.
func populate(b *testing.B, lg *changelog.Log, n int) int {
	b.Helper()
	ctx := context.Background()
	sp, err := lg.EnsureSpace(ctx, "s")
	if err != nil {
		b.Fatal(err)
	}
	tasks := 0
	if sp.Head == int64(n) { // kept from an earlier run
		return (n + 99) / 100
	}
	for i := 0; i < n; {
		batch := make([]changelog.Mutation, 0, 1000)
		for ; i < n && len(batch) < cap(batch); i++ {
			m := changelog.Mutation{Op: changelog.OpPut, Type: "note", EntityID: fmt.Sprintf("n%07d", i),
				Properties: json.RawMessage(`{"text":"a note of some length, as notes are","n":` + strconv.Itoa(i) + `}`)}
			if i%100 == 0 {
				m = changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: fmt.Sprintf("t%07d", i),
					Properties: json.RawMessage(`{"project":"alpha","title":"a task to sync","n":` + strconv.Itoa(i) + `}`)}
				tasks++
			}
			batch = append(batch, m)
		}
		if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Mutations: batch, Provenance: store.Provenance{Actor: "loader", Via: "api"}}); err != nil {
			b.Fatal(err)
		}
	}
	return tasks
}

// timed times fn.
func timed(fn func() int) (int, time.Duration) {
	start := time.Now()
	n := fn()
	return n, time.Since(start)
}

// rawScan reads every task with the driver's keyset scan.
func rawScan(b *testing.B, st store.Store) int {
	b.Helper()
	n, after := 0, ""
	for {
		recs, err := st.EntityList(context.Background(), store.EntityListParams{Space: "s", Type: "task", After: after, Limit: 1000})
		if err != nil {
			b.Fatal(err)
		}
		n += len(recs)
		if len(recs) < 1000 {
			return n
		}
		after = recs[len(recs)-1].ID
	}
}

func bootstrap(b *testing.B, svc *views.Service, r views.Reader, strategy string) int {
	b.Helper()
	ctx := context.Background()
	op, err := svc.Open(ctx, views.OpenParams{Space: "s", View: "alpha", PageSize: views.MaxPageSize, Strategy: strategy, Reader: r})
	if err != nil {
		b.Fatal(err)
	}
	return readPages(b, svc, r, op.Token)
}

// frozenPagesOnly opens a frozen bootstrap untimed, then times reading
// its pages: what a retrying or second process pays per page.
func frozenPagesOnly(b *testing.B, svc *views.Service, r views.Reader) (int, time.Duration) {
	b.Helper()
	op, err := svc.Open(context.Background(), views.OpenParams{Space: "s", View: "alpha", PageSize: views.MaxPageSize, Reader: r})
	if err != nil {
		b.Fatal(err)
	}
	return timed(func() int { return readPages(b, svc, r, op.Token) })
}

func readPages(b *testing.B, svc *views.Service, r views.Reader, tok string) int {
	b.Helper()
	n := 0
	for {
		p, err := svc.Page(context.Background(), "s", "alpha", tok, r)
		if err != nil {
			b.Fatal(err)
		}
		n += bytes.Count(p.Records, []byte(`{"type":"task"`)) // the fixture's records, without decoding them
		if p.NextToken == nil {
			return n
		}
		tok = *p.NextToken
	}
}

// httpBootstrap runs a whole bootstrap through the HTTP API.
func httpBootstrap(b *testing.B, url, secret, strategy string) int {
	b.Helper()
	do := func(method, path, body string, v any) {
		req, _ := http.NewRequest(method, url+"/api/v1/spaces/s/views/alpha"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(res.Body)
			b.Fatalf("%s %s: %d %s", method, path, res.StatusCode, msg)
		}
		if err := json.NewDecoder(res.Body).Decode(v); err != nil {
			b.Fatal(err)
		}
	}
	var op views.Opened
	do(http.MethodPost, "/bootstrap", `{"pageSize":1000,"strategy":"`+strategy+`"}`, &op)
	n := 0
	for tok := op.Token; ; {
		var p struct {
			Records   json.RawMessage `json:"records"`
			NextToken *string         `json:"nextToken"`
		}
		do(http.MethodGet, "/bootstrap/"+tok, "", &p)
		n += bytes.Count(p.Records, []byte(`{"type":"task"`))
		if p.NextToken == nil {
			return n
		}
		tok = *p.NextToken
	}
}
