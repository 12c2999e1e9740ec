package causality

import "fmt"

// DefaultBudget is a space's causal budget: the rows one root write may
// cause in all, over every link and branch of its chain. A delivery
// created once the root has caused that many is parked. A trigger may set
// a lower budget, never a higher one.
const DefaultBudget = 1000

// Limits name what parks a delivery: the depth caps and the causal
// budgets of the space and of the delivery's trigger (0: the space
// default, DefaultCap and DefaultBudget).
type Limits struct {
	SpaceCap      int
	TriggerCap    int
	SpaceBudget   int
	TriggerBudget int
}

// Spent is what a root write has caused so far: the delivery-authored
// rows of its chain, and whether a budget park row was written for it.
type Spent struct {
	Rows   int64
	Parked bool
}

// The limits a verdict names (Verdict.Limit, the park row's "limit").
const (
	LimitDepth  = "depth"
	LimitBudget = "budget"
)

// Budget returns the causal budget in force for a trigger's deliveries:
// the trigger's when it is set (> 0) and lower than the space's, else the
// space's (DefaultBudget when spaceBudget <= 0).
func Budget(spaceBudget, triggerBudget int) int {
	if spaceBudget <= 0 {
		spaceBudget = DefaultBudget
	}
	if triggerBudget > 0 && triggerBudget < spaceBudget {
		return triggerBudget
	}
	return spaceBudget
}

// Verdict is Decide's answer: the decision, the limit that parked the
// delivery (empty for Run), and the figures it weighed: the delivery's
// depth and the cap in force, the root, the rows it has caused and the
// budget in force.
type Verdict struct {
	Decision Decision
	Limit    string
	Depth    int
	Cap      int
	Root     int64
	Rows     int64
	Budget   int
}

// Reason says why the verdict parked a delivery (its lastError), or ""
// when it runs.
func (v Verdict) Reason() string {
	switch v.Limit {
	case LimitDepth:
		return fmt.Sprintf("depth %d is past the causality cap %d", v.Depth, v.Cap)
	case LimitBudget:
		return fmt.Sprintf("root %d caused %d rows, the causal budget is %d", v.Root, v.Rows, v.Budget)
	}
	return ""
}
