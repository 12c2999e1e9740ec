package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/storetest"
)

// benchEnv is the env variable that runs the journal measurements: its
// value is the number of commits of the large space (e.g. 1000000).
const benchEnv = "EDDY_JOURNAL_BENCH"

// populate appends n commits straight through the store, in
// transactions of 1,000: puts over n/10 docs, 1% of which alice may read
// (members ["alice"]), each written about 10 times.
func populate(tb testing.TB, st store.Store, space string, n int, ts time.Time) {
	tb.Helper()
	ctx := context.Background()
	docs := max(n/10, 1)
	cur := make(map[int]*store.Record, docs)
	for seq := 1; seq <= n; {
		tx, err := st.WriteBegin(ctx, store.WriteBeginParams{Space: space})
		if err != nil {
			tb.Fatal(err)
		}
		for end := min(seq+1000, n+1); seq < end; seq++ {
			i := (seq * 7919) % docs
			members := `["bob","carol"]`
			if i%100 == 0 {
				members = `["alice","bob"]`
			}
			id := "d" + strconv.Itoa(i)
			after := &store.Record{Type: "doc", ID: id, Version: int64(seq), Kind: store.KindLive, CreatedAt: ts, UpdatedAt: ts,
				Properties: json.RawMessage(`{"members":` + members + `,"n":` + strconv.Itoa(seq) + `,"title":"a document title"}`)}
			ch := store.Change{Kind: store.ChangeCreated, Type: "doc", ID: id, Version: int64(seq), After: after}
			if before := cur[i]; before != nil {
				ch.Kind, ch.Before, after.CreatedAt = store.ChangeUpdated, before, before.CreatedAt
			}
			c := store.Commit{Row: store.Row{Seq: int64(seq), TS: ts, Actor: "owner", Op: "put", Type: "doc", EntityID: id,
				Payload: json.RawMessage(`{"properties":["members","n","title"]}`)}, Changes: []store.Change{ch},
				Provenance: store.Provenance{Actor: "owner", Via: "api"}}
			if err := tx.Append(ctx, c, []store.Record{*after}); err != nil {
				tb.Fatal(err)
			}
			cur[i] = after
		}
		if err := tx.Commit(ctx); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestJournalThroughput measures, for one user over a large space of
// which 1% is readable to it, journal pages/s, records/s and commits
// walked/s against a forward changes read of the same space (and the raw
// commit read the journal is built on), in one run. It asserts nothing:
// it logs the figures and ratios. EDDY_JOURNAL_BENCH=N sets the scale;
// EDDY_JOURNAL_BENCH_DRIVER=postgres runs it on PostgreSQL (default
// SQLite).
func TestJournalThroughput(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(benchEnv))
	if n <= 0 {
		t.Skip("a measurement: set " + benchEnv + "=<commits>")
	}
	ctx := context.Background()
	st := drivers[0].open(t)
	if os.Getenv(benchEnv+"_DRIVER") == "postgres" {
		st = drivers[1].open(t)
	}
	clock := storetest.NewClock(start)
	lg := changelog.New(st, changelog.Options{Now: clock.Now})
	defer lg.Close()
	if _, err := lg.EnsureSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := lg.PutType(ctx, "s", "doc", []byte(`{"access":{"read":"user in entity.properties.members"}}`)); err != nil {
		t.Fatal(err)
	}
	svc := New(lg, Options{Now: clock.Now})
	as := auth.NewService(st)
	p := &auth.Principal{Space: "s", Role: auth.RoleReader, User: "alice", Application: "bench"}
	rd, err := as.Reader(ctx, p, "s")
	if err != nil {
		t.Fatal(err)
	}
	c := Client{User: "alice", Application: "bench", Reader: rd}
	ses, err := svc.CreateSession(ctx, "s", c)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	populate(t, st, "s", n, start)
	t.Logf("populated %d commits in %v", n, time.Since(t0).Round(time.Millisecond))
	clock.Advance(time.Hour)

	var pages, records int
	t0 = time.Now()
	for cur := ses.Cursor; ; {
		pg, err := svc.Read(ctx, ReadParams{Space: "s", Client: c, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		records += len(pg.Records)
		cur = pg.NextCursor
		if !pg.HasMore {
			break
		}
	}
	jt := time.Since(t0)

	var rows int
	t0 = time.Now()
	for from := int64(0); from < int64(n); {
		pg, err := lg.Read(ctx, "s", from, changelog.Filter{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		rows += len(pg.Rows)
		from = pg.Cursor
	}
	ct := time.Since(t0)

	t0 = time.Now()
	for after := int64(0); after < int64(n); {
		cs, err := st.Commits(ctx, store.CommitsParams{Space: "s", After: after, Limit: 1000, NoReceipts: true})
		if err != nil {
			t.Fatal(err)
		}
		after = cs[len(cs)-1].Seq
	}
	rt := time.Since(t0)

	per := func(k int, d time.Duration) float64 { return float64(k) / d.Seconds() }
	t.Logf("journal: %d pages, %d records over %d commits in %v: %.1f pages/s, %.0f records/s, %.0f commits walked/s",
		pages, records, n, jt.Round(time.Millisecond), per(pages, jt), per(records, jt), per(n, jt))
	t.Logf("forward changes read (admin, unfiltered, limit 1000): %d rows in %v: %.0f rows/s", rows, ct.Round(time.Millisecond), per(rows, ct))
	t.Logf("raw commit read (changes, no receipts, 1000 a call): %v: %.0f commits/s", rt.Round(time.Millisecond), per(n, rt))
	t.Logf("ratio: journal commits walked/s = %.2fx the forward changes read, %.2fx the raw commit read", ct.Seconds()/jt.Seconds(), rt.Seconds()/jt.Seconds())
}

// TestSettledLag measures, at 100 commits/s on the real clock with the
// default safe window, the lag from a commit to the first journal page
// that includes it, for a reader polling every 10 ms; it logs p50, p99
// and max against the safe window + 100 ms. EDDY_JOURNAL_BENCH=N (any
// N > 0) runs it for 10 s.
func TestSettledLag(t *testing.T) {
	if n, _ := strconv.Atoi(os.Getenv(benchEnv)); n <= 0 {
		t.Skip("a measurement: set " + benchEnv + "=<commits>")
	}
	ctx := context.Background()
	e := newEnv(t, drivers[0].open(t), Options{Now: time.Now})
	e.log = changelog.New(e.st, changelog.Options{}) // the real clock
	e.svc = New(e.log, Options{})
	ses := e.session(alice())
	const rate, run = 100, 10 * time.Second
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second / rate)
		defer tick.Stop()
		for i := 0; i < int(run.Seconds())*rate; i++ {
			<-tick.C
			e.write(put("note", fmt.Sprintf("n%d", i%500), fmt.Sprintf(`{"i":%d}`, i)))
		}
	}()
	var lags []time.Duration
	cur := ses.Cursor
	for want := int(run.Seconds()) * rate; len(lags) < want; {
		p, err := e.svc.Read(ctx, ReadParams{Space: "s", Client: alice(), Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		for _, r := range p.Records {
			lags = append(lags, now.Sub(r.Card.UpdatedAt))
		}
		cur = p.NextCursor
		if !p.HasMore {
			time.Sleep(10 * time.Millisecond) // the client's poll
		}
	}
	<-done
	slices.Sort(lags)
	q := func(f float64) time.Duration { return lags[int(f*float64(len(lags)-1))].Round(time.Millisecond) }
	t.Logf("settled lag over %d commits at %d/s (safe window %v, poll 10ms): p50 %v, p99 %v, max %v; bound %v",
		len(lags), rate, DefaultSafeWindow, q(0.5), q(0.99), q(1), DefaultSafeWindow+100*time.Millisecond)
}
