package server

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

// writeResult is the answer to an entity write.
type writeResult struct {
	Receipt map[string]any `json:"receipt"`
	Entity  map[string]any `json:"entity"`
}

const t1 = "/api/v1/spaces/default/entities/task/t1"

func TestEntityLifecycle(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		var w writeResult
		r := e.call(t, "PUT", t1, map[string]any{"title": "x"}).want(http.StatusCreated)
		r.decode(&w)
		if w.Receipt["status"] != "applied" || w.Receipt["seq"] != 1.0 || r.seq() != 1 {
			t.Fatalf("put = %s, Eddy-Seq %d", r.body, r.seq())
		}
		if k := keys(w.Entity); !slices.Equal(k, []string{"createdAt", "id", "links", "properties", "type", "updatedAt", "version"}) {
			t.Errorf("entity keys = %v", k)
		}

		r = e.call(t, "GET", t1, nil).want(http.StatusOK)
		if r.header.Get("ETag") != `"1"` {
			t.Errorf("ETag = %q", r.header.Get("ETag"))
		}
		got := r.obj()
		if got["type"] != "task" || got["id"] != "t1" || got["version"] != 1.0 || got["properties"].(map[string]any)["title"] != "x" {
			t.Errorf("get = %v", got)
		}
		if links, ok := got["links"].([]any); !ok || len(links) != 0 {
			t.Errorf("links = %v, want []", got["links"])
		}

		// A no-op answers 200, appends nothing, and Eddy-Seq is the head.
		r = e.call(t, "PUT", t1, map[string]any{"title": "x"}).want(http.StatusOK)
		r.decode(&w)
		if w.Receipt["status"] != "noop" || r.seq() != 1 || e.head(t, "default") != 1 {
			t.Errorf("noop = %s, Eddy-Seq %d", r.body, r.seq())
		}

		r = e.do(t, req{Method: "PATCH", Path: t1, Token: e.admin, Body: `{"note": "n", "title": null}`,
			Header: map[string]string{"Content-Type": "application/merge-patch+json"}}).want(http.StatusOK)
		r.decode(&w)
		props := w.Entity["properties"].(map[string]any)
		if w.Entity["version"] != 2.0 || props["note"] != "n" || props["title"] != nil || r.seq() != 2 {
			t.Errorf("patch = %s", r.body)
		}
		e.do(t, req{Method: "PATCH", Path: t1, Token: e.admin, Body: `{"note": "m"}`,
			Header: map[string]string{"Content-Type": "application/json; charset=utf-8"}}).want(http.StatusOK)

		r = e.call(t, "DELETE", t1, nil).want(http.StatusOK)
		if !strings.Contains(string(r.body), `"entity":null`) || r.seq() != 4 {
			t.Errorf("delete = %s, Eddy-Seq %d", r.body, r.seq())
		}
		e.call(t, "GET", t1, nil).problem(problem.NotFound)
		e.call(t, "GET", "/api/v1/spaces/default/entities/task/never", nil).problem(problem.NotFound)
		e.call(t, "GET", "/api/v1/spaces/missing/entities/task/t1", nil).problem(problem.NotFound)
		e.call(t, "PUT", "/api/v1/spaces/missing/entities/task/t1", map[string]any{}).problem(problem.NotFound)

		r = e.call(t, "POST", "/api/v1/spaces/default/entities/task", map[string]any{"title": "gen"}).want(http.StatusCreated)
		r.decode(&w)
		id, _ := w.Entity["id"].(string)
		if !regexp.MustCompile(`^[2-7a-z]{22}$`).MatchString(id) {
			t.Errorf("generated id %q", id)
		}
		if loc := r.header.Get("Location"); loc != "/api/v1/spaces/default/entities/task/"+id {
			t.Errorf("Location = %q", loc)
		}
		e.call(t, "GET", "/api/v1/spaces/default/entities/task/"+id, nil).want(http.StatusOK)

		// Generated ids sort by the time they were made (internal/sortid).
		e.call(t, "POST", "/api/v1/spaces/default/entities/task", map[string]any{"title": "gen2"}).want(http.StatusCreated).decode(&w)
		if id2, _ := w.Entity["id"].(string); len(id2) != len(id) || id2 == id || id2[:10] < id[:10] {
			t.Errorf("second generated id %q: want distinct from %q, its time part no earlier", id2, id)
		}
	})
}

