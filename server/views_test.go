package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

const alphaView = `{"version":"v1","types":["task"],"filter":{"fieldEquals":{"field":"project","expected":"alpha"}}}`

func viewPath(rest string) string { return "/api/v1/spaces/default/views" + rest }

func TestViewsCRUD(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		r := e.call(t, http.MethodPut, viewPath("/alpha"), alphaView).want(http.StatusCreated)
		v := r.obj()
		if got := strings.Join(keys(v), ","); got != "filter,filterSignature,name,types,updatedAt,version" {
			t.Fatalf("view keys %s: %s", got, r.body)
		}
		if r.seq() != e.head(t, "default") {
			t.Fatal("Eddy-Seq is not the head")
		}
		e.call(t, http.MethodPut, viewPath("/alpha"), alphaView).want(http.StatusOK)
		e.call(t, http.MethodPut, viewPath("/slim"), `{"version":"v1","types":["task","note"],"fields":["title"],"filter":{"cel":"entity.properties.open == true"}}`).want(http.StatusCreated)
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		var list struct {
			Views []map[string]any `json:"views"`
		}
		e.do(t, req{Method: http.MethodGet, Path: viewPath(""), Token: reader}).want(http.StatusOK).decode(&list)
		if len(list.Views) != 2 || list.Views[0]["name"] != "alpha" || list.Views[1]["name"] != "slim" {
			t.Fatalf("list %+v", list)
		}
		got := e.do(t, req{Method: http.MethodGet, Path: viewPath("/slim"), Token: reader}).want(http.StatusOK).obj()
		if fmt.Sprint(got["types"]) != "[note task]" || fmt.Sprint(got["fields"]) != "[title]" {
			t.Fatalf("get %v", got)
		}
		e.do(t, req{Method: http.MethodPut, Path: viewPath("/x"), Token: reader, Body: alphaView}).problem(problem.Forbidden)
		notes := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Types: []string{"note"}})
		e.do(t, req{Method: http.MethodGet, Path: viewPath(""), Token: notes}).want(http.StatusOK).decode(&list)
		if len(list.Views) != 0 {
			t.Fatalf("a reader of notes sees %v", list.Views)
		}
		e.do(t, req{Method: http.MethodGet, Path: viewPath("/slim"), Token: notes}).problem(problem.NotFound)
		e.do(t, req{Method: http.MethodDelete, Path: viewPath("/alpha"), Token: reader}).problem(problem.Forbidden)
		e.call(t, http.MethodDelete, viewPath("/alpha"), nil).want(http.StatusNoContent)
		e.call(t, http.MethodGet, viewPath("/alpha"), nil).problem(problem.NotFound)
		e.call(t, http.MethodDelete, viewPath("/alpha"), nil).problem(problem.NotFound)
		e.call(t, http.MethodGet, "/api/v1/spaces/nope/views", nil).problem(problem.NotFound)
	})
}

func TestViewsBadDefinitions(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		for _, tc := range []struct{ body, field string }{
			{`{"version":"v1","types":["task"],"filter":{"sql":"x"}}`, "filter"},
			{`{"version":"v1","types":["task"],"filter":{"cel":"entity.properties.a =="}}`, "filter.cel"},
			{`{"version":"v1","types":["task"],"filter":{"cel":"true"},"bogus":1}`, "bogus"},
			{`{"types":["task"],"filter":{"cel":"true"}}`, "version"},
			{`[1]`, ""},
			{`{`, ""},
		} {
			pe := e.call(t, http.MethodPut, viewPath("/v"), tc.body).problem(problem.BadRequest)
			if tc.field != "" && pe.Details["field"] != tc.field {
				t.Errorf("%s: %+v, want field %s", tc.body, pe, tc.field)
			}
		}
		pe := e.call(t, http.MethodPut, viewPath("/v"), `{"version":"v1","types":["task"],"filter":{"cel":"entity.properties.a =="}}`).problem(problem.BadRequest)
		if _, ok := pe.Details["position"]; !ok {
			t.Fatalf("CEL error without a position: %+v", pe)
		}
		e.call(t, http.MethodPut, viewPath("/Bad_Name"), alphaView).problem(problem.BadRequest)
		e.call(t, http.MethodGet, viewPath(""), nil).want(http.StatusOK)
		var list struct{ Views []any }
		e.call(t, http.MethodGet, viewPath(""), nil).decode(&list)
		if len(list.Views) != 0 {
			t.Fatalf("a refused definition was saved: %v", list.Views)
		}
	})
}

