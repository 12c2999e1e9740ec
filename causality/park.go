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

// parkPayload fixes the payload's key order: trigger, then depth.
type parkPayload struct {
	Trigger string `json:"trigger"`
	Depth   int    `json:"depth"`
}

// firePayload is the payload of a fire row.
type firePayload struct {
	ScheduledAt string `json:"scheduledAt"`
}

// NewPark returns the engine row that records a delivery Decide parked
// with Park: actor engine, op park, type eddy.delivery, entityId the
// delivery id and payload {"trigger": name, "depth": N}. It carries no
// entity changes. Its provenance records the delivery's cause and depth,
// so the chain walks through it and any delivery it causes is past the
// cap (see Decide). Append it with the delivery, in the same write
// (changelog.WriteRequest.Engine). Never build one for ParkQuietly.
func NewPark(d Effect) changelog.EngineRow {
	depth := d.Depth()
	payload, _ := json.Marshal(parkPayload{Trigger: d.Trigger, Depth: depth}) // cannot fail
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
