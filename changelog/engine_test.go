package changelog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/storetest"
)

var (
	apiProv  = store.Provenance{Actor: "owner", Via: "api", RequestID: "req-1"}
	parkProv = store.Provenance{Actor: "engine", Via: "engine", Trigger: "ping", Delivery: "dlv-1", CausedBy: 1, Depth: 17}
	errBoom  = errors.New("boom")
)

// eachStore runs fn against a SQLite and a PostgreSQL store (whose
// driver honours the write cache's predictions).
func eachStore(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, openSQLite(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, storetest.Migrated(t, func(ctx context.Context) (*postgres.Store, error) {
			return postgres.Open(ctx, pgtest.NewDatabase(t))
		}))
	})
}

func parkRow(id string) changelog.EngineRow {
	return changelog.EngineRow{Op: changelog.OpPark, Type: "eddy.delivery", EntityID: id,
		Payload: json.RawMessage(`{"trigger":"ping","depth":17}`), Provenance: parkProv}
}

func fireRow(name string) changelog.EngineRow {
	return changelog.EngineRow{Op: changelog.OpFire, Type: "eddy.trigger", EntityID: name,
		Payload:    json.RawMessage(`{"scheduledAt":"2026-08-04T12:00:00Z"}`),
		Provenance: store.Provenance{Actor: "engine", Via: "engine", Trigger: name, MutationID: "ignored"}}
}

func putTask(id, props string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: id, Properties: json.RawMessage(props)}
}

// head returns the head of space s.
func head(t *testing.T, lg *changelog.Log) int64 {
	t.Helper()
	sp, err := lg.Space(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	return sp.Head
}

// markEffects returns an Effects that stores a receipt under id inside the write
// transaction: it becomes visible (a later write with that mutation id is
// answered from it) only if the transaction commits.
func markEffects(id string, seen *changelog.WriteResult, fail error) func(context.Context, store.WriteTx, changelog.WriteResult) error {
	return func(ctx context.Context, tx store.WriteTx, res changelog.WriteResult) error {
		if seen != nil {
			*seen = res
		}
		sr := store.StoredReceipt{MutationID: id, CreatedAt: time.Date(2026, 8, 4, 12, 0, 0, 0, time.UTC),
			Receipt: store.Receipt{MutationID: id, Status: store.ReceiptNoop, Accepted: []string{}, Rejected: []store.RejectedProperty{}}}
		if err := tx.ReceiptPut(ctx, sr); err != nil {
			return err
		}
		return fail
	}
}

// marked tells whether markEffects(id) committed: a put with mutation id
// id is then answered from the stored noop receipt.
func marked(t *testing.T, lg *changelog.Log, id string) bool {
	t.Helper()
	m := putTask("probe-"+id, `{"n":1}`)
	m.MutationID = id
	res, err := lg.Write(context.Background(), changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}, Provenance: apiProv})
	if err != nil {
		t.Fatal(err)
	}
	return res.Receipts[0].Status == store.ReceiptNoop
}

func TestWriteEngineRows(t *testing.T) {
	t.Parallel()
	eachStore(t, testWriteEngineRows)
}