// viewSync walks a whole bootstrap over HTTP and returns the final
// cursor, checking the shape of every answer.
func (e *env) viewSync(t *testing.T, token, view, strategy string, pageSize int) (string, []map[string]any) {
	t.Helper()
	r := e.do(t, req{Method: http.MethodPost, Path: viewPath("/" + view + "/bootstrap"), Token: token,
		Body: map[string]any{"pageSize": pageSize, "strategy": strategy}}).want(http.StatusOK)
	open := r.obj()
	if got := strings.Join(keys(open), ","); got != "context,token" {
		t.Fatalf("open keys %s", got)
	}
	ctx := open["context"].(map[string]any)
	if got := strings.Join(keys(ctx), ","); got != "epoch,filterSignature,filterVersion,fingerprint,schemaVersion,space,view" {
		t.Fatalf("context keys %s", got)
	}
	var records []map[string]any
	tok := open["token"].(string)
	for {
		page := e.do(t, req{Method: http.MethodGet, Path: viewPath("/" + view + "/bootstrap/" + tok), Token: token}).want(http.StatusOK).obj()
		if got := strings.Join(keys(page), ","); got != "complete,context,cursor,nextToken,offset,records,token" {
			t.Fatalf("page keys %s", got)
		}
		if page["token"] != tok || fmt.Sprint(page["context"]) != fmt.Sprint(ctx) || int(page["offset"].(float64)) != len(records) {
			t.Fatalf("page %v does not repeat its token, context and offset", page)
		}
		for _, rec := range page["records"].([]any) {
			records = append(records, rec.(map[string]any))
		}
		if page["complete"] == true {
			if page["nextToken"] != nil || page["cursor"] == nil {
				t.Fatalf("last page %v", page)
			}
			return page["cursor"].(string), records
		}
		if page["cursor"] != nil {
			t.Fatalf("a page before the last carries a cursor: %v", page)
		}
		tok = page["nextToken"].(string)
	}
}

func TestViewSyncHTTP(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, http.MethodPut, viewPath("/alpha"), alphaView).want(http.StatusCreated)
		for i := range 5 {
			e.call(t, http.MethodPut, fmt.Sprintf("/api/v1/spaces/default/entities/task/t%d", i), map[string]any{"project": "alpha", "n": i}).want(http.StatusCreated)
		}
		e.call(t, http.MethodPut, "/api/v1/spaces/default/entities/task/b", map[string]any{"project": "beta"}).want(http.StatusCreated)
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Types: []string{"task"}})
		for _, strategy := range []string{"frozen", "keyset"} {
			cursor, recs := e.viewSync(t, reader, "alpha", strategy, 2)
			if len(recs) != 5 || recs[0]["id"] != "t0" || recs[4]["version"] != 5.0 {
				t.Fatalf("%s: records %v", strategy, recs)
			}
			e.patch(t, "/api/v1/spaces/default/entities/task/t0", map[string]any{"project": "gamma"}).want(http.StatusOK)
			delta := e.do(t, req{Method: http.MethodGet, Path: viewPath("/alpha/delta?budget=10&cursor=" + url.QueryEscape(cursor)), Token: reader}).want(http.StatusOK).obj()
			if got := strings.Join(keys(delta), ","); got != "commits,context,cursor,hasMore,previousCursor" {
				t.Fatalf("delta keys %s", got)
			}
			b, _ := json.Marshal(delta["commits"])
			if delta["previousCursor"] != cursor || delta["hasMore"] != false ||
				!strings.Contains(string(b), `"id":"t0","kind":"removed_from_scope","type":"task"`) {
				t.Fatalf("delta %v", delta)
			}
			e.patch(t, "/api/v1/spaces/default/entities/task/t0", map[string]any{"project": "alpha"}).want(http.StatusOK)
		}
	})
}

