package changelog

import (
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

func TestParseFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, query string
		want        Filter
	}{
		{"empty", ``, Filter{}},
		{"repeated and comma lists", `types=task,note&types=user&ops=put,,patch&actors=owner`,
			Filter{Types: []string{"task", "note", "user"}, Ops: []string{"put", "patch"}, Actors: []string{"owner"}}},
		{"excludes and engine ops", `excludeTypes=eddy.trigger&excludeOps=fire,park&excludeActors=engine,trigger:x`,
			Filter{ExcludeTypes: []string{"eddy.trigger"}, ExcludeOps: []string{"fire", "park"}, ExcludeActors: []string{"engine", "trigger:x"}}},
		{"duplicates and blanks dropped", `types=task,%20task%20,&types=`, Filter{Types: []string{"task"}}},
		{"entity", `entityType=task&entityId=t1`, Filter{EntityType: "task", EntityID: "t1"}},
		{"q", `q=Hello%20World`, Filter{Q: "Hello World"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseFilter(q)
			if err != nil {
				t.Fatalf("ParseFilter(%s): %v", tt.query, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseFilter(%s) = %+v, want %+v", tt.query, got, tt.want)
			}
		})
	}
}

func TestParseFilterInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct{ query, param string }{
		{`types=Task`, "types"},
		{`excludeTypes=a..b`, "excludeTypes"},
		{`ops=upsert`, "ops"},
		{`excludeOps=put,nope`, "excludeOps"},
		{`entityId=t1`, "entityType"},
		{`entityType=task`, "entityId"},
		{`entityType=task&entityType=note&entityId=t1`, "entityType"},
		{`entityType=task&entityId=t1&entityId=t2`, "entityId"},
		{`entityType=Bad&entityId=t1`, "entityType"},
		{`entityType=task&entityId=a%2Fb`, "entityId"},
		{`entityType=task&entityId=`, "entityId"},
		{`q=a&q=b`, "q"},
		{`q=` + strings.Repeat("x", MaxQueryLen+1), "q"},
	}
	for _, tt := range tests {
		q, err := url.ParseQuery(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ParseFilter(q)
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Code != problem.BadRequest || pe.Details["parameter"] != tt.param {
			t.Errorf("ParseFilter(%.40s) error = %v, want bad_request on %s", tt.query, err, tt.param)
		}
	}
	q := url.Values{"q": {strings.Repeat("é", MaxQueryLen)}}
	if _, err := ParseFilter(q); err != nil {
		t.Errorf("q of %d characters: %v", MaxQueryLen, err)
	}
}

