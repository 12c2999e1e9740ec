package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

const docsPath = "/api/v1/spaces/default/entities/doc"

// seqsOf returns the seq of every row in a changes answer.
func seqsOf(r *resp) []int64 {
	var page struct {
		Changes []struct {
			Seq int64 `json:"seq"`
		} `json:"changes"`
		Commits []struct {
			Seq int64 `json:"seq"`
		} `json:"commits"`
	}
	r.decode(&page)
	var out []int64
	for _, c := range page.Changes {
		out = append(out, c.Seq)
	}
	for _, c := range page.Commits {
		out = append(out, c.Seq)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// idsOf returns the ids of a list answer's items.
func idsOf(r *resp) []string {
	var page struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	r.decode(&page)
	var out []string
	for _, it := range page.Items {
		out = append(out, it.ID)
	}
	return out
}

func TestAccessRuleCompiledAtSave(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		path := "/api/v1/spaces/default/types/doc"
		pe := e.call(t, "PUT", path, map[string]any{"access": map[string]any{"read": "user in\n entity.properties.("}}).problem(problem.BadRequest)
		pos, ok := pe.Details["position"].(map[string]any)
		if pe.Details["field"] != "access.read" || !ok || pos["line"] != float64(2) {
			t.Errorf("bad rule = %+v", pe)
		}
		e.call(t, "PUT", path, map[string]any{"access": map[string]any{"read": "user"}}).problem(problem.BadRequest)
		e.call(t, "PUT", path, map[string]any{"access": map[string]any{"read": "true", "write": "x"}}).problem(problem.BadRequest)
		e.call(t, "GET", path, nil).problem(problem.NotFound)
		e.call(t, "PUT", path, map[string]any{"access": map[string]any{"read": "user in entity.properties.members"}}).want(http.StatusCreated)
		got := e.call(t, "GET", path, nil).want(http.StatusOK).obj()
		if fmt.Sprint(got["definition"]) != "map[access:map[read:user in entity.properties.members]]" {
			t.Errorf("stored definition = %v", got["definition"])
		}
	})
}

// TestAccessRuleReadPaths: a type's access rule limits every read path of
// a user's token, judged on each snapshot (after, or before for a
// delete); a token without a user is judged for "".
func TestAccessRuleReadPaths(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, "PUT", "/api/v1/spaces/default/types/doc", map[string]any{"access": map[string]any{"read": "user in entity.properties.members"}}).want(http.StatusCreated)
		ann := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, User: "ann", Application: "mail", Scopes: []string{auth.ScopeLogRead}})
		service := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.call(t, "PUT", "/api/v1/spaces/default/views/docs", map[string]any{"version": "v1", "types": []string{"doc"}, "filter": map[string]any{"cel": "true"}}).want(http.StatusCreated)
		base := e.head(t, "default")
		annWatch := e.watch(t, fmt.Sprint(changesPath, "?watch=1&from=", base), ann)
		s1 := e.call(t, "PUT", docsPath+"/d1", map[string]any{"members": []string{"ann"}}).seq()
		e.call(t, "PUT", docsPath+"/d2", map[string]any{"members": []string{"bob"}}).seq()
		s3 := e.call(t, "PUT", docsPath+"/d3", map[string]any{"members": []string{"ann", "bob"}}).seq()
		e.patch(t, docsPath+"/d1", map[string]any{"members": []string{"bob"}}).seq() // ann loses sight
		s5 := e.call(t, "DELETE", docsPath+"/d3", nil).seq()                         // judged on before: ann sees it
		head := e.call(t, "PUT", "/api/v1/spaces/default/entities/note/n1", map[string]any{"x": 1}).seq()
		want := []int64{s1, s3, s5, head}

		as := func(tok, path string) *resp { return e.do(t, req{Method: "GET", Path: path, Token: tok}) }
		if got := seqsOf(as(ann, fmt.Sprint(changesPath, "?from=", base)).want(http.StatusOK)); !slices.Equal(got, want) {
			t.Errorf("ann's forward rows = %v, want %v", got, want)
		}
		if got := seqsOf(as(ann, fmt.Sprint(changesPath, "?before=", head+1)).want(http.StatusOK)); !slices.Equal(got, want) {
			t.Errorf("ann's history rows = %v, want %v", got, want)
		}
		if got := seqsOf(as(ann, fmt.Sprint("/api/v1/spaces/default/log?after=", base)).want(http.StatusOK)); !slices.Equal(got, want) {
			t.Errorf("ann's raw log = %v, want %v", got, want)
		}
		if got := seqsOf(as(service, fmt.Sprint(changesPath, "?from=", base)).want(http.StatusOK)); !slices.Equal(got, []int64{head}) {
			t.Errorf("a token without a user reads %v, want only the note", got)
		}
		if got := annWatch.rows(len(want)); !slices.Equal(got, want) {
			t.Errorf("ann's watch = %v, want %v", got, want)
		}
		for seq := base + 1; seq <= head; seq++ {
			r := as(ann, fmt.Sprint(changesPath, "/", seq))
			if readable := slices.Contains(want, seq); readable != (r.status == http.StatusOK) {
				t.Errorf("changes/%d for ann = %d %s", seq, r.status, r.body)
			}
		}

		e.call(t, "PUT", docsPath+"/d4", map[string]any{"members": []string{"ann"}}).want(http.StatusCreated)
		if got := idsOf(as(ann, docsPath).want(http.StatusOK)); !slices.Equal(got, []string{"d4"}) {
			t.Errorf("ann's list = %v", got)
		}
		if got := idsOf(as(service, docsPath).want(http.StatusOK)); len(got) != 0 {
			t.Errorf("a token without a user lists %v", got)
		}
		as(ann, docsPath+"/d4").want(http.StatusOK)
		as(ann, docsPath+"/d2").problem(problem.NotFound) // hidden like a missing one
		as(ann, docsPath+"/d1").problem(problem.NotFound)
		cursor, recs := e.viewSync(t, ann, "docs", "keyset", 10)
		if len(recs) != 1 || recs[0]["id"] != "d4" {
			t.Errorf("ann's view bootstrap = %v", recs)
		}
		e.call(t, "PUT", docsPath+"/dx", map[string]any{"members": []string{"bob"}}).want(http.StatusCreated)
		e.call(t, "PUT", docsPath+"/dy", map[string]any{"members": []string{"ann"}}).want(http.StatusCreated)
		delta := as(ann, "/api/v1/spaces/default/views/docs/delta?cursor="+url.QueryEscape(cursor)).want(http.StatusOK)
		if strings.Contains(string(delta.body), `"dx"`) || !strings.Contains(string(delta.body), `"dy"`) {
			t.Errorf("ann's delta = %s", delta.body)
		}
		if got := annWatch.rows(1); got[0] != head+1 {
			t.Errorf("ann's watch after d4 = %v", got)
		}
		if got := annWatch.rows(1); got[0] != head+3 {
			t.Errorf("ann's watch after dx, dy = %v (dx is hidden)", got)
		}

		// A rule change reaches a running watch stream at its next row.
		e.call(t, "PUT", "/api/v1/spaces/default/types/doc", map[string]any{"access": map[string]any{"read": "true"}}).want(http.StatusOK)
		s7 := e.call(t, "PUT", docsPath+"/d5", map[string]any{"members": []string{"bob"}}).seq()
		if got := annWatch.rows(1); got[0] != s7 {
			t.Errorf("ann's watch after the rule opened = %v, want d5 at %d", got, s7)
		}
		as(ann, docsPath+"/d2").want(http.StatusOK)
	})
}

