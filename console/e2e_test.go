package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/eddy-run/eddy/auth"
)

// hookServer is a webhook receiver that refuses deliveries (400: a
// failure not worth retrying) until told to accept them.
type hookServer struct {
	*httptest.Server
	accept   atomic.Bool
	accepted atomic.Int64
}

func newHookServer(t *testing.T) *hookServer {
	t.Helper()
	h := &hookServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.accept.Load() {
			http.Error(w, "not now", http.StatusBadRequest)
			return
		}
		h.accepted.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.Close)
	return h
}

// define saves the functions and triggers the scenarios use: audit (every
// task row, a function that writes nothing), the ping-pong pair (each
// writes the other type, so a chain grows until the cap of 4 parks it)
// and hook (a webhook on order rows, one attempt).
func define(t *testing.T, s *stack, hookURL string) {
	t.Helper()
	fn := func(name string, def any) {
		s.must(t, http.StatusCreated, "PUT", "/spaces/default/functions/"+name, def)
	}
	trig := func(name string, def any) {
		s.must(t, http.StatusCreated, "PUT", "/spaces/default/triggers/"+name, def)
	}
	fn("noop", map[string]any{"kind": "expr", "code": "nil"})
	fn("to-pong", map[string]any{"kind": "expr", "writes": []string{"pong"}, "code": `put("pong", entity.id, {"n": entity.properties.n + 1})`})
	fn("to-ping", map[string]any{"kind": "expr", "writes": []string{"ping"}, "code": `put("ping", entity.id, {"n": entity.properties.n + 1})`})
	fn("hook", map[string]any{"kind": "webhook", "url": hookURL})
	changes := func(types ...string) map[string]any {
		return map[string]any{"changes": map[string]any{"types": types}}
	}
	trig("audit", map[string]any{"source": changes("task"), "function": "noop"})
	trig("ping", map[string]any{"source": changes("ping"), "function": "to-pong", "causalityCap": 4})
	trig("pong", map[string]any{"source": changes("pong"), "function": "to-ping", "causalityCap": 4})
	trig("hook", map[string]any{"source": changes("order"), "function": "hook", "delivery": map[string]any{"maxAttempts": 1}})
}

// deliveryIDs lists the ids of a trigger's deliveries with a status.
func deliveryIDs(t *testing.T, s *stack, trigger, status string) []string {
	t.Helper()
	var page struct {
		Deliveries []struct {
			ID string `json:"id"`
		} `json:"deliveries"`
	}
	out := s.must(t, http.StatusOK, "GET", "/spaces/default/deliveries?trigger="+trigger+"&status="+status, nil)
	if err := json.Unmarshal(out, &page); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range page.Deliveries {
		ids = append(ids, d.ID)
	}
	return ids
}

