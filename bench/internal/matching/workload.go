package matching

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// statuses are the values of the status property.
var statuses = []string{"done", "open", "blocked"}

// otherWhens are the arbitrary triggers' predicates (%d is the trigger's
// number): half can be filed under a constant by the index, half cannot.
var otherWhens = []string{
	`entity.properties.owner == 'u%d' && size(entity.properties.title) > 3`,
	`row.actor.startsWith('bot') || entity.properties.priority > %d`,
	`entity != null && entity.properties.status == 'blocked' && entity.properties.priority >= %d`,
	`has(entity.properties.dueAt) && entity.properties.priority != %d`,
	`before.properties.owner == 'u%d' && before.properties.status != entity.properties.status`,
	`'urgent' in entity.properties.tags || entity.properties.priority == %d`,
	`row.payload.created == true && entity.properties.project == 'p%d'`,
	`entity.properties.title.contains('%d') && row.op == 'patch'`,
}

// workload returns n triggers on type task whose predicates differ only
// in constants (project pN and a status), plus 100 arbitrary ones spread
// over four types, one in five for deletes only and one in five for
// links only.
func workload(n int) ([]*triggers.Trigger, error) {
	ts := make([]*triggers.Trigger, 0, n+100)
	add := func(name, changes string) error {
		t, err := triggers.ParseTrigger(name, []byte(`{"source": {"changes": `+changes+`}, "function": "f"}`))
		if err != nil {
			return fmt.Errorf("matching: trigger %s: %w", name, err)
		}
		ts = append(ts, t)
		return nil
	}
	for i := range n {
		when := fmt.Sprintf(`entity.properties.project == 'p%d' && entity.properties.status == '%s'`, i, statuses[i%3])
		if err := add(fmt.Sprintf("same-%05d", i), fmt.Sprintf(`{"types": ["task"], "when": %q}`, when)); err != nil {
			return nil, err
		}
	}
	types := []string{"task", "note", "user", "project"}
	ops := []string{`, "ops": ["delete"]`, `, "ops": ["link", "unlink"]`, ``, ``, ``}
	for i := range 100 {
		when := fmt.Sprintf(otherWhens[i%len(otherWhens)], i)
		if err := add(fmt.Sprintf("other-%02d", i), fmt.Sprintf(`{"types": [%q]%s, "when": %q}`, types[i%4], ops[i/4%5], when)); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// inputs returns 1,000 rows of type task: patches of entities in random
// projects among n, one in ten a delete.
func inputs(n int) []triggers.Subject {
	rng := rand.New(rand.NewPCG(1, 2))
	props := func() json.RawMessage {
		p, _ := json.Marshal(map[string]any{
			"project": fmt.Sprintf("p%d", rng.IntN(n)), "status": statuses[rng.IntN(len(statuses))],
			"owner": fmt.Sprintf("u%d", rng.IntN(50)), "title": "write the benchmark", "priority": rng.IntN(5),
			"tags": []string{"a", "b"},
		})
		return p
	}
	ins := make([]triggers.Subject, 1000)
	for i := range ins {
		row := &store.Row{Seq: int64(i + 1), Type: "task", Op: "patch", Actor: "owner", EntityID: fmt.Sprint(i),
			Payload: json.RawMessage(`{"properties":["status"]}`)}
		in := triggers.Subject{Row: row, Before: &store.Record{Type: "task", ID: row.EntityID, Version: 1, Properties: props()}}
		if i%10 == 0 {
			row.Op = "delete"
		} else {
			in.Entity = &store.Record{Type: "task", ID: row.EntityID, Version: row.Seq, Properties: props()}
		}
		ins[i] = in
	}
	return ins
}