// rows reads frames until n rows came and returns their seqs (bookmarks
// are skipped).
func (s *stream) rows(n int) []int64 {
	s.t.Helper()
	var out []int64
	for len(out) < n {
		var seq int64
		if f := s.frame(); strings.HasPrefix(f, "row:") {
			if _, err := fmt.Sscan(strings.TrimPrefix(f, "row:"), &seq); err != nil {
				s.t.Fatal(err)
			}
			out = append(out, seq)
		}
	}
	return out
}

func TestJournalTokens(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		body := map[string]any{"space": "default", "role": "reader", "user": "u1", "application": "mail-app", "types": []string{"doc"}}
		tok := e.call(t, "POST", "/api/v1/tokens", body).want(http.StatusCreated).obj()["token"]
		who := e.do(t, req{Method: "GET", Path: "/api/v1/whoami", Token: tok.(string)}).want(http.StatusOK).obj()
		if who["user"] != "u1" || who["application"] != "mail-app" {
			t.Errorf("whoami = %v", who)
		}
		for _, bad := range []map[string]any{
			{"space": "default", "role": "reader", "application": "mail-app"},
			{"space": "default", "role": "admin", "user": "u1"},
		} {
			if pe := e.call(t, "POST", "/api/v1/tokens", bad).problem(problem.BadRequest); pe.Details["field"] != "user" {
				t.Errorf("%v: %+v", bad, pe)
			}
		}
	})
}

// TestAccessRuleWriteAnswer: a writer that may not read what its write
// left gets entity null, never properties others wrote.
func TestAccessRuleWriteAnswer(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, "PUT", "/api/v1/spaces/default/types/doc", map[string]any{"access": map[string]any{"read": "user in entity.properties.members"}}).want(http.StatusCreated)
		e.call(t, "PUT", docsPath+"/d1", map[string]any{"members": []string{"bob"}, "secret": "s3"}).want(http.StatusCreated)
		cy := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, User: "cy"})
		r := e.do(t, req{Method: "PATCH", Path: docsPath + "/d1", Token: cy, Body: map[string]any{"note": "hi"},
			Header: map[string]string{"Content-Type": "application/merge-patch+json"}}).want(http.StatusOK)
		if got := r.obj(); got["entity"] != nil || strings.Contains(string(r.body), "s3") {
			t.Errorf("a writer that may not read d1 got %s", r.body)
		}
		r = e.do(t, req{Method: "PUT", Path: docsPath + "/d2", Token: cy, Body: map[string]any{"members": []string{"cy"}}}).want(http.StatusCreated)
		if got := r.obj(); got["entity"] == nil {
			t.Errorf("a writer that may read d2 got %s", r.body)
		}
	})
}
