package triggers

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// BenchmarkJudgeStored reports the time to judge one stored commit (a
// put of a new entity, as the catch-up reads it) with a `when` reading
// one property of entity, against the same judgment of the decoded
// commit (its values already built).
func BenchmarkJudgeStored(b *testing.B) {
	p, err := Compile("when", `int(entity.properties.n) % 1000 == 0`)
	if err != nil {
		b.Fatal(err)
	}
	const n = 1000
	raws := make([]store.RawCommit, n)
	decs := make([]store.Commit, n)
	ts := time.Date(2026, 12, 6, 5, 30, 0, 123456000, time.UTC)
	for i := range raws {
		id := "e" + strconv.Itoa(i)
		rec := &store.Record{Type: "task", ID: id, Version: int64(i + 1), Properties: json.RawMessage(`{"n":` + strconv.Itoa(i) + `,"title":"row ` + strconv.Itoa(i) + `"}`),
			Links: []store.Link{}, CreatedAt: ts, UpdatedAt: ts}
		c := store.Commit{Row: store.Row{Seq: int64(i + 1), Type: "task", EntityID: id, Op: "put"},
			Changes: []store.Change{{Kind: "created", Type: "task", ID: id, Version: int64(i + 1), After: rec, ConflictGroups: []string{"n", "title"}}}}
		changes, err := json.Marshal(c.Changes)
		if err != nil {
			b.Fatal(err)
		}
		raws[i] = store.RawCommit{Row: c.Row, Changes: changes}
		decs[i] = c
	}
	b.Run("stored", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			raw := raws[i%n] // SubjectOfRaw consumes nothing of raw
			if _, err := p.Eval(SubjectOfRaw(&raw)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoded", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := p.Eval(SubjectOf(&decs[i%n])); err != nil {
				b.Fatal(err)
			}
		}
	})
}