func TestViewSyncRefusals(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, http.MethodPut, viewPath("/alpha"), alphaView).want(http.StatusCreated)
		cursor, _ := e.viewSync(t, e.admin, "alpha", "keyset", 10)
		notes := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Types: []string{"note"}})
		other := e.token(auth.CreateParams{Space: "other", Role: auth.RoleAdmin})
		q := url.QueryEscape(cursor)
		for _, tc := range []struct {
			method, path, token string
			body                any
			code                string
		}{
			{http.MethodPost, "/alpha/bootstrap", notes, nil, problem.Forbidden},
			{http.MethodGet, "/alpha/delta?cursor=" + q, notes, nil, problem.Forbidden},
			{http.MethodPost, "/alpha/bootstrap", other, nil, problem.Forbidden},
			{http.MethodPost, "/alpha/bootstrap", e.admin, `{"pageSize":0.5}`, problem.BadRequest},
			{http.MethodPost, "/alpha/bootstrap", e.admin, `{"pageSize":5000}`, problem.BadRequest},
			{http.MethodPost, "/alpha/bootstrap", e.admin, `{"pageSize":-1}`, problem.BadRequest},
			{http.MethodPost, "/alpha/bootstrap", e.admin, `{"strategy":"lazy"}`, problem.BadRequest},
			{http.MethodPost, "/alpha/bootstrap", e.admin, `{"at":99}`, problem.BadRequest},
			{http.MethodPost, "/alpha/bootstrap", e.admin, `{"bogus":1}`, problem.BadRequest},
			{http.MethodPost, "/alpha/bootstrap?x=1", e.admin, nil, problem.BadRequest},
			{http.MethodPost, "/nope/bootstrap", e.admin, nil, problem.NotFound},
			{http.MethodGet, "/alpha/bootstrap/notatoken", e.admin, nil, problem.ResetRequired},
			{http.MethodGet, "/alpha/delta?cursor=garbage", e.admin, nil, problem.BadRequest},
			{http.MethodGet, "/alpha/delta", e.admin, nil, problem.BadRequest},
			{http.MethodGet, "/alpha/delta?budget=0&cursor=" + q, e.admin, nil, problem.BadRequest},
			{http.MethodGet, "/alpha/delta?budget=x&cursor=" + q, e.admin, nil, problem.BadRequest},
			{http.MethodGet, "/alpha/delta?budget=10001&cursor=" + q, e.admin, nil, problem.BadRequest},
			{http.MethodGet, "/alpha/delta?limit=1&cursor=" + q, e.admin, nil, problem.BadRequest},
			{http.MethodGet, "/alpha/delta?watch=2&cursor=" + q, e.admin, nil, problem.BadRequest},
			{http.MethodPost, "/alpha/backtest", notes, nil, problem.Forbidden},
			{http.MethodPost, "/alpha/backtest", e.admin, `{"from":-1}`, problem.BadRequest},
			{http.MethodPost, "/alpha/backtest", e.admin, `{"definition":7}`, problem.BadRequest},
		} {
			r := e.do(t, req{Method: tc.method, Path: viewPath(tc.path), Token: tc.token, Body: tc.body})
			pe := r.problem(tc.code)
			if tc.code == problem.ResetRequired && pe.Details["reason"] != "bootstrap_token_unknown" {
				t.Errorf("%s %s: %+v", tc.method, tc.path, pe)
			}
		}
		// A frozen session belongs to the token that opened it.
		var op struct{ Token string }
		e.call(t, http.MethodPost, viewPath("/alpha/bootstrap"), nil).want(http.StatusOK).decode(&op)
		other2 := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		pe := e.do(t, req{Method: http.MethodGet, Path: viewPath("/alpha/bootstrap/" + op.Token), Token: other2}).problem(problem.ResetRequired)
		if pe.Details["reason"] != "bootstrap_token_unknown" {
			t.Fatalf("another token's frozen session: %+v", pe)
		}
		e.call(t, http.MethodGet, viewPath("/alpha/bootstrap/"+op.Token), nil).want(http.StatusOK)
		// A stale cursor: 409 with its reason.
		e.call(t, http.MethodPut, viewPath("/alpha"), `{"version":"v2","types":["task"],"filter":{"cel":"true"}}`).want(http.StatusOK)
		pe = e.call(t, http.MethodGet, viewPath("/alpha/delta?cursor="+q), nil).problem(problem.ResetRequired)
		if pe.Details["reason"] != "view_changed" {
			t.Fatalf("stale cursor: %+v", pe)
		}
	})
}

func TestRotateEpochHTTP(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, http.MethodPut, viewPath("/alpha"), alphaView).want(http.StatusCreated)
		cursor, _ := e.viewSync(t, e.admin, "alpha", "keyset", 10)
		before := e.call(t, http.MethodGet, "/api/v1/spaces/default", nil).want(http.StatusOK).obj()
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.do(t, req{Method: http.MethodPost, Path: "/api/v1/spaces/default/rotate-epoch", Token: reader}).problem(problem.Forbidden)
		after := e.call(t, http.MethodPost, "/api/v1/spaces/default/rotate-epoch", nil).want(http.StatusOK).obj()
		if after["epoch"] == before["epoch"] || after["head"] != before["head"] || after["space"] != "default" {
			t.Fatalf("rotate: %v, was %v", after, before)
		}
		pe := e.call(t, http.MethodGet, viewPath("/alpha/delta?cursor="+url.QueryEscape(cursor)), nil).problem(problem.ResetRequired)
		if pe.Details["reason"] != "epoch_changed" {
			t.Fatalf("after rotation: %+v", pe)
		}
		e.call(t, http.MethodPost, "/api/v1/spaces/nope/rotate-epoch", nil).problem(problem.NotFound)
	})
}