func testWriteEngineRows(t *testing.T, st store.Store) {
	ctx := context.Background()
	lg, clock := newLog(t, st)
	req := changelog.WriteRequest{Space: "s", Provenance: apiProv,
		Mutations: []changelog.Mutation{putTask("t1", `{"n":1}`)},
		Engine:    []changelog.EngineRow{parkRow("dlv-1"), fireRow("cron")}}
	res, err := lg.Write(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Receipts[0].Seq != 1 || fmt.Sprint(res.EngineSeqs) != "[2 3]" || res.LastSeq != 3 {
		t.Fatalf("result: receipt seq %d, engine seqs %v, last seq %d", res.Receipts[0].Seq, res.EngineSeqs, res.LastSeq)
	}
	page, err := lg.Pull(ctx, "s", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Commits) != 3 {
		t.Fatalf("pulled %d commits, want 3", len(page.Commits))
	}
	park, fire := page.Commits[1], page.Commits[2]
	checkEngineCommit(t, park, 2, clock.Now(), parkRow("dlv-1"))
	wantFire := fireRow("cron")
	wantFire.Provenance.MutationID = ""
	checkEngineCommit(t, fire, 3, clock.Now(), wantFire)

	rows, err := lg.Read(ctx, "s", 0, changelog.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Rows) != 3 || rows.Cursor != 3 {
		t.Fatalf("read %d rows to %d, want 3 to 3", len(rows.Rows), rows.Cursor)
	}
	got, _ := json.Marshal(rows.Rows[1])
	want := `{"seq":2,"ts":"2026-08-04T12:00:00.000000Z","actor":"engine","op":"park","entityId":"dlv-1","type":"eddy.delivery","payload":{"trigger":"ping","depth":17}}`
	if string(got) != want {
		t.Fatalf("park wire row\n got %s\nwant %s", got, want)
	}
	if r := rows.Rows[2]; r.Op != "fire" || r.Type != "eddy.trigger" || r.EntityID != "cron" || r.Actor != "engine" {
		t.Fatalf("fire wire row = %+v", r)
	}
}

func checkEngineCommit(t *testing.T, c store.Commit, seq int64, ts time.Time, r changelog.EngineRow) {
	t.Helper()
	if c.Seq != seq || !c.TS.Equal(ts) || c.Actor != r.Provenance.Actor || c.Op != r.Op || c.Type != r.Type || c.EntityID != r.EntityID {
		t.Errorf("commit %d row = %+v", seq, c.Row)
	}
	var got, want any
	if err := json.Unmarshal(c.Payload, &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(r.Payload, &want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("commit %d payload = %s, want %s", seq, c.Payload, r.Payload)
	}
	if len(c.Changes) != 0 {
		t.Errorf("commit %d has %d changes", seq, len(c.Changes))
	}
	rc := c.Receipt
	if rc.Status != store.ReceiptApplied || rc.Seq != seq || rc.MutationID != "" || len(rc.Accepted) != 0 || len(rc.Rejected) != 0 || rc.Reason != nil {
		t.Errorf("commit %d receipt = %+v", seq, rc)
	}
	if c.Provenance != r.Provenance {
		t.Errorf("commit %d provenance = %+v, want %+v", seq, c.Provenance, r.Provenance)
	}
}

func TestWriteEngineOnly(t *testing.T) {
	t.Parallel()
	eachStore(t, testWriteEngineOnly)
}

func testWriteEngineOnly(t *testing.T, st store.Store) {
	ctx := context.Background()
	lg, _ := newLog(t, st)
	res, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Engine: []changelog.EngineRow{fireRow("cron")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Receipts) != 0 || fmt.Sprint(res.EngineSeqs) != "[1]" || res.LastSeq != 1 || head(t, lg) != 1 {
		t.Fatalf("result = %+v, head %d", res, head(t, lg))
	}
	if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "s"}); problem.CodeOf(err) != problem.BadRequest {
		t.Fatalf("empty request: %v, want bad_request", err)
	}
}

func TestWriteEngineRowInvalid(t *testing.T) {
	t.Parallel()
	eachStore(t, testWriteEngineRowInvalid)
}

func testWriteEngineRowInvalid(t *testing.T, st store.Store) {
	ctx := context.Background()
	lg, _ := newLog(t, st)
	bad := func(f func(r *changelog.EngineRow)) changelog.EngineRow {
		r := parkRow("dlv-1")
		f(&r)
		return r
	}
	tests := map[string]changelog.EngineRow{
		"client op":      bad(func(r *changelog.EngineRow) { r.Op = changelog.OpPut }),
		"no op":          bad(func(r *changelog.EngineRow) { r.Op = "" }),
		"wrong type":     bad(func(r *changelog.EngineRow) { r.Type = "eddy.trigger" }),
		"client type":    bad(func(r *changelog.EngineRow) { r.Type = "task" }),
		"bad id":         bad(func(r *changelog.EngineRow) { r.EntityID = "a b" }),
		"no id":          bad(func(r *changelog.EngineRow) { r.EntityID = "" }),
		"array payload":  bad(func(r *changelog.EngineRow) { r.Payload = json.RawMessage(`[1]`) }),
		"no payload":     bad(func(r *changelog.EngineRow) { r.Payload = nil }),
		"broken payload": bad(func(r *changelog.EngineRow) { r.Payload = json.RawMessage(`{"a":`) }),
		"no actor":       bad(func(r *changelog.EngineRow) { r.Provenance.Actor = "" }),
	}
	for name, row := range tests {
		req := changelog.WriteRequest{Space: "s", Provenance: apiProv,
			Mutations: []changelog.Mutation{putTask("t1", `{"n":1}`)},
			Engine:    []changelog.EngineRow{fireRow("cron"), row}}
		_, err := lg.Write(ctx, req)
		if err == nil || problem.CodeOf(err) != "" {
			t.Errorf("%s: err = %v, want a plain error", name, err)
		}
	}
	if h := head(t, lg); h != 0 {
		t.Fatalf("head %d after refused writes", h)
	}
}

