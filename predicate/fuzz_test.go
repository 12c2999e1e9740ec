package predicate

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// FuzzCompileRow checks that any `when` over rows is either refused with
// a bad_request or compiles to a predicate that judges a row without
// panicking.
func FuzzCompileRow(f *testing.F) {
	for _, s := range []string{
		`row.op == "put"`, `row.type == "task" && row.seq > 3`, `row.payload.status == "done"`,
		`has(row.payload.x)`, `row.actor.startsWith("trigger:")`, `row.ts > timestamp("2026-01-01T00:00:00Z")`,
		`[1,2,3].all(x, [1,2,3].all(y, x + y > 0))`, `row.op`, `1`, `"`, `row.seq / 0 == 1`,
	} {
		f.Add(s)
	}
	r := &store.Row{Seq: 7, TS: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Actor: "owner", Op: "patch",
		EntityID: "t1", Type: "task", Payload: json.RawMessage(`{"status": "done", "n": 1.5, "tags": ["a"]}`)}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := CompileRow("when", src)
		if err != nil {
			var pe *problem.Error
			if !errors.As(err, &pe) || pe.Code != problem.BadRequest {
				t.Fatalf("%q: err = %v, want bad_request", src, err)
			}
			return
		}
		_, _ = p.Match(r)
	})
}