func TestFilterMatch(t *testing.T) {
	t.Parallel()
	row := &store.Row{Seq: 4, Actor: "trigger:Notify", Op: "put", EntityID: "kq3v9x2m41pf", Type: "task",
		Payload: json.RawMessage(`{"created":true,"properties":["dueAt","title"]}`)}
	deny := func(*store.Row) bool { return false }
	tests := []struct {
		name string
		f    Filter
		want bool
	}{
		{"empty", Filter{}, true},
		{"types hit", Filter{Types: []string{"note", "task"}}, true},
		{"types miss", Filter{Types: []string{"note"}}, false},
		{"ops", Filter{Ops: []string{"patch"}}, false},
		{"actors", Filter{Actors: []string{"trigger:Notify"}}, true},
		{"exclude types", Filter{ExcludeTypes: []string{"task"}}, false},
		{"exclude ops", Filter{ExcludeOps: []string{"delete", "put"}}, false},
		{"exclude actors miss", Filter{ExcludeActors: []string{"owner"}}, true},
		{"entity", Filter{EntityType: "task", EntityID: "kq3v9x2m41pf"}, true},
		{"entity other id", Filter{EntityType: "task", EntityID: "x"}, false},
		{"entity other type", Filter{EntityType: "note", EntityID: "kq3v9x2m41pf"}, false},
		{"q payload case-insensitive", Filter{Q: "DUEAT"}, true},
		{"q actor", Filter{Q: "notify"}, true},
		{"q id", Filter{Q: "9X2M"}, true},
		{"q type", Filter{Q: "tas"}, true},
		{"q miss", Filter{Q: "nothing"}, false},
		{"allow last", Filter{Types: []string{"task"}, Allow: deny}, false},
		{"allow not reached", Filter{Types: []string{"note"}, Allow: func(*store.Row) bool { panic("called") }}, false},
	}
	for _, tt := range tests {
		if got := tt.f.Match(row); got != tt.want {
			t.Errorf("%s: Match = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFilterRowFilter(t *testing.T) {
	t.Parallel()
	f := Filter{Types: []string{"task"}, Ops: []string{"put"}, Actors: []string{"a"}, ExcludeTypes: []string{"x"},
		ExcludeOps: []string{"fire"}, ExcludeActors: []string{"engine"}, Q: "q", EntityType: "task", EntityID: "t1"}
	rf := f.RowFilter()
	want := store.RowFilter{Types: []string{"task"}, Ops: []string{"put"}, Actors: []string{"a"}, ExcludeTypes: []string{"x"},
		ExcludeOps: []string{"fire"}, ExcludeActors: []string{"engine"}, EntityType: "task", EntityID: "t1"}
	if !reflect.DeepEqual(rf, want) {
		t.Errorf("RowFilter = %+v, want %+v", rf, want)
	}
	rf.Types[0] = "changed"
	if f.Types[0] != "task" {
		t.Error("RowFilter shares its slices with the filter")
	}
	back, err := ParseFilter(f.Values())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.RowFilter(), want) || back.Q != "q" {
		t.Errorf("Values round trip = %+v", back)
	}
}

func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		``, `types=task,note&types=user&ops=put,,patch&actors=owner`,
		`excludeTypes=eddy.trigger&excludeOps=fire,park&excludeActors=engine`,
		`entityType=task&entityId=t1&q=hello`, `entityId=t1`, `q=a&q=b`, `types=%20task%20,`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		flt, err := ParseFilter(q)
		if err != nil {
			if problem.CodeOf(err) != problem.BadRequest {
				t.Fatalf("error is not bad_request: %v", err)
			}
			return
		}
		back, err := ParseFilter(flt.Values())
		if err != nil {
			t.Fatalf("re-parsing %v: %v", flt.Values(), err)
		}
		if !reflect.DeepEqual(back.RowFilter(), flt.RowFilter()) || back.Q != flt.Q {
			t.Fatalf("round trip: %+v != %+v", back, flt)
		}
		row := &store.Row{Type: "task", Op: "put", Actor: "owner", EntityID: "t1", Payload: json.RawMessage(`{}`)}
		_ = flt.Match(row)
	})
}

func TestFilterJudge(t *testing.T) {
	t.Parallel()
	needs := func(r *store.Row) bool { return r.EntityID == "secret" }
	tests := []struct {
		name string
		f    Filter
		row  store.Row
		want Verdict
	}{
		{"no filter", Filter{}, store.Row{Type: "task"}, Selected},
		{"rejected by type", Filter{Types: []string{"note"}}, store.Row{Type: "task"}, Rejected},
		{"rejected before its commit is asked", Filter{Types: []string{"note"}, NeedsCommit: needs}, store.Row{Type: "task", EntityID: "secret"}, Rejected},
		{"commit decides", Filter{NeedsCommit: needs}, store.Row{Type: "task", EntityID: "secret"}, AskCommit},
		{"row decides", Filter{NeedsCommit: needs}, store.Row{Type: "task", EntityID: "open"}, Selected},
	}
	for _, tt := range tests {
		if got := tt.f.Judge(&tt.row); got != tt.want {
			t.Errorf("%s: Judge = %d, want %d", tt.name, got, tt.want)
		}
	}
}
