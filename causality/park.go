package causality

import (
	"encoding/json"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// TypeDelivery is the type of an engine park row; its entity id is the
// parked delivery's id.
const TypeDelivery = "eddy.delivery"

// ParkRow is the engine row that records a parked delivery: actor engine,
// op park, type eddy.delivery, entityId the delivery id and payload
// {"trigger": name, "depth": N}. It carries no entity changes. Its
// provenance records the delivery's cause and depth, so the chain walks
// through it and any delivery it causes is past the cap (see Decide).
type ParkRow struct {
	Actor      string
	Op         string
	Type       string
	EntityID   string
	Payload    json.RawMessage
	Provenance store.Provenance
}

// parkPayload fixes the payload's key order: trigger, then depth.
type parkPayload struct {
	Trigger string `json:"trigger"`
	Depth   int    `json:"depth"`
}

// NewPark returns the park row of a delivery that Decide parked with
// Park. Never build one for ParkQuietly.
func NewPark(d Delivery) ParkRow {
	depth := d.Depth()
	payload, _ := json.Marshal(parkPayload{Trigger: d.Trigger, Depth: depth}) // cannot fail
	return ParkRow{
		Actor:    ActorEngine,
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

// Commit returns the row as a commit to append at seq and ts (UTC,
// microseconds), with no changes and an applied receipt.
func (p ParkRow) Commit(seq int64, ts time.Time) store.Commit {
	return store.Commit{
		Row: store.Row{
			Seq: seq, TS: ts, Actor: p.Actor, Op: p.Op,
			EntityID: p.EntityID, Type: p.Type, Payload: p.Payload,
		},
		Changes:    []store.Change{},
		Receipt:    store.Receipt{Status: store.ReceiptApplied, Seq: seq, Accepted: []string{}, Rejected: []store.RejectedProperty{}},
		Provenance: p.Provenance,
	}
}