// TestWriteRefusesClientEngineOps checks that fire and park stay engine
// rows: as mutations they are bad_request naming the op.
func TestWriteRefusesClientEngineOps(t *testing.T) {
	t.Parallel()
	eachStore(t, testWriteRefusesClientEngineOps)
}

func testWriteRefusesClientEngineOps(t *testing.T, st store.Store) {
	lg, _ := newLog(t, st)
	for _, m := range []changelog.Mutation{
		{Op: changelog.OpFire, Type: "eddy.trigger", EntityID: "cron"},
		{Op: changelog.OpPark, Type: "eddy.delivery", EntityID: "dlv-1"},
	} {
		_, err := lg.Write(context.Background(), changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}, Provenance: apiProv})
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Code != problem.BadRequest || pe.Details["field"] != "op" {
			t.Errorf("%s mutation: err = %v, want bad_request on op", m.Op, err)
		}
	}
}

func TestWriteEffects(t *testing.T) {
	t.Parallel()
	eachStore(t, testWriteEffects)
}

func testWriteEffects(t *testing.T, st store.Store) {
	ctx := context.Background()
	lg, _ := newLog(t, st)
	var seen changelog.WriteResult
	req := changelog.WriteRequest{Space: "s", Provenance: apiProv,
		Mutations: []changelog.Mutation{putTask("t1", `{"n":1}`)},
		Engine:    []changelog.EngineRow{parkRow("dlv-1")},
		Effects:   markEffects("fx-1", &seen, nil)}
	res, err := lg.Write(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if seen.LastSeq != 2 || fmt.Sprint(seen.EngineSeqs) != "[2]" || seen.Receipts[0].Seq != 1 || seen.Entities[0] == nil || !seen.Created[0] {
		t.Fatalf("effects saw %+v", seen)
	}
	if res.LastSeq != seen.LastSeq {
		t.Fatalf("result last seq %d, effects saw %d", res.LastSeq, seen.LastSeq)
	}
	if !marked(t, lg, "fx-1") {
		t.Fatal("the effects' write did not commit")
	}
}

func TestWriteEffectsFailure(t *testing.T) {
	t.Parallel()
	eachStore(t, testWriteEffectsFailure)
}

func testWriteEffectsFailure(t *testing.T, st store.Store) {
	ctx := context.Background()
	lg, _ := newLog(t, st)
	if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Provenance: apiProv, Mutations: []changelog.Mutation{putTask("t1", `{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	req := changelog.WriteRequest{Space: "s", Provenance: apiProv,
		Mutations: []changelog.Mutation{putTask("t1", `{"n":2}`), putTask("t2", `{"n":1}`)},
		Engine:    []changelog.EngineRow{parkRow("dlv-1")},
		Effects:   markEffects("fx-1", nil, errBoom)}
	if _, err := lg.Write(ctx, req); !errors.Is(err, errBoom) {
		t.Fatalf("err = %v, want the effects' error", err)
	}
	checkUnchanged(t, lg, 1, "fx-1")
	// The write cache was dropped with the transaction: the next write
	// sees the real state.
	v := int64(1)
	m := putTask("t1", `{"n":3}`)
	m.IfVersion = &v
	res, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Provenance: apiProv, Mutations: []changelog.Mutation{m}})
	if err != nil || res.Receipts[0].Status != store.ReceiptApplied {
		t.Fatalf("write after failed effects: %+v, %v", res, err)
	}
}

// checkUnchanged checks that a failed write left head h, task t1 at
// version 1 with n=1, no task t2 and no effects mark id.
func checkUnchanged(t *testing.T, lg *changelog.Log, h int64, id string) {
	t.Helper()
	ctx := context.Background()
	if got := head(t, lg); got != h {
		t.Fatalf("head %d, want %d", got, h)
	}
	rec, err := lg.Get(ctx, "s", store.EntityKey{Type: "task", ID: "t1"})
	if err != nil || rec.Version != 1 || string(rec.Properties) != `{"n":1}` {
		t.Fatalf("t1 = %+v, %v", rec, err)
	}
	if _, err := lg.Get(ctx, "s", store.EntityKey{Type: "task", ID: "t2"}); problem.CodeOf(err) != problem.NotFound {
		t.Fatalf("t2: %v, want not_found", err)
	}
	if marked(t, lg, id) {
		t.Fatal("the failed effects' write committed")
	}
}

// TestWriteEffectsFailsAlone groups several requests into one transaction
// with one failing Effects: that request fails by itself with its error,
// the others commit.
func TestWriteEffectsFailsAlone(t *testing.T) {
	t.Parallel()
	eachStore(t, testWriteEffectsFailsAlone)
}

func testWriteEffectsFailsAlone(t *testing.T, st store.Store) {
	ctx := context.Background()
	var mu sync.Mutex
	var groups []changelog.GroupStats
	lg := changelog.New(st, changelog.Options{Observe: func(s changelog.GroupStats) {
		mu.Lock()
		defer mu.Unlock()
		groups = append(groups, s)
	}})
	t.Cleanup(func() { _ = lg.Close() })
	if _, err := lg.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Provenance: apiProv, Mutations: []changelog.Mutation{putTask("t1", `{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}

	// A blocker holds the transaction open until the others are queued.
	entered, release := make(chan struct{}), make(chan struct{})
	blocker := changelog.WriteRequest{Space: "s", Provenance: apiProv,
		Mutations: []changelog.Mutation{putTask("blocker", `{"n":1}`)},
		Effects: func(context.Context, store.WriteTx, changelog.WriteResult) error {
			close(entered)
			<-release
			return nil
		}}
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := lg.Write(ctx, blocker); err != nil {
			t.Errorf("blocker: %v", err)
		}
	})
	<-entered

	const n = 4
	const bad = 2
	errs := make([]error, n)
	results := make([]changelog.WriteResult, n)
	effects := make([]int, n)
	for i := range n {
		req := changelog.WriteRequest{Space: "s", Provenance: apiProv,
			Mutations: []changelog.Mutation{putTask(fmt.Sprintf("g%d", i), `{"n":1}`)},
			Engine:    []changelog.EngineRow{parkRow(fmt.Sprintf("dlv-%d", i))},
			Effects: func(context.Context, store.WriteTx, changelog.WriteResult) error {
				effects[i]++
				if i == bad {
					return fmt.Errorf("request %d: %w", i, errBoom)
				}
				return nil
			}}
		if i == bad {
			req.Mutations = append(req.Mutations, putTask("t1", `{"n":2}`))
		}
		wg.Go(func() { results[i], errs[i] = lg.Write(ctx, req) })
	}
	for changelog.QueueLen(lg, "s") < n {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()

	for i := range n {
		switch {
		case i == bad && !errors.Is(errs[i], errBoom):
			t.Errorf("request %d: err = %v, want the effects' error", i, errs[i])
		case i != bad && errs[i] != nil:
			t.Errorf("request %d: %v", i, errs[i])
		case i != bad && (results[i].Receipts[0].Status != store.ReceiptApplied || len(results[i].EngineSeqs) != 1):
			t.Errorf("request %d: result %+v", i, results[i])
		}
		// The failing request's Effects ran in the group and alone; the
		// others' ran alone, and in the group unless they came after it.
		if effects[i] < 1 || (i == bad && effects[i] < 2) {
			t.Errorf("request %d: effects ran %d times", i, effects[i])
		}
	}
	mu.Lock()
	grouped := false
	for _, g := range groups {
		grouped = grouped || (g.Requests == n && g.Err != nil)
	}
	mu.Unlock()
	if !grouped {
		t.Fatalf("no failed group of %d requests in %+v", n, groups)
	}
	// seed + blocker + (n-1) requests of two commits each.
	if h := head(t, lg); h != 2+2*(n-1) {
		t.Fatalf("head %d, want %d", h, 2+2*(n-1))
	}
	rec, err := lg.Get(ctx, "s", store.EntityKey{Type: "task", ID: "t1"})
	if err != nil || rec.Version != 1 {
		t.Fatalf("t1 = %+v, %v; the failed request's patch leaked", rec, err)
	}
	if _, err := lg.Get(ctx, "s", store.EntityKey{Type: "task", ID: fmt.Sprintf("g%d", bad)}); problem.CodeOf(err) != problem.NotFound {
		t.Fatalf("g%d: %v, want not_found", bad, err)
	}
	v := int64(1)
	m := putTask("t1", `{"n":3}`)
	m.IfVersion = &v
	res, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Provenance: apiProv, Mutations: []changelog.Mutation{m}})
	if err != nil || res.Receipts[0].Status != store.ReceiptApplied {
		t.Fatalf("write after the failed group: %+v, %v", res, err)
	}
}

