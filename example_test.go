package eddy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/definitions"
	"github.com/eddy-run/eddy/functions"
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

// Register a Go handler, save a function of kind "go" that names it and
// dry-run it on a committed row: its actions are returned, nothing is
// written.
func ExampleEddy_Functions() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "eddy-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	e, err := eddy.Open(ctx, eddy.Config{DataDir: dir})
	if err != nil {
		panic(err)
	}
	defer e.Close()

	err = e.Functions().Register("sync-to-crm", func(ctx context.Context, in functions.Input) ([]changelog.Mutation, error) {
		// A real handler would call the CRM here, honouring ctx.
		return []changelog.Mutation{{
			Op: changelog.OpPatch, Type: "task", EntityID: in.Entity.ID,
			Patch: json.RawMessage(`{"crmSynced": true}`),
		}}, nil
	})
	if err != nil {
		panic(err)
	}

	defs := e.Definitions()
	_, _, err = defs.PutFunction(ctx, eddy.DefaultSpace, "sync-task",
		[]byte(`{"kind": "go", "handler": "sync-to-crm", "writes": ["task"]}`))
	if err != nil {
		panic(err)
	}
	f, err := defs.Function(ctx, eddy.DefaultSpace, "sync-task")
	if err != nil {
		panic(err)
	}
	shown, _ := json.Marshal(f.Public())
	fmt.Println(string(shown))

	res, err := e.Log().Write(ctx, changelog.WriteRequest{
		Space: eddy.DefaultSpace,
		Mutations: []changelog.Mutation{{
			Op: changelog.OpPut, Type: "task", EntityID: "t1",
			Properties: json.RawMessage(`{"title": "call Ada"}`),
		}},
		Provenance: store.Provenance{Actor: "owner", Via: "api"},
	})
	if err != nil {
		panic(err)
	}
	dry, err := defs.TestFunction(ctx, eddy.DefaultSpace, "sync-task", definitions.TestParams{Seq: res.LastSeq})
	if err != nil {
		panic(err)
	}
	out, _ := json.Marshal(dry)
	fmt.Println(string(out))
	// Output:
	// {"name":"sync-task","kind":"go","writes":["task"],"handler":"sync-to-crm","registered":true}
	// {"function":"sync-task","kind":"go","seq":1,"actions":[{"op":"patch","type":"task","entityId":"t1","patch":{"crmSynced":true}}]}
}