func TestEntityPreconditions(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, "PUT", t1, map[string]any{"n": 1}).want(http.StatusCreated)
		put := func(ifMatch string, n int) *resp {
			return e.do(t, req{Method: "PUT", Path: t1, Token: e.admin, Body: map[string]any{"n": n},
				Header: map[string]string{"If-Match": ifMatch}})
		}
		p := put("7", 2).problem(problem.PreconditionFailed)
		rc, _ := p.Details["receipt"].(map[string]any)
		if rc["status"] != "rejected" {
			t.Errorf("details.receipt = %v", p.Details)
		}
		if e.head(t, "default") != 1 {
			t.Errorf("a rejected write appended")
		}
		put("1", 2).want(http.StatusOK)
		put(`"2"`, 3).want(http.StatusOK)
		put(`W/"3"`, 4).want(http.StatusOK)
		for _, bad := range []string{"x", `"x"`, "-1", "*"} {
			put(bad, 5).problem(problem.BadRequest)
		}
		e.do(t, req{Method: "DELETE", Path: t1, Token: e.admin, Header: map[string]string{"If-Match": "1"}}).problem(problem.PreconditionFailed)
		e.do(t, req{Method: "DELETE", Path: t1, Token: e.admin, Header: map[string]string{"If-Match": "4"}}).want(http.StatusOK)
	})
}

func TestEntityIdempotency(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		put := func(title string) *resp {
			return e.do(t, req{Method: "PUT", Path: t1, Token: e.admin, Body: map[string]any{"title": title},
				Header: map[string]string{"Idempotency-Key": "k-1"}})
		}
		first := put("a").want(http.StatusCreated)
		again := put("a")
		var a, b writeResult
		first.decode(&a)
		again.decode(&b)
		if b.Receipt["mutationId"] != "k-1" || a.Receipt["seq"] != b.Receipt["seq"] || e.head(t, "default") != 1 {
			t.Errorf("retry = %d %s, first %s", again.status, again.body, first.body)
		}

		gen := func() *resp {
			return e.do(t, req{Method: "POST", Path: "/api/v1/spaces/default/entities/task", Token: e.admin,
				Body: map[string]any{"title": "g"}, Header: map[string]string{"Idempotency-Key": "k-2"}})
		}
		ra := gen().want(http.StatusCreated)
		ra.decode(&a)
		rb := gen()
		rb.decode(&b)
		if a.Receipt["seq"] != b.Receipt["seq"] || e.head(t, "default") != 2 {
			t.Errorf("generated retry appended: %v / %v", a.Receipt, b.Receipt)
		}
		if b.Entity != nil && (b.Entity["id"] != a.Entity["id"] || rb.header.Get("Location") != ra.header.Get("Location")) {
			t.Errorf("retry answered another entity: %v, Location %q vs %q", b.Entity, rb.header.Get("Location"), ra.header.Get("Location"))
		}
	})
}

func TestEntityBadRequests(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		merge := map[string]string{"Content-Type": "application/merge-patch+json"}
		tests := []struct {
			name   string
			method string
			path   string
			body   any
			header map[string]string
		}{
			{"malformed", "PUT", t1, `{"title": `, nil},
			{"syntax", "PUT", t1, `{"title" "x"}`, nil},
			{"empty", "PUT", t1, ``, nil},
			{"array", "PUT", t1, `[1]`, nil},
			{"null", "PUT", t1, `null`, nil},
			{"string", "PUT", t1, `"x"`, nil},
			{"trailing", "PUT", t1, `{"a": 1} {"b": 2}`, nil},
			{"trailing garbage", "PUT", t1, `{"a": 1} x`, nil},
			{"bad type", "PUT", "/api/v1/spaces/default/entities/Task/t1", `{}`, nil},
			{"bad id", "PUT", "/api/v1/spaces/default/entities/task/a%20b", `{}`, nil},
			{"long id", "PUT", "/api/v1/spaces/default/entities/task/" + strings.Repeat("a", 129), `{}`, nil},
			{"unknown param", "PUT", t1 + "?x=1", `{}`, nil},
			{"long idempotency key", "PUT", t1, `{}`, map[string]string{"Idempotency-Key": strings.Repeat("k", 200)}},
			{"patch without content type", "PATCH", t1, `{}`, nil},
			{"patch text", "PATCH", t1, `{}`, map[string]string{"Content-Type": "text/plain"}},
			{"patch array", "PATCH", t1, `[]`, merge},
			{"post array", "POST", "/api/v1/spaces/default/entities/task", `[]`, nil},
			{"post bad type", "POST", "/api/v1/spaces/default/entities/Task", `{}`, nil},
			{"get bad id", "GET", "/api/v1/spaces/default/entities/task/a%2Fb", nil, nil},
			{"get unknown param", "GET", t1 + "?watch=1", nil, nil},
			{"delete bad id", "DELETE", "/api/v1/spaces/default/entities/task/%24", nil, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.do(t, req{Method: tt.method, Path: tt.path, Token: e.admin, Body: tt.body, Header: tt.header})
				r.problem(problem.BadRequest)
			})
		}
		if h := e.head(t, "default"); h != 0 {
			t.Errorf("head = %d after bad requests", h)
		}
	})
}

