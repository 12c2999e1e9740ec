package triggers

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/eddy-run/eddy/problem"
)

func TestParseTriggerDefaults(t *testing.T) {
	t.Parallel()
	tr, err := ParseTrigger("stamp", []byte(`{"source": {"changes": {}}, "function": "f"}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"stamp","source":{"changes":{}},"function":"f","enabled":true,"start":"head",` +
		`"echo":false,"coalesce":false,"delivery":{"ordering":"entity","concurrency":1,"maxAttempts":5,` +
		`"backoff":{"initial":"1s","max":"5m"}}}`
	if string(got) != want {
		t.Errorf("canonical form\n got %s\nwant %s", got, want)
	}
	if tr.Source.Changes.Program() != nil {
		t.Error("empty when compiled to a program")
	}
}

func TestParseTriggerFields(t *testing.T) {
	t.Parallel()
	body := `{"name": "stamp", "source": {"changes": {"types": ["task", "note", "task"], "ops": ["patch", "fire"],
		"actors": ["owner"], "excludeActors": ["bot", "engine"],
		"when": "entity != null && entity.properties.status == 'done'"}},
		"function": "stamp-completed", "enabled": false, "start": "4190",
		"echo": true, "coalesce": true, "causalityCap": 4, "causalBudget": 200,
		"delivery": {"ordering": "none", "concurrency": 8, "maxAttempts": 3,
			"backoff": {"initial": "500ms", "max": "1h"}, "timeout": "1m30s"}}`
	tr, err := ParseTrigger("stamp", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Source.Changes
	checks := []struct {
		name      string
		got, want any
	}{
		{"types", c.Types, []string{"note", "task"}},
		{"ops", c.Ops, []string{"fire", "patch"}},
		{"actors", c.Actors, []string{"owner"}},
		{"excludeActors", c.ExcludeActors, []string{"bot", "engine"}},
		{"program", c.Program().String(), c.When},
		{"function", tr.Function, "stamp-completed"},
		{"enabled", tr.Enabled, false},
		{"start", tr.Start, Start{Policy: StartSeq, Seq: 4190}},
		{"echo", tr.Echo, true},
		{"coalesce", tr.Coalesce, true},
		{"causalityCap", tr.CausalityCap, 4},
		{"causalBudget", tr.CausalBudget, 200},
		{"ordering", tr.Delivery.Ordering, OrderingNone},
		{"concurrency", tr.Delivery.Concurrency, 8},
		{"maxAttempts", tr.Delivery.MaxAttempts, 3},
		{"backoff", tr.Delivery.Backoff, Backoff{Duration(500 * time.Millisecond), Duration(time.Hour)}},
		{"timeout", tr.Delivery.Timeout, Duration(90 * time.Second)},
	}
	for _, ck := range checks {
		if g, w := mustJSON(t, ck.got), mustJSON(t, ck.want); g != w {
			t.Errorf("%s = %s, want %s", ck.name, g, w)
		}
	}
	roundTrip(t, tr)
}

func TestParseTriggerCron(t *testing.T) {
	t.Parallel()
	tr, err := ParseTrigger("overdue", []byte(`{"source": {"cron": {"schedule": "0 9 * * *", "timezone": "Europe/Paris"}}, "function": "mark-overdue"}`))
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Source.Cron
	if c.CatchUp != CatchUpLast || c.Timezone != "Europe/Paris" {
		t.Errorf("cron = %+v, want catchUp last in Europe/Paris", c)
	}
	from := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	if got, want := c.Next(from), time.Date(2026, 7, 2, 7, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next = %v, want %v (09:00 Paris summer time)", got, want)
	}
	roundTrip(t, tr)

	every, err := ParseTrigger("tick", []byte(`{"source": {"cron": {"schedule": "@every 1m", "catchUp": "all"}}, "function": "f", "start": 0}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := every.Source.Cron.Next(from); !got.Equal(from.Add(time.Minute)) {
		t.Errorf("@every 1m Next = %v", got)
	}
	if every.Source.Cron.Timezone != "UTC" || every.Start != (Start{Policy: StartSeq}) {
		t.Errorf("defaults: %+v, start %v", every.Source.Cron, every.Start)
	}
	roundTrip(t, every)
}

func TestParseTriggerStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		start string
		want  Start
	}{
		{`"head"`, Start{Policy: StartHead}},
		{`"beginning"`, Start{Policy: StartBeginning}},
		{`12`, Start{Policy: StartSeq, Seq: 12}},
		{`"12"`, Start{Policy: StartSeq, Seq: 12}},
		{`null`, Start{Policy: StartHead}},
	}
	for _, tc := range tests {
		tr, err := ParseTrigger("t", []byte(`{"source": {"changes": {}}, "function": "f", "start": `+tc.start+`}`))
		if err != nil {
			t.Fatalf("start %s: %v", tc.start, err)
		}
		if tr.Start != tc.want {
			t.Errorf("start %s = %v, want %v", tc.start, tr.Start, tc.want)
		}
	}
}

func roundTrip(t *testing.T, tr *Trigger) {
	t.Helper()
	first := mustJSON(t, tr)
	again, err := ParseTrigger(tr.Name, []byte(first))
	if err != nil {
		t.Fatalf("parse canonical form %s: %v", first, err)
	}
	if second := mustJSON(t, again); second != first {
		t.Errorf("round trip\n got %s\nwant %s", second, first)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseTriggerErrors(t *testing.T) {
	t.Parallel()
	const ok = `"source": {"changes": {}}, "function": "f"`
	tests := []struct {
		name, body, field string
	}{
		{"bad name", `{` + ok + `}`, "name"},
		{"name mismatch", `{"name": "other", ` + ok + `}`, "name"},
		{"unknown top field", `{"sauce": 1, ` + ok + `}`, "sauce"},
		{"unknown nested field", `{"source": {"changes": {"type": ["task"]}}, "function": "f"}`, "source.changes.type"},
		{"unknown delivery field", `{` + ok + `, "delivery": {"retries": 3}}`, "delivery.retries"},
		{"unknown backoff field", `{` + ok + `, "delivery": {"backoff": {"min": "1s"}}}`, "delivery.backoff.min"},
		{"unknown cron field", `{"source": {"cron": {"schedule": "@daily", "tz": "UTC"}}, "function": "f"}`, "source.cron.tz"},
		{"wrong JSON type", `{"source": {"changes": {"types": "task"}}, "function": "f"}`, "source.changes.types"},
		{"source missing", `{"function": "f"}`, "source"},
		{"source empty", `{"source": {}, "function": "f"}`, "source"},
		{"both sources", `{"source": {"changes": {}, "cron": {"schedule": "@daily"}}, "function": "f"}`, "source"},
		{"source not object", `{"source": [], "function": "f"}`, "source"},
		{"bad type", `{"source": {"changes": {"types": ["Task"]}}, "function": "f"}`, "source.changes.types"},
		{"unknown op", `{"source": {"changes": {"ops": ["put", "frob"]}}, "function": "f"}`, "source.changes.ops"},
		{"empty actor", `{"source": {"changes": {"actors": [""]}}, "function": "f"}`, "source.changes.actors"},
		{"bad excluded actor", `{"source": {"changes": {"excludeActors": ["a b"]}}, "function": "f"}`, "source.changes.excludeActors"},
		{"when syntax", `{"source": {"changes": {"when": "row.type =="}}, "function": "f"}`, "source.changes.when"},
		{"when not bool", `{"source": {"changes": {"when": "row.seq + 1"}}, "function": "f"}`, "source.changes.when"},
		{"function missing", `{"source": {"changes": {}}}`, "function"},
		{"function invalid", `{"source": {"changes": {}}, "function": "F!"}`, "function"},
		{"enabled not bool", `{` + ok + `, "enabled": "yes"}`, "enabled"},
		{"start word", `{` + ok + `, "start": "now"}`, "start"},
		{"start negative", `{` + ok + `, "start": -1}`, "start"},
		{"start fraction", `{` + ok + `, "start": 1.5}`, "start"},
		{"start object", `{` + ok + `, "start": {}}`, "start"},
		{"cap high", `{` + ok + `, "causalityCap": 17}`, "causalityCap"},
		{"cap negative", `{` + ok + `, "causalityCap": -1}`, "causalityCap"},
		{"budget high", `{` + ok + `, "causalBudget": 1001}`, "causalBudget"},
		{"budget negative", `{` + ok + `, "causalBudget": -1}`, "causalBudget"},
		{"ordering", `{` + ok + `, "delivery": {"ordering": "fifo"}}`, "delivery.ordering"},
		{"concurrency zero", `{` + ok + `, "delivery": {"concurrency": 0}}`, "delivery.concurrency"},
		{"concurrency high", `{` + ok + `, "delivery": {"concurrency": 5000}}`, "delivery.concurrency"},
		{"maxAttempts zero", `{` + ok + `, "delivery": {"maxAttempts": 0}}`, "delivery.maxAttempts"},
		{"timeout unparsable", `{` + ok + `, "delivery": {"timeout": "ten"}}`, "delivery.timeout"},
		{"timeout negative", `{` + ok + `, "delivery": {"timeout": "-1s"}}`, "delivery.timeout"},
		{"timeout number", `{` + ok + `, "delivery": {"timeout": 10}}`, "delivery.timeout"},
		{"backoff initial zero", `{` + ok + `, "delivery": {"backoff": {"initial": "0s"}}}`, "delivery.backoff.initial"},
		{"backoff max too long", `{` + ok + `, "delivery": {"backoff": {"max": "48h"}}}`, "delivery.backoff.max"},
		{"backoff inverted", `{` + ok + `, "delivery": {"backoff": {"initial": "10m"}}}`, "delivery.backoff"},
		{"schedule missing", `{"source": {"cron": {}}, "function": "f"}`, "source.cron.schedule"},
		{"schedule bad", `{"source": {"cron": {"schedule": "61 * * * *"}}, "function": "f"}`, "source.cron.schedule"},
		{"schedule tz prefix", `{"source": {"cron": {"schedule": "TZ=UTC"}}, "function": "f"}`, "source.cron.schedule"},
		{"schedule descriptor", `{"source": {"cron": {"schedule": "@fortnightly"}}, "function": "f"}`, "source.cron.schedule"},
		{"timezone", `{"source": {"cron": {"schedule": "@daily", "timezone": "Mars/Olympus"}}, "function": "f"}`, "source.cron.timezone"},
		{"catchUp", `{"source": {"cron": {"schedule": "@daily", "catchUp": "some"}}, "function": "f"}`, "source.cron.catchUp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "t"
			if tc.name == "bad name" {
				name = "Bad_Name"
			}
			_, err := ParseTrigger(name, []byte(tc.body))
			pe := badRequest(t, err)
			if pe.Details["field"] != tc.field {
				t.Errorf("field = %v, want %q (%v)", pe.Details["field"], tc.field, pe)
			}
		})
	}
}

func TestParseTriggerBodyErrors(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `{`, `[]`, `{"function": "f"} {}`, `null x`} {
		_, err := ParseTrigger("t", []byte(body))
		badRequest(t, err)
	}
}

func TestParseTriggerWhenPosition(t *testing.T) {
	t.Parallel()
	body := `{"source": {"changes": {"when": "row.type == 'a' &&\n  nope"}}, "function": "f"}`
	_, err := ParseTrigger("t", []byte(body))
	pe := badRequest(t, err)
	pos, ok := pe.Details["position"].(map[string]int)
	if !ok || pos["line"] != 2 || pos["column"] != 3 {
		t.Errorf("position = %v, want line 2 column 3 (%v)", pe.Details["position"], pe)
	}
}

func badRequest(t *testing.T, err error) *problem.Error {
	t.Helper()
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != problem.BadRequest {
		t.Fatalf("err = %v, want bad_request", err)
	}
	return pe
}
