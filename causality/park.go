package causality

import (
	"encoding/json"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// Engine row types.
const (
	// TypeDelivery is the type of an engine park row; its entity id is
	// the parked delivery's id.
	TypeDelivery = "eddy.delivery"
	// TypeTrigger is the type of an engine fire row; its entity id is the
	// cron trigger's name.
	TypeTrigger = "eddy.trigger"
)

// parkPayload fixes the payload's key order: trigger, depth and, for the
// budget only, the limit, the budget and the root's rows (a depth park's
// payload stays {"trigger", "depth"}, as DESIGN.md gives it).
type parkPayload struct {
	Trigger string `json:"trigger"`
	Depth   int    `json:"depth"`
	Limit   string `json:"limit,omitempty"`
	Budget  int    `json:"budget,omitempty"`
	Rows    int64  `json:"rows,omitempty"`
}

// firePayload is the payload of a fire row.
type firePayload struct {
	ScheduledAt string `json:"scheduledAt"`
}

// NewPark returns the engine row that records a delivery Decide parked
// with Park (v is its verdict): actor engine, op park, type eddy.delivery,
// entityId the delivery id and payload {"trigger": name, "depth": N}
// or, past the causal budget, {"trigger": name,
// "depth": N, "limit": "budget", "budget": B, "rows": M}. It carries no
// entity changes. Its provenance records the delivery's cause, root and
// depth, so the chain walks through it and any delivery it causes parks
// quietly (see Decide). Append it with the delivery, in the same write
// (changelog.WriteRequest.Engine). Never build one for ParkQuietly.
func NewPark(d Effect, v Verdict) changelog.EngineRow {
	depth := d.Depth()
	pp := parkPayload{Trigger: d.Trigger, Depth: depth}
	if v.Limit == LimitBudget {
		pp.Limit, pp.Budget, pp.Rows = LimitBudget, v.Budget, v.Rows
	}
	payload, _ := json.Marshal(pp) // cannot fail
	return changelog.EngineRow{
		Op:       changelog.OpPark,
		Type:     TypeDelivery,
		EntityID: d.ID,
		Payload:  payload,
		Provenance: store.Provenance{
			Actor:    ActorEngine,
			Via:      ViaEngine,
			Trigger:  d.Trigger,
			Delivery: d.ID,
			CausedBy: d.Cause.Seq,
			Root:     d.Cause.RootSeq(),
			Depth:    depth,
		},
	}
}

// NewFire returns the engine row that records a cron trigger firing for
// its scheduled time: actor engine, op fire, type eddy.trigger, entityId
// the trigger's name and payload {"scheduledAt": "<RFC 3339 UTC>"}. It
// carries no entity changes and starts a chain (depth 0, no cause); the
// firing's delivery is caused by it. Append it with that delivery, in the
// same write (changelog.WriteRequest.Engine).
func NewFire(trigger string, scheduledAt time.Time) changelog.EngineRow {
	at := scheduledAt.UTC().Format(time.RFC3339Nano)
	payload, _ := json.Marshal(firePayload{ScheduledAt: at}) // cannot fail
	return changelog.EngineRow{
		Op:       changelog.OpFire,
		Type:     TypeTrigger,
		EntityID: trigger,
		Payload:  payload,
		Provenance: store.Provenance{
			Actor:   ActorEngine,
			Via:     ViaEngine,
			Trigger: trigger,
		},
	}
}
