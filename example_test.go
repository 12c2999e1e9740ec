package eddy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// Open eddy on embedded SQLite, write an entity and read the row it
// appended to the log.
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "eddy-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	e, err := eddy.Open(ctx, eddy.Config{DataDir: dir})
	if err != nil {
		panic(err) // unlike log.Fatal, panic runs the deferred cleanup
	}
	defer e.Close()

	res, err := e.Log().Write(ctx, changelog.WriteRequest{
		Space: eddy.DefaultSpace,
		Mutations: []changelog.Mutation{{
			Op: changelog.OpPut, Type: "task", EntityID: "t1",
			Properties: json.RawMessage(`{"title": "write the docs"}`),
		}},
		Provenance: store.Provenance{Actor: "owner", Via: "api"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("receipt:", res.Receipts[0].Status, "seq", res.LastSeq)

	page, err := e.Log().Read(ctx, eddy.DefaultSpace, 0, changelog.Filter{}, 10)
	if err != nil {
		panic(err)
	}
	for _, r := range page.Rows {
		fmt.Println(r.Seq, r.Actor, r.Op, r.Type, r.EntityID, string(r.Payload))
	}
	// Output:
	// receipt: applied seq 1
	// 1 owner put task t1 {"created":true,"properties":["title"]}
}
