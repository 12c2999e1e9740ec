package predicate

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

func testRow() *store.Row {
	return &store.Row{
		Seq: 42, TS: time.Date(2026, 8, 4, 10, 0, 0, 0, time.UTC), Actor: "owner", Op: "patch",
		EntityID: "t1", Type: "task", Payload: json.RawMessage(`{"properties":["status"],"state":{"status":"done"}}`),
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src     string
		want    bool
		wantErr error
	}{
		{`row.type == "task"`, true, nil},
		{`row.type == "note"`, false, nil},
		{`row.seq > 40 && row.op == "patch"`, true, nil},
		{`"status" in row.payload.properties`, true, nil},
		{`row.payload.state.status == "done"`, true, nil},
		{`row.payload.created == true`, false, ErrNoSuchKey},
		{`has(row.payload.created)`, false, nil},
		{`row.ts > timestamp("2026-01-01T00:00:00Z")`, true, nil},
		{`row.actor.startsWith("own")`, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			p, err := CompileRow("when", tc.src)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			got, err := p.Match(testRow())
			if got != tc.want {
				t.Errorf("Match = %v, want %v (err %v)", got, tc.want, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && err != nil {
				t.Errorf("unexpected err %v", err)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src        string
		line       int
		column     int
		positioned bool
	}{
		{`row.type ==`, 1, 12, true},
		{`row.type == "a" &&\n  nope`, 0, 0, true},
		{`unknown.field == 1`, 1, 1, true},
		{`row.seq + 1`, 0, 0, false},
		{`row.op`, 0, 0, false},
		{`row["seq"]`, 0, 0, false},
		{`row.payload`, 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			_, err := CompileRow("when", tc.src)
			var pe *problem.Error
			if !errors.As(err, &pe) || pe.Code != problem.BadRequest {
				t.Fatalf("err = %v, want bad_request", err)
			}
			if pe.Details["parameter"] != "when" {
				t.Errorf("details = %v, want parameter when", pe.Details)
			}
			pos, ok := pe.Details["position"].(map[string]int)
			if ok != tc.positioned {
				t.Fatalf("position present = %v, want %v (%v)", ok, tc.positioned, pe)
			}
			if tc.line > 0 && (pos["line"] != tc.line || pos["column"] != tc.column) {
				t.Errorf("position = %v, want line %d column %d", pos, tc.line, tc.column)
			}
		})
	}
}

func TestCostLimit(t *testing.T) {
	old := CostLimit
	CostLimit = 1000
	defer func() { CostLimit = old }()
	p, err := CompileRow("when", `row.payload.l.all(x, x >= 0)`)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := p.Match(listRow(1000)); ok || err == nil {
		t.Fatalf("Match = %v, %v; want false and a cost error", ok, err)
	}
}
