package changelog

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// benchTx is the part of a write transaction groupState.apply reads.
type benchTx struct {
	store.WriteTx
	space store.Space
}

func (tx benchTx) Space() store.Space { return tx.space }
func (tx benchTx) Entities() map[store.EntityKey]store.Record {
	return map[store.EntityKey]store.Record{}
}
func (tx benchTx) Receipts() map[string]store.StoredReceipt { return map[string]store.StoredReceipt{} }

// BenchmarkLeaderApply measures the group leader's in-memory work for a
// group of 16 puts of new entities (as BenchWrites sends): mutations
// decoded by the leader (the baseline, as before prepare) and decoded by
// their submitters beforehand (prepare, not timed: it runs in the
// submitting goroutines).
func BenchmarkLeaderApply(b *testing.B) {
	props, _ := json.Marshal(map[string]any{"n": 12345, "title": "row 12345", "tags": []string{"a", "b"}, "nested": map[string]any{"x": 1.5}})
	reqs := make([]WriteRequest, 16)
	for i := range reqs {
		m := Mutation{Op: OpPut, Type: "note", EntityID: fmt.Sprintf("e%d", i), Properties: props}
		reqs[i] = WriteRequest{Space: "s", Mutations: []Mutation{m}, Provenance: store.Provenance{Actor: "bench", Via: "api"}}
	}
	prepared := make([]WriteRequest, len(reqs))
	for i, r := range reqs {
		r.Mutations = append([]Mutation(nil), r.Mutations...)
		r.Mutations[0].prepare()
		prepared[i] = r
	}
	tx := benchTx{space: store.Space{ID: "s"}}
	now := time.Date(2026, 8, 4, 12, 0, 0, 0, time.UTC)
	for _, mode := range []struct {
		name string
		reqs []WriteRequest
	}{{"leader-decodes", reqs}, {"submitters-decode", prepared}} {
		b.Run(mode.name, func(b *testing.B) {
			for b.Loop() {
				g := newGroupState(tx, nil, now)
				for _, r := range mode.reqs {
					if res := g.apply(r); res.Receipts[0].Status != store.ReceiptApplied {
						b.Fatalf("receipt %+v", res.Receipts[0])
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(mode.reqs)), "ns/request")
		})
	}
}
