package engine

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// catchUpPage returns n stored commits shaped like the catch-up bench's
// (bench/internal/catchup): each one put of a new entity, one in ten a
// task and the rest notes, properties {"n":N,"title":"row N"}.
func catchUpPage(b *testing.B, n int) []store.RawCommit {
	b.Helper()
	at := time.Date(2026, 12, 2, 8, 0, 0, 123456000, time.UTC)
	raws := make([]store.RawCommit, n)
	for i := range raws {
		typ, s := "note", strconv.Itoa(i)
		if i%10 == 0 {
			typ = "task"
		}
		seq := int64(i + 1)
		after := &store.Record{Type: typ, ID: "e" + s, Version: seq, Links: []store.Link{},
			Properties: json.RawMessage(`{"n":` + s + `,"title":"row ` + s + `"}`), CreatedAt: at, UpdatedAt: at}
		changes, err := json.Marshal([]store.Change{{Kind: store.ChangeCreated, Type: typ, ID: after.ID,
			Version: seq, After: after, ConflictGroups: []string{}}})
		if err != nil {
			b.Fatal(err)
		}
		raws[i] = store.RawCommit{
			Row: store.Row{Seq: seq, TS: at, Actor: "loader", Op: "put", Type: typ, EntityID: after.ID,
				Payload: json.RawMessage(`{"properties":{"n":` + s + `,"title":"row ` + s + `"}}`)},
			Changes: changes, Provenance: json.RawMessage(`{"actor":"loader","via":"api"}`),
		}
	}
	return raws
}

// BenchmarkJudgeRaw judges a page of 1,000 stored commits through the
// evaluator's judge path (judgeRaw) with the catch-up bench's trigger;
// ns/op and allocs/op are per page.
func BenchmarkJudgeRaw(b *testing.B) {
	def, err := triggers.ParseTrigger("t", []byte(`{"source":{"changes":{"types":["task"],"when":"int(entity.properties.n) % 1000 == 0"}},"function":"noop","start":"beginning"}`))
	if err != nil {
		b.Fatal(err)
	}
	sr := &spaceRun{e: &Engine{opts: Options{Now: time.Now}}, id: "s"}
	active := map[string]*trig{"t": {def: def}}
	raws := catchUpPage(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := sr.judgeRaw(active, raws); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(raws)), "ns/row")
}
