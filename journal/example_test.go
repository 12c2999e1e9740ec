package journal_test

import (
	"encoding/json"
	"fmt"

	"github.com/eddy-run/eddy/journal"
	"github.com/eddy-run/eddy/store"
)

// onlyAlice reads the docs whose members include alice.
type onlyAlice struct{}

func (onlyAlice) CanReadRecord(r *store.Record) bool {
	var p struct{ Members []string }
	_ = json.Unmarshal(r.Properties, &p)
	for _, m := range p.Members {
		if m == "alice" {
			return true
		}
	}
	return false
}

// A patch that takes a doc away from alice says so to her with an access
// record, and nothing of its content.
func ExampleDescribe() {
	before := &store.Record{Type: "doc", ID: "d1", Version: 3, Properties: json.RawMessage(`{"members":["alice"]}`)}
	after := &store.Record{Type: "doc", ID: "d1", Version: 4, Properties: json.RawMessage(`{"members":["bob"],"secret":"x"}`)}
	c := &store.Commit{Row: store.Row{Seq: 4, Op: "patch"},
		Changes: []store.Change{{Kind: store.ChangeUpdated, Type: "doc", ID: "d1", Version: 4, Before: before, After: after}}}
	for _, e := range journal.Describe(c, onlyAlice{}) {
		b, _ := json.Marshal(e.Record)
		fmt.Println(string(b))
	}
	// Output:
	// {"kind":"access","seq":4,"type":"doc","id":"d1","scope":{"type":"doc","id":"d1"}}
}