func TestWriteEffectsNoop(t *testing.T) {
	t.Parallel()
	eachStore(t, testWriteEffectsNoop)
}

func testWriteEffectsNoop(t *testing.T, st store.Store) {
	ctx := context.Background()
	lg, _ := newLog(t, st)
	req := changelog.WriteRequest{Space: "s", Provenance: apiProv, Mutations: []changelog.Mutation{putTask("t1", `{"n":1}`)}}
	if _, err := lg.Write(ctx, req); err != nil {
		t.Fatal(err)
	}
	var seen changelog.WriteResult
	req.Effects = markEffects("fx-noop", &seen, nil)
	if _, err := lg.Write(ctx, req); err != nil {
		t.Fatal(err)
	}
	if len(seen.Receipts) != 1 || seen.Receipts[0].Status != store.ReceiptNoop || seen.LastSeq != 1 || len(seen.EngineSeqs) != 0 {
		t.Fatalf("effects saw %+v", seen)
	}
	if head(t, lg) != 1 {
		t.Fatalf("head %d after a no-op, want 1", head(t, lg))
	}
	if !marked(t, lg, "fx-noop") {
		t.Fatal("the effects of a no-op write did not commit")
	}
}

func TestWriteEffectsAtomicRejected(t *testing.T) {
	t.Parallel()
	eachStore(t, testWriteEffectsAtomicRejected)
}

