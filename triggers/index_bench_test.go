package triggers

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// benchTriggers returns n triggers on type task whose predicates differ
// only in constants, plus 100 others spread over four types (25 each),
// one in five for deletes only and one in five for links only, with
// predicates from a pool of which half can be hashed and half cannot.
func benchTriggers(b *testing.B, n int) []*Trigger {
	b.Helper()
	statuses := []string{"done", "open", "blocked"}
	ts := make([]*Trigger, 0, n+100)
	for i := range n {
		ts = append(ts, mustTrigger(b, fmt.Sprintf("same-%05d", i), fmt.Sprintf(
			`{"types": ["task"], "when": "entity.properties.project == 'p%d' && entity.properties.status == '%s'"}`,
			i, statuses[i%3])))
	}
	pool := []string{
		`entity.properties.owner == 'u%d' && size(entity.properties.title) > 3`,
		`row.actor.startsWith('bot') || entity.properties.priority > %d`,
		`entity != null && entity.properties.status == 'blocked' && entity.properties.priority >= %d`,
		`has(entity.properties.dueAt) && entity.properties.priority != %d`,
		`before.properties.owner == 'u%d' && before.properties.status != entity.properties.status`,
		`'urgent' in entity.properties.tags || entity.properties.priority == %d`,
		`row.payload.created == true && entity.properties.project == 'p%d'`,
		`entity.properties.title.contains('%d') && row.op == 'patch'`,
	}
	types := []string{"task", "note", "user", "project"}
	opsFor := []string{`, "ops": ["delete"]`, `, "ops": ["link", "unlink"]`, ``, ``, ``}
	for i := range 100 {
		when := fmt.Sprintf(pool[i%len(pool)], i)
		ts = append(ts, mustTrigger(b, fmt.Sprintf("other-%02d", i), fmt.Sprintf(
			`{"types": [%q]%s, "when": %q}`, types[i%4], opsFor[i/4%5], when)))
	}
	return ts
}

// benchInputs returns rows of type task: patches of entities in random
// projects, one in ten a delete.
func benchInputs(n int) []Subject {
	rng := rand.New(rand.NewPCG(1, 2))
	ins := make([]Subject, 1000)
	for i := range ins {
		props := func() json.RawMessage {
			p, _ := json.Marshal(map[string]any{
				"project": fmt.Sprintf("p%d", rng.IntN(n)), "status": pick(rng, []string{"done", "open", "blocked"}),
				"owner": fmt.Sprintf("u%d", rng.IntN(50)), "title": "write the benchmark", "priority": rng.IntN(5),
				"tags": []string{"a", "b"},
			})
			return p
		}
		row := &store.Row{Seq: int64(i + 1), Type: "task", Op: "patch", Actor: "owner", EntityID: fmt.Sprint(i),
			Payload: json.RawMessage(`{"properties":["status"]}`)}
		in := Subject{Row: row, Before: &store.Record{Type: "task", ID: row.EntityID, Version: 1, Properties: props()}}
		if i%10 == 0 {
			row.Op = "delete"
		} else {
			in.Entity = &store.Record{Type: "task", ID: row.EntityID, Version: row.Seq, Properties: props()}
		}
		ins[i] = in
	}
	return ins
}

// BenchmarkMatch reports the time to judge one row (ns/op) through the
// index and by evaluating every trigger.
func BenchmarkMatch(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		x := NewIndex(benchTriggers(b, n))
		ins := benchInputs(n)
		b.Run(fmt.Sprintf("triggers=%d/index", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				x.Match(ins[i%len(ins)])
			}
		})
		b.Run(fmt.Sprintf("triggers=%d/naive", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				x.matchNaive(ins[i%len(ins)])
			}
		})
	}
}
