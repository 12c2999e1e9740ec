package causality_test

import (
	"fmt"
	"time"

	"github.com/eddy-run/eddy/causality"
)

// The executor asks Decide about every delivery it creates.
func ExampleDecide() {
	api := causality.Cause{Seq: 1, Depth: 0, Op: "put"}
	deep := causality.Cause{Seq: 40, Depth: 16, Op: "patch"}
	none := causality.Spent{}
	fmt.Println(causality.Decide(api, causality.Limits{}, none).Decision, causality.Next(api))
	v := causality.Decide(deep, causality.Limits{}, none)
	fmt.Println(v.Decision, causality.Next(deep), v.Reason())

	park := causality.NewPark(causality.Effect{Trigger: "ping", ID: "d-9", Cause: deep}, v)
	fmt.Println(park.Op, park.Type, park.EntityID, string(park.Payload))
	// Appended at seq 41, the park row is the cause of whatever it matches.
	fmt.Println(causality.Decide(causality.Cause{Seq: 41, Depth: park.Provenance.Depth, Op: park.Op}, causality.Limits{}, none).Decision)

	// Past the causal budget: the root's first parked delivery writes
	// the park row, later ones park quietly.
	wide := causality.Cause{Seq: 900, Depth: 4, Op: "put", Root: 1}
	b := causality.Decide(wide, causality.Limits{}, causality.Spent{Rows: 1000})
	fmt.Println(b.Decision, b.Reason())
	fmt.Println(causality.Decide(wide, causality.Limits{}, causality.Spent{Rows: 1003, Parked: true}).Decision)
	// Output:
	// run 1
	// park 17 depth 17 is past the causality cap 16
	// park eddy.delivery d-9 {"trigger":"ping","depth":17}
	// park_quietly
	// park root 1 caused 1000 rows, the causal budget is 1000
	// park_quietly
}

// A webhook delivery carries a token; the server verifies it when the
// webhook writes back with Eddy-Cause.
func ExampleMint() {
	key := []byte("a key of at least thirty-two bytes")
	now := time.Date(2026, 8, 4, 10, 0, 0, 0, time.UTC)
	d := causality.Effect{Trigger: "stamp", ID: "d-1", Cause: causality.Cause{Seq: 7, Depth: 0, Op: "patch"}}
	tok, err := causality.Mint(key, d.Claims("default", now.Add(causality.DefaultTokenTTL)))
	if err != nil {
		panic(err)
	}
	c, err := causality.Verify(key, tok, "default", now)
	fmt.Println(c.Trigger, c.Delivery, c.CausedBy, c.Depth, err)
	p := c.Provenance("", "")
	fmt.Println(p.Actor, p.Via)
	// Output:
	// stamp d-1 7 1 <nil>
	// trigger:stamp trigger
}
