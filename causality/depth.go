package causality

import (
	"encoding/json"
	"fmt"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// DefaultCap is a space's depth cap: a delivery at a greater depth is
// parked. A trigger may set a lower cap, never a higher one.
const DefaultCap = 16

// MaxDepth is the greatest depth a row can have unless an operator
// released a parked delivery: a park row records the depth of the
// delivery it parked, one past the cap. A released delivery runs at that
// depth, and each further release lets a chain go one deeper.
const MaxDepth = DefaultCap + 1

// WalkLimit bounds how many links a walk follows: MaxDepth and room for
// the releases operators may have made.
const WalkLimit = 256

// Provenance via values (store.Provenance.Via).
const (
	ViaAPI     = "api"
	ViaTrigger = "trigger"
	ViaCron    = "cron"
	ViaEngine  = "engine"
)

// ActorEngine authors the engine's housekeeping rows (fire, park).
const ActorEngine = "engine"

// actorPrefix starts the actor of every delivery-authored write.
const actorPrefix = "trigger:"

// Actor returns the actor of a trigger's delivery-authored writes:
// "trigger:<name>".
func Actor(trigger string) string { return actorPrefix + trigger }

// Cause is the row a delivery reacts to: its seq, its depth, its op
// (which tells a park row or a cron fire row from an entity row) and the
// seq of its chain's root (see RootOf; 0 means Seq itself).
type Cause struct {
	Seq   int64
	Depth int
	Op    string
	Root  int64
}

// CauseOf returns the cause a commit makes when a trigger matches it.
func CauseOf(c *store.Commit) Cause {
	return Cause{Seq: c.Seq, Depth: c.Provenance.Depth, Op: c.Op, Root: RootOf(c)}
}

// RootOf returns the seq of the root write of c's chain: the recorded
// provenance root; c itself when it has no cause (an API write, a fire
// row); and for a row written before roots were recorded, the nearest
// ancestor it names (its causedBy), so a chain under way at an upgrade
// gets a fixed root one link later and its budget still holds.
func RootOf(c *store.Commit) int64 {
	switch p := &c.Provenance; {
	case p.Root > 0:
		return p.Root
	case p.CausedBy == 0:
		return c.Seq
	default:
		return p.CausedBy
	}
}

// RootSeq returns the seq of the cause's root: Root, or Seq when the
// cause is its own root.
func (c Cause) RootSeq() int64 {
	if c.Root > 0 {
		return c.Root
	}
	return c.Seq
}

// Next returns the depth of a delivery caused by c, which is also the
// depth of every row that delivery authors.
func Next(c Cause) int { return c.Depth + 1 }

// Cap returns the cap in force for a trigger's deliveries: the trigger's
// cap when it is set (> 0) and lower than the space's, else the space's
// (DefaultCap when spaceCap <= 0).
func Cap(spaceCap, triggerCap int) int {
	if spaceCap <= 0 {
		spaceCap = DefaultCap
	}
	if triggerCap > 0 && triggerCap < spaceCap {
		return triggerCap
	}
	return spaceCap
}

// Exceeds reports whether a delivery at depth is past the cap in force
// (see Cap) and must be parked instead of run.
func Exceeds(depth, spaceCap, triggerCap int) bool {
	return depth > Cap(spaceCap, triggerCap)
}

// Decision is what the executor does with a delivery it is about to
// create.
type Decision int

// Decisions.
const (
	// Run creates the delivery to run at depth Next(cause).
	Run Decision = iota
	// Park creates the delivery parked and appends an engine park row
	// (NewPark) in the same transaction.
	Park
	// ParkQuietly creates the delivery parked and appends nothing: its
	// cause is itself a park row, and a park never causes another park
	// row.
	ParkQuietly
)

var decisionNames = [...]string{Run: "run", Park: "park", ParkQuietly: "park_quietly"}

// String returns the decision's name.
func (d Decision) String() string {
	if d < 0 || int(d) >= len(decisionNames) {
		return fmt.Sprintf("Decision(%d)", int(d))
	}
	return decisionNames[d]
}

// MarshalJSON encodes the decision as its name.
func (d Decision) MarshalJSON() ([]byte, error) {
	if d < 0 || int(d) >= len(decisionNames) {
		return nil, fmt.Errorf("marshal decision: unknown decision %d", int(d))
	}
	return json.Marshal(d.String())
}

// UnmarshalJSON decodes a decision from its name.
func (d *Decision) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("decode decision: %w", err)
	}
	for i, n := range decisionNames {
		if n == s {
			*d = Decision(i)
			return nil
		}
	}
	return fmt.Errorf("decode decision: unknown decision %q", s)
}

// Decide returns what to do with a delivery caused by c under the
// limits, given what c's root has caused so far (spent); the verdict
// names the limit that parked it. The depth cap comes first: a cause
// that is itself past the cap (a park row, or a row written by a
// released delivery) parks quietly, its chain already has its park row.
// Then the causal budget: once the root has caused Budget rows, the
// first delivery parked by it writes the park row and every later one
// parks quietly, as does any delivery a park row causes.
func Decide(c Cause, l Limits, spent Spent) Verdict {
	v := Verdict{Depth: Next(c), Cap: Cap(l.SpaceCap, l.TriggerCap), Root: c.RootSeq(),
		Rows: spent.Rows, Budget: Budget(l.SpaceBudget, l.TriggerBudget)}
	switch {
	case v.Depth > v.Cap:
		v.Limit = LimitDepth
		v.Decision = Park
		if c.Op == changelog.OpPark || c.Depth > v.Cap {
			v.Decision = ParkQuietly
		}
	case spent.Rows >= int64(v.Budget):
		v.Limit = LimitBudget
		v.Decision = Park
		if c.Op == changelog.OpPark || spent.Parked {
			v.Decision = ParkQuietly
		}
	}
	return v
}

// Effect is one delivery as causality sees it: its trigger, its id and
// the row that caused it.
type Effect struct {
	Trigger string
	ID      string
	Cause   Cause
}

// Depth returns the delivery's depth: Next(d.Cause).
func (d Effect) Depth() int { return Next(d.Cause) }

// Via returns how the delivery's writes came: ViaCron when a cron fire
// row caused it, else ViaTrigger.
func (d Effect) Via() string {
	if d.Cause.Op == changelog.OpFire {
		return ViaCron
	}
	return ViaTrigger
}

// Provenance returns the provenance template of the rows the delivery
// authors (changelog.WriteRequest.Provenance): actor trigger:<name>,
// causedBy the cause's seq, the root of its chain and the delivery's
// depth.
func (d Effect) Provenance(requestID, traceparent string) store.Provenance {
	return store.Provenance{
		Actor:       Actor(d.Trigger),
		Via:         d.Via(),
		RequestID:   requestID,
		Trigger:     d.Trigger,
		Delivery:    d.ID,
		CausedBy:    d.Cause.Seq,
		Root:        d.Cause.RootSeq(),
		Depth:       d.Depth(),
		Traceparent: traceparent,
	}
}