func TestEntityRejections(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		def := map[string]any{"strict": true, "properties": map[string]any{"title": map[string]any{"kind": "string"}}}
		e.call(t, "PUT", "/api/v1/spaces/default/types/task", def).want(http.StatusCreated)
		r := e.call(t, "PUT", t1, map[string]any{"title": 1})
		p := r.problem(problem.Unprocessable)
		if rc, _ := p.Details["receipt"].(map[string]any); rc["status"] != "rejected" {
			t.Errorf("details = %v", p.Details)
		}
		if r.seq() != 0 {
			t.Errorf("Eddy-Seq = %d on a rejection", r.seq())
		}
		e.call(t, "DELETE", "/api/v1/spaces/default/entities/task/none", nil).problem(problem.NotFound)
	})
}

func TestEntityAuthorization(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, "PUT", "/api/v1/spaces/other", nil).want(http.StatusCreated)
		e.call(t, "PUT", t1, map[string]any{"n": 1}).want(http.StatusCreated)
		e.call(t, "PUT", "/api/v1/spaces/default/entities/note/n1", map[string]any{"n": 1}).want(http.StatusCreated)

		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		writer := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, Types: []string{"task"}})
		other := e.token(auth.CreateParams{Space: "other", Role: auth.RoleWriter})
		merge := map[string]string{"Content-Type": "application/merge-patch+json"}
		tests := []struct {
			name   string
			token  string
			method string
			path   string
			body   any
			want   int
		}{
			{"reader gets", reader, "GET", t1, nil, http.StatusOK},
			{"reader lists", reader, "GET", "/api/v1/spaces/default/entities/note", nil, http.StatusOK},
			{"reader puts", reader, "PUT", t1, `{}`, http.StatusForbidden},
			{"reader patches", reader, "PATCH", t1, `{}`, http.StatusForbidden},
			{"reader deletes", reader, "DELETE", t1, nil, http.StatusForbidden},
			{"reader posts", reader, "POST", "/api/v1/spaces/default/entities/task", `{}`, http.StatusForbidden},
			{"writer writes its type", writer, "PUT", t1, `{"n": 2}`, http.StatusOK},
			{"writer reads its type", writer, "GET", t1, nil, http.StatusOK},
			{"writer writes another type", writer, "PUT", "/api/v1/spaces/default/entities/note/n1", `{}`, http.StatusForbidden},
			{"writer reads another type", writer, "GET", "/api/v1/spaces/default/entities/note/n1", nil, http.StatusForbidden},
			{"writer lists another type", writer, "GET", "/api/v1/spaces/default/entities/note", nil, http.StatusForbidden},
			{"writer posts another type", writer, "POST", "/api/v1/spaces/default/entities/note", `{}`, http.StatusForbidden},
			{"other space reads", other, "GET", t1, nil, http.StatusForbidden},
			{"other space writes", other, "PUT", t1, `{}`, http.StatusForbidden},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.do(t, req{Method: tt.method, Path: tt.path, Token: tt.token, Body: tt.body, Header: merge})
				if tt.want == http.StatusForbidden {
					r.problem(problem.Forbidden)
				} else {
					r.want(tt.want)
				}
			})
		}
	})
}