func TestViewBacktestHTTP(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, http.MethodPut, viewPath("/alpha"), alphaView).want(http.StatusCreated)
		e.call(t, http.MethodPut, "/api/v1/spaces/default/entities/task/a", map[string]any{"project": "alpha"}).want(http.StatusCreated) // 1
		e.call(t, http.MethodPut, "/api/v1/spaces/default/entities/task/b", map[string]any{"project": "beta"}).want(http.StatusCreated)  // 2
		e.patch(t, "/api/v1/spaces/default/entities/task/b", map[string]any{"project": "alpha"}).want(http.StatusOK)                     // 3 enter
		e.patch(t, "/api/v1/spaces/default/entities/task/a", map[string]any{"n": 1}).want(http.StatusOK)                                 // 4 update
		e.patch(t, "/api/v1/spaces/default/entities/task/a", map[string]any{"project": "beta"}).want(http.StatusOK)                      // 5 leave
		e.call(t, http.MethodDelete, "/api/v1/spaces/default/entities/task/b", nil).want(http.StatusOK)                                  // 6 delete
		res := e.call(t, http.MethodPost, viewPath("/alpha/backtest"), map[string]any{"from": 1}).want(http.StatusOK).obj()
		if res["sizeAtFrom"] != 1.0 || res["sizeAtTo"] != 0.0 || res["entered"] != 1.0 || res["updated"] != 1.0 ||
			res["left"] != 1.0 || res["deleted"] != 1.0 || res["to"] != 6.0 || res["scanned"] != 5.0 {
			t.Fatalf("backtest %v", res)
		}
		samples := res["samples"].(map[string]any)
		if fmt.Sprint(samples["entered"]) != "[map[id:b seq:3 type:task]]" {
			t.Fatalf("samples %v", samples)
		}
		// A proposed definition, judged without saving it.
		res = e.call(t, http.MethodPost, viewPath("/alpha/backtest"), map[string]any{"from": 0, "sizes": false,
			"definition": map[string]any{"version": "v2", "types": []string{"task"}, "filter": map[string]any{"cel": "true"}}}).want(http.StatusOK).obj()
		if res["entered"] != 2.0 || res["sizeAtFrom"] != nil {
			t.Fatalf("proposed backtest %v", res)
		}
		if v := e.call(t, http.MethodGet, viewPath("/alpha"), nil).obj(); v["version"] != "v1" {
			t.Fatalf("the proposed definition was saved: %v", v)
		}
	})
}

// patch sends a merge patch as the admin.
func (e *env) patch(t *testing.T, path string, body any) *resp {
	t.Helper()
	return e.do(t, req{Method: http.MethodPatch, Path: path, Token: e.admin, Body: body,
		Header: map[string]string{"Content-Type": "application/merge-patch+json"}})
}

// TestViewWatchHTTP: the live view stream through the whole server: a
// page as a commit lands, then a terminal reset when the view changes.
func TestViewWatchHTTP(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, http.MethodPut, viewPath("/alpha"), alphaView).want(http.StatusCreated)
		cursor, _ := e.viewSync(t, e.admin, "alpha", "keyset", 10)
		s := e.watch(t, viewPath("/alpha/delta?watch=1&cursor="+url.QueryEscape(cursor)), e.admin)
		e.call(t, http.MethodPut, "/api/v1/spaces/default/entities/task/t1", map[string]any{"project": "alpha"}).want(http.StatusCreated)
		var page struct {
			PreviousCursor string `json:"previousCursor"`
			Cursor         string `json:"cursor"`
			Commits        []struct {
				Seq     int64            `json:"seq"`
				Changes []map[string]any `json:"changes"`
			} `json:"commits"`
		}
		if err := json.Unmarshal([]byte(s.line()), &page); err != nil {
			t.Fatal(err)
		}
		if page.PreviousCursor != cursor || len(page.Commits) != 1 || page.Commits[0].Changes[0]["kind"] != "upsert" {
			t.Fatalf("page %+v", page)
		}
		e.call(t, http.MethodPut, viewPath("/alpha"), `{"version":"v2","types":["task"],"filter":{"cel":"true"}}`).want(http.StatusOK)
		var end struct{ Error *problem.Error }
		if err := json.Unmarshal([]byte(s.line()), &end); err != nil || end.Error == nil ||
			end.Error.Code != problem.ResetRequired || end.Error.Details["reason"] != "view_changed" {
			t.Fatalf("terminal frame %+v, %v", end.Error, err)
		}
		s.ended()
		// A stale cursor is refused before the stream starts.
		e.call(t, http.MethodGet, viewPath("/alpha/delta?watch=1&cursor="+url.QueryEscape(cursor)), nil).problem(problem.ResetRequired)
	})
}