func testWriteEffectsAtomicRejected(t *testing.T, st store.Store) {
	ctx := context.Background()
	lg, _ := newLog(t, st)
	if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Provenance: apiProv, Mutations: []changelog.Mutation{putTask("t1", `{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	stale := int64(99)
	m := putTask("t1", `{"n":2}`)
	m.IfVersion = &stale
	var seen changelog.WriteResult
	req := changelog.WriteRequest{Space: "s", Provenance: apiProv, Atomic: true,
		Mutations: []changelog.Mutation{putTask("t2", `{"n":1}`), m},
		Engine:    []changelog.EngineRow{parkRow("dlv-1")},
		Effects:   markEffects("fx-atomic", &seen, nil)}
	res, err := lg.Write(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range seen.Receipts {
		if r.Status != store.ReceiptRejected {
			t.Errorf("effects saw receipt %d = %+v, want rejected", i, r)
		}
	}
	if len(seen.Receipts) != 2 || len(seen.EngineSeqs) != 0 || seen.LastSeq != 1 || len(res.EngineSeqs) != 0 {
		t.Fatalf("effects saw %+v, result %+v", seen, res)
	}
	if !marked(t, lg, "fx-atomic") {
		t.Fatal("the effects of a rejected atomic write did not commit")
	}
	page, err := lg.Pull(ctx, "s", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range page.Commits {
		if c.Op == changelog.OpPark {
			t.Fatalf("park row appended by a rejected atomic request: %+v", c.Row)
		}
	}
}

// TestEngineRowPayloadCompact: an engine row's payload is stored without
// insignificant whitespace, as every payload is (readers forward stored
// payloads as they are).
func TestEngineRowPayloadCompact(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		lg, _ := newLog(t, st)
		row := parkRow("dlv-1")
		row.Payload = json.RawMessage("{ \"trigger\" : \"ping a\",\n\t\"depth\": 17 }")
		if _, err := lg.Write(context.Background(), changelog.WriteRequest{Space: "s", Provenance: apiProv, Engine: []changelog.EngineRow{row}}); err != nil {
			t.Fatal(err)
		}
		page, err := lg.PullRaw(context.Background(), "s", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Commits) != 1 || string(page.Commits[0].Payload) != `{"trigger":"ping a","depth":17}` {
			t.Fatalf("stored payload %q", page.Commits[0].Payload)
		}
	})
}
