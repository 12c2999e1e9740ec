package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/eddy-run/eddy/auth"
)

// ackPage is what the ack tests read of a delta page or stream frame.
type ackPage struct {
	Cursor  string           `json:"cursor"`
	Commits []any            `json:"commits"`
	Acks    map[string]int64 `json:"acks"`
}

func TestAcksInDeltaPagesAndStreams(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, http.MethodPut, viewPath("/alpha"), alphaView).want(http.StatusCreated)
		w1 := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, Actor: "w1"})
		w2 := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, Actor: "w2"})
		c1, _ := e.viewSync(t, w1, "alpha", "keyset", 10)
		c2, _ := e.viewSync(t, w2, "alpha", "keyset", 10)
		body := map[string]any{"clientId": "phone", "mutations": []any{
			map[string]any{"ordinal": 1, "op": "put", "type": "task", "entityId": "t1", "properties": map[string]any{"project": "alpha"}},
			map[string]any{"ordinal": 2, "op": "put", "type": "task", "entityId": "t2", "properties": map[string]any{"project": "beta"}},
		}}
		e.push(t, w1, body).want(http.StatusOK)
		e.call(t, http.MethodPut, "/api/v1/spaces/default/entities/task/t3", map[string]any{"project": "alpha"}).want(http.StatusCreated)
		// A bootstrap opened after the push carries its acks on the
		// complete page, for the owner only.
		for tok, want := range map[string]int64{w1: 2, w2: 0} {
			open := e.do(t, req{Method: "POST", Path: viewPath("/alpha/bootstrap"), Token: tok, Body: map[string]any{"strategy": "keyset"}}).want(http.StatusOK).obj()
			var page struct {
				Complete bool             `json:"complete"`
				Acks     map[string]int64 `json:"acks"`
			}
			e.do(t, req{Method: "GET", Path: viewPath("/alpha/bootstrap/" + open["token"].(string)), Token: tok}).want(http.StatusOK).decode(&page)
			if !page.Complete || page.Acks["phone"] != want || (want == 0 && page.Acks != nil) {
				t.Fatalf("bootstrap acks = %+v, want phone:%d", page, want)
			}
		}
		// The owner's page acks ordinal 2 even though its commit is
		// outside the view; another principal's page acks nothing.
		var p1, p2 ackPage
		e.do(t, req{Method: "GET", Path: viewPath("/alpha/delta?cursor=" + url.QueryEscape(c1)), Token: w1}).want(http.StatusOK).decode(&p1)
		e.do(t, req{Method: "GET", Path: viewPath("/alpha/delta?cursor=" + url.QueryEscape(c2)), Token: w2}).want(http.StatusOK).decode(&p2)
		if p1.Acks["phone"] != 2 || len(p1.Acks) != 1 || len(p1.Commits) != 2 {
			t.Fatalf("owner's page = %+v", p1)
		}
		if p2.Acks != nil {
			t.Fatalf("another principal's page = %+v", p2)
		}
		var raw map[string]any
		e.do(t, req{Method: "GET", Path: viewPath("/alpha/delta?cursor=" + url.QueryEscape(p1.Cursor)), Token: w1}).want(http.StatusOK).decode(&raw)
		if _, ok := raw["acks"]; ok {
			t.Fatalf("a page with no push carries acks: %v", raw)
		}
		// A forged mutation id through POST .../mutations acks nothing.
		e.do(t, req{Method: "POST", Path: mutationsPath, Token: w1, Body: map[string]any{"mutations": []any{
			map[string]any{"mutationId": "phone:9", "op": "put", "type": "task", "entityId": "t4", "properties": map[string]any{"project": "alpha"}}}}}).want(http.StatusOK)
		var p3 ackPage
		e.do(t, req{Method: "GET", Path: viewPath("/alpha/delta?cursor=" + url.QueryEscape(p1.Cursor)), Token: w1}).want(http.StatusOK).decode(&p3)
		if p3.Acks != nil || len(p3.Commits) != 1 {
			t.Fatalf("forged ack = %+v", p3)
		}

		// The live stream: a push outside the view is a page of acks only.
		s := e.watch(t, viewPath("/alpha/delta?watch=1&cursor="+url.QueryEscape(p3.Cursor)), w1)
		e.push(t, w1, map[string]any{"clientId": "phone", "mutations": []any{
			map[string]any{"ordinal": 3, "op": "put", "type": "task", "entityId": "t5", "properties": map[string]any{"project": "beta"}}}}).want(http.StatusOK)
		var f ackPage
		if err := json.Unmarshal([]byte(s.frame()), &f); err != nil {
			t.Fatal(err)
		}
		if f.Acks["phone"] != 3 || len(f.Commits) != 0 || f.Cursor == "" {
			t.Fatalf("stream frame = %+v", f)
		}
		e.push(t, w1, map[string]any{"clientId": "phone", "mutations": []any{
			map[string]any{"ordinal": 4, "op": "put", "type": "task", "entityId": "t6", "properties": map[string]any{"project": "alpha"}}}}).want(http.StatusOK)
		if err := json.Unmarshal([]byte(s.frame()), &f); err != nil {
			t.Fatal(err)
		}
		if f.Acks["phone"] != 4 || len(f.Commits) != 1 {
			t.Fatalf("stream frame = %+v", f)
		}
	})
}