// eventually polls cond every 20ms until it holds, for up to stepTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConsole drives the console end to end in headless Chromium: one
// eddy, one browser, one admin tab and one reader tab for every step.
func TestConsole(t *testing.T) {
	s := newStack(t)
	hook := newHookServer(t)
	define(t, s, hook.URL+"/hook")
	admin := s.tab(t)
	var seqs struct{ open, done string }

	t.Run("sign in", func(t *testing.T) {
		p := admin.on(t)
		p.open("/")
		p.visible("#signin #token")
		p.shot("signin", "")
		p.signIn(s.admin)
		p.visible("#page-stream")
		if loc := p.location(); !strings.HasSuffix(loc, "/spaces/default/stream") {
			t.Fatalf("after sign-in at %s, want the default space's stream", loc)
		}
		if eval[bool](p, fmt.Sprintf(`location.href.includes(%q) || document.cookie !== ""`, s.admin)) {
			t.Fatal("the token is in the URL or a cookie")
		}
		if got := eval[string](p, `sessionStorage.getItem("eddy.token")`); got != s.admin {
			t.Fatal("the token is not in session storage")
		}
	})

	t.Run("a write appears live", func(t *testing.T) {
		p := admin.on(t)
		p.visible(`#stream-status[data-state="live"]`)
		seqs.open = s.put(t, "task", "t1", map[string]any{"title": "write the docs", "status": "open"})
		p.visible(`#rows .row[data-seq="` + seqs.open + `"]`)
		s.put(t, "note", "n1", map[string]any{"text": "remember the milk"})
		last := s.put(t, "task", "t2", map[string]any{"title": "ship it", "status": "open"})
		p.visible(`#rows .row[data-seq="` + last + `"]`)
		if got := p.text(`#rows .row[data-seq="` + last + `"] .entity`); got != "t2" {
			t.Fatalf("row %s shows entity %q", last, got)
		}
	})

	t.Run("the history keeps its place while live rows arrive", func(t *testing.T) {
		p := admin.on(t)
		last := s.batch(t, "event", 60)
		p.until(fmt.Sprintf(`document.querySelector('#rows .row[data-seq="%d"]') !== null`, last))
		anchor := fmt.Sprintf(`document.querySelector('#rows .row[data-seq="%d"]')`, last-30)
		before := eval[float64](p, anchor+`.scrollIntoView({block: "center"}), `+anchor+`.getBoundingClientRect().top`)
		if eval[float64](p, `window.scrollY`) <= 0 {
			t.Fatal("the page did not scroll")
		}
		newest := s.batch(t, "event", 10)
		p.until(fmt.Sprintf(`document.querySelector('#rows .row[data-seq="%d"]') !== null`, newest))
		if after := eval[float64](p, anchor+`.getBoundingClientRect().top`); after < before-2 || after > before+2 {
			t.Fatalf("row %d moved from %.0fpx to %.0fpx while 10 rows arrived", last-30, before, after)
		}
		eval[bool](p, `window.scrollTo(0, 0), true`)
	})

	t.Run("filters narrow the stream", func(t *testing.T) {
		p := admin.on(t)
		p.do(chromedp.SetValue(chromedp.CSS("#f-types"), "task"), chromedp.Click(chromedp.CSS("#apply")))
		p.visible(`#stream-status[data-state="live"]`)
		if loc := p.location(); !strings.Contains(loc, "types=task") {
			t.Fatalf("filtered stream at %s", loc)
		}
		if n := p.count(`#rows .type`); n == 0 || n != eval[int](p, `[...document.querySelectorAll("#rows .type")].filter(td => td.textContent === "task").length`) {
			t.Fatalf("history under types=task shows other types (%d rows)", n)
		}
		note := s.put(t, "note", "n2", map[string]any{"text": "not a task"})
		task := s.put(t, "task", "t3", map[string]any{"title": "filtered in"})
		p.visible(`#rows .row[data-seq="` + task + `"]`)
		if p.count(`#rows .row[data-seq="`+note+`"]`) != 0 {
			t.Fatalf("row %s (a note) shows under types=task", note)
		}

		p.do(chromedp.SetValue(chromedp.CSS("#f-when"), `row.entityId == "t5"`), chromedp.Click(chromedp.CSS("#apply")))
		p.visible(`#stream-status[data-state="live"]`)
		skipped := s.put(t, "task", "t4", map[string]any{"title": "not t5"})
		matched := s.put(t, "task", "t5", map[string]any{"title": "t5"})
		p.visible(`#rows .row[data-seq="` + matched + `"]`)
		if p.count(`#rows .row[data-seq="`+skipped+`"]`) != 0 {
			t.Fatalf("row %s (t4) shows under when entityId == t5", skipped)
		}

		p.do(chromedp.SetValue(chromedp.CSS("#f-when"), `row.seq >`), chromedp.Click(chromedp.CSS("#apply")))
		p.visible(`#stream-problems .notice`)
		if got := p.text(`#stream-problems .notice`); !strings.Contains(got, "line 1") {
			t.Fatalf("a bad when shows %q, want its position", got)
		}
	})

	t.Run("a row opens with its diff and stances", func(t *testing.T) {
		p := admin.on(t)
		status, seq, out := s.call(t, "PATCH", "/spaces/default/entities/task/t1", `{"status": "done"}`)
		if status != http.StatusOK {
			t.Fatalf("patch: %d %s", status, out)
		}
		seqs.done = seq
		s.fence(t, seq, "audit")
		p.open("/spaces/default/stream")
		p.visible(`#rows .row[data-seq="` + seq + `"] .seq a`)
		p.do(chromedp.Click(chromedp.CSS(`#rows .row[data-seq="` + seq + `"] .seq a`)))
		p.visible(`#commit tr.diff-changed[data-property="status"]`)
		if b, a := p.text(`#commit tr[data-property="status"] td.before`), p.text(`#commit tr[data-property="status"] td.after`); b != `"open"` || a != `"done"` {
			t.Fatalf("status diff %s -> %s, want \"open\" -> \"done\"", b, a)
		}
		if p.count(`#commit tr.diff-same[data-property="title"]`) != 1 {
			t.Fatal("the unchanged title is not shown as the same")
		}
		p.visible(`#stances tr[data-trigger="audit"]`)
		if got := p.text(`#stances tr[data-trigger="audit"]`); !strings.Contains(got, "matched") || !strings.Contains(got, "succeeded") {
			t.Fatalf("audit stance row %q, want matched with a succeeded delivery", got)
		}
		if got := p.text(`#stances tr[data-trigger="ping"]`); !strings.Contains(got, "not_matched") {
			t.Fatalf("ping stance row %q, want not_matched", got)
		}
		p.visible("#provenance")
		p.visible("#receipt")
		p.visible(`#chain-picture .node.row.focus[data-seq="` + seq + `"]`)
		p.shot("row", "")
	})

	t.Run("a ping-pong chain shows its park point", func(t *testing.T) {
		p := admin.on(t)
		root := s.put(t, "ping", "a", map[string]any{"n": 0})
		eventually(t, "a parked ping-pong delivery", func() bool { return len(deliveryIDs(t, s, "", "parked")) > 0 })
		p.open("/spaces/default/rows/" + root + "/chain")
		p.visible("#park-point")
		p.visible(`#chain-picture .node.row.focus[data-seq="` + root + `"][data-depth="0"]`)
		p.visible(`#chain-picture .node.delivery.parked`)
		p.visible(`#chain-picture .node.row.park-row`)
		depths := eval[[]int](p, `[...document.querySelectorAll("#chain-picture .node.row")].map(n => Number(n.dataset.depth))`)
		if len(depths) < 6 || depths[len(depths)-1] != 5 {
			t.Fatalf("chain rows at depths %v, want 0..4 and the park row at 5", depths)
		}
		p.shot("chain", ".chain-wrap")
		// Every node is a link: the park row opens its row page.
		p.do(chromedp.Click(chromedp.CSS(`#chain-picture .node.row.park-row rect`)))
		p.visible(`#page-stream #commit`)

		// Release the parked delivery from the deliveries page: it runs
		// once past the cap (and its chain parks again one step on).
		parked := deliveryIDs(t, s, "ping", "parked")
		p.open("/spaces/default/deliveries?trigger=ping")
		p.visible(`#parked tr[data-delivery="` + parked[0] + `"] button[data-action="release"]`)
		p.do(chromedp.Click(chromedp.CSS(`#parked tr[data-delivery="` + parked[0] + `"] button[data-action="release"]`)))
		p.visible(`#others tr[data-delivery="` + parked[0] + `"]`)
		eventually(t, "the released delivery to succeed", func() bool {
			return slices.Contains(deliveryIDs(t, s, "ping", "succeeded"), parked[0])
		})
	})

	t.Run("failed deliveries are retried in bulk", func(t *testing.T) {
		p := admin.on(t)
		s.put(t, "order", "o1", map[string]any{"total": 10})
		last := s.put(t, "order", "o2", map[string]any{"total": 20})
		s.fence(t, last, "hook")
		failed := deliveryIDs(t, s, "hook", "failed")
		if len(failed) != 2 {
			t.Fatalf("failed hook deliveries %v, want 2", failed)
		}
		hook.accept.Store(true)
		p.open("/spaces/default/deliveries?trigger=hook&status=failed")
		for _, id := range failed {
			p.visible(`#others tr[data-delivery="` + id + `"][data-status="failed"]`)
		}
		p.do(chromedp.Click(chromedp.CSS("#bulk-retry")))
		p.visible("#bulk-confirmation")
		if got := p.text("#bulk-count"); got != "2" {
			t.Fatalf("bulk retry counts %q, want 2", got)
		}
		p.shot("deliveries", "")
		p.do(chromedp.Click(chromedp.CSS("#bulk-confirm")))
		p.visible("#bulk-result")
		if got := p.text("#bulk-result"); got != "retry: 2 done, 0 skipped" {
			t.Fatalf("bulk result %q", got)
		}
		s.fence(t, last, "hook")
		p.open("/spaces/default/deliveries?trigger=hook")
		for _, id := range failed {
			p.visible(`#others tr[data-delivery="` + id + `"][data-status="succeeded"]`)
		}
		if n := hook.accepted.Load(); n != 2 {
			t.Fatalf("the hook accepted %d deliveries, want 2", n)
		}
	})

	t.Run("triggers show their state and backtest a changed when", func(t *testing.T) {
		p := admin.on(t)
		p.open("/spaces/default/triggers")
		p.visible(`tr[data-trigger="audit"][data-enabled="true"]`)
		p.visible(`tr[data-trigger="hook"] .badge.succeeded`)
		p.shot("triggers", "")
		p.do(chromedp.Click(chromedp.CSS(`button[data-op="disable"][data-trigger="audit"]`)))
		p.visible(`tr[data-trigger="audit"][data-enabled="false"]`)
		p.do(chromedp.Click(chromedp.CSS(`button[data-op="enable"][data-trigger="audit"]`)))
		p.visible(`tr[data-trigger="audit"][data-enabled="true"]`)

		p.open("/spaces/default/triggers/audit")
		p.visible("#bt-when")
		p.do(chromedp.SetValue(chromedp.CSS("#bt-when"), `row.op == "patch"`), chromedp.Click(chromedp.CSS("#bt-run")))
		p.visible(`#bt-result [data-count="matched"]`)
		if got := p.text(`#bt-result [data-count="matched"]`); got != "1" {
			t.Fatalf("backtest of op == patch matched %s, want 1 (the status patch)", got)
		}
		p.shot("trigger", "")

		p.do(chromedp.SetValue(chromedp.CSS("#replay-from"), "0"), chromedp.Click(chromedp.CSS("#replay")))
		p.visible("#flash .notice.ok")
	})

	t.Run("entities browse as of a head", func(t *testing.T) {
		p := admin.on(t)
		p.open("/spaces/default/entities/task")
		p.visible(`tr[data-id="t1"]`)
		if got := p.text(`tr[data-id="t1"] td.mono`); !strings.Contains(got, `"status":"done"`) {
			t.Fatalf("t1 now shows %s", got)
		}
		p.shot("entities", "")
		p.open("/spaces/default/entities/task?head=" + seqs.open)
		p.visible(`#snapshot[data-head="` + seqs.open + `"]`)
		if got := p.text(`tr[data-id="t1"] td.mono`); !strings.Contains(got, `"status":"open"`) {
			t.Fatalf("t1 as of %s shows %s", seqs.open, got)
		}
		if p.count(`tr[data-id="t2"]`) != 0 {
			t.Fatal("t2, written after the head, shows in the snapshot")
		}
		p.open("/spaces/default/entities/task/t1")
		p.visible(`#entity-history .row[data-seq="` + seqs.done + `"]`)
		p.visible(`#entity-history .row[data-seq="` + seqs.open + `"]`)
	})

	t.Run("views show their size and backtest a changed filter", func(t *testing.T) {
		p := admin.on(t)
		view := map[string]any{"version": "v1", "types": []string{"task"},
			"filter": map[string]any{"fieldEquals": map[string]any{"field": "status", "expected": "open"}}}
		if status, _, out := s.call(t, "PUT", "/spaces/default/views/open-tasks", view); status != http.StatusCreated {
			t.Fatalf("put view: %d %s", status, out)
		}
		p.open("/spaces/default/views")
		p.visible(`tr[data-view="open-tasks"] td.size`)
		if got := p.text(`tr[data-view="open-tasks"] td.size`); got != "1" {
			t.Fatalf("open-tasks shows size %q, want 1 (t2; t1 is done)", got)
		}
		p.shot("views", "")
		p.do(chromedp.Click(chromedp.CSS(`tr[data-view="open-tasks"] a`)))
		p.visible("#vb-def")
		changed := `{"version": "v2", "types": ["task"], "filter": {"cel": "has(entity.properties.status)"}}`
		p.do(chromedp.SetValue(chromedp.CSS("#vb-def"), changed), chromedp.Click(chromedp.CSS("#vb-run")))
		p.visible(`#vb-result [data-count="sizeAtTo"]`)
		if got := p.text(`#vb-result [data-count="sizeAtTo"]`); got != "2" {
			t.Fatalf("the backtest of has(status) ends at size %s, want 2 (t1 and t2)", got)
		}
		p.shot("view", "")
		p.do(chromedp.SetValue(chromedp.CSS("#vb-def"), "{not json"), chromedp.Click(chromedp.CSS("#vb-run")))
		p.visible("#vb-result .notice.error")
	})

	t.Run("a reader token sees only its types and no admin action", func(t *testing.T) {
		reader := s.tab(t).on(t)
		secret := s.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Actor: "auditor", Types: []string{"task"}})
		reader.signIn(secret)
		reader.visible(`#stream-status[data-state="live"]`)
		note := s.put(t, "note", "n3", map[string]any{"text": "private"})
		task := s.put(t, "task", "t6", map[string]any{"title": "public"})
		reader.visible(`#rows .row[data-seq="` + task + `"]`)
		if reader.count(`#rows .row[data-seq="`+note+`"]`) != 0 {
			t.Fatal("the reader sees a note row")
		}
		if types := eval[[]string](reader, `[...new Set([...document.querySelectorAll("#rows .type")].map(td => td.textContent))]`); len(types) != 1 || types[0] != "task" {
			t.Fatalf("the reader's stream shows types %v", types)
		}
		reader.shot("reader", "")
		reader.open("/spaces/default/entities/note")
		reader.visible("#page-entities .notice.info")
		if got := reader.text("#page-entities .notice.info"); !strings.Contains(got, "may not") {
			t.Fatalf("the reader's note page says %q", got)
		}
		reader.open("/spaces/default/rows/" + seqs.done)
		reader.visible(`#commit tr[data-property="status"]`)
		reader.visible(`#stances tr[data-trigger="audit"]`)
		reader.visible("#chain .notice")
		for _, pg := range []struct{ path, ready string }{
			{"/spaces/default/rows/" + seqs.done, `#stances tr[data-trigger="audit"]`},
			{"/spaces/default/deliveries", "#others tr[data-delivery]"},
			{"/spaces/default/triggers", `tr[data-trigger="audit"]`},
			{"/spaces/default/triggers/audit", "#trigger-def"},
		} {
			reader.open(pg.path)
			reader.visible(pg.ready)
			if n := reader.count(".admin, .row-actions button, #provenance, #receipt"); n != 0 {
				t.Fatalf("%s shows the reader %d admin actions or trusted facts", pg.path, n)
			}
		}
		reader.open("/spaces/default/rows/" + note)
		reader.visible("#commit .notice")
		if got := reader.text("#commit .notice"); !strings.Contains(got, "may not") {
			t.Fatalf("the reader's note row says %q", got)
		}
	})

	t.Run("the stream of everything above", func(t *testing.T) {
		p := admin.on(t)
		p.open("/spaces/default/stream?excludeTypes=event")
		p.visible(`#stream-status[data-state="live"]`)
		p.visible(`#rows .row.park`)
		p.shot("stream", "")
	})

	t.Run("the stream at 200 commits/s", func(t *testing.T) { streamLatency(t, s) })
}
