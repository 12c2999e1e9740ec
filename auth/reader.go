package auth

import (
	"slices"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// Reader is a principal reading one space under that space's Policy. It
// is THE place that decides what may be read: every read path (lists,
// get, changes, history, watch, the raw log, views, the journal,
// definitions and deliveries) asks one of its methods, and no other code
// decides readability. Its methods are pure: they look at the principal,
// the policy and what they are handed, nothing else.
//
// The rules, in order:
//   - an admin reads everything;
//   - a type outside the principal's types allow-list is never readable;
//   - a record of a type whose definition declares an access rule is
//     readable only when the rule holds for that snapshot and the
//     principal's user ("" for a token without one);
//   - a change is judged on its snapshot: After, or Before for a delete;
//   - a commit (and so its wire row) is readable only when every change
//     it carries is: a merge or split row names a second entity, so it
//     is hidden unless both are readable;
//   - an engine park row (it names a delivery and its trigger) is hidden
//     in a space with access rules; other engine rows (no changes) are
//     judged on their type alone.
type Reader struct {
	p      *Principal
	policy *Policy
	space  *store.Space // as read to find policy; nil when not read
}

// NewReader returns the Reader of p under policy (nil: no access rules).
func NewReader(p *Principal, policy *Policy) *Reader { return &Reader{p: p, policy: policy} }

// Space returns the space as it was read to find the reader's policy
// (Policies.Reader), at the start of the request: its head and horizon
// judge the request's cursors without reading the space again. ok is
// false for a reader made without reading it (NewReader).
func (r *Reader) Space() (sp store.Space, ok bool) {
	if r.space == nil {
		return store.Space{}, false
	}
	return *r.space, true
}

// Principal returns the principal the reader judges for.
func (r *Reader) Principal() *Principal { return r.p }

// Policy returns the policy the reader judges under.
func (r *Reader) Policy() *Policy { return r.policy }

// User is the user access rules are judged for.
func (r *Reader) User() string { return r.p.User }

// CanReadType reports whether the principal may read some entities of
// typ: the type allow-list alone. A type with an access rule may still
// hide most of its records (CanReadRecord decides each one).
func (r *Reader) CanReadType(typ string) bool { return r.p.IsAdmin() || r.p.canReadType(typ) }

// CanReadTypes reports whether CanReadType holds for every type of types
// (views, trigger and function definitions).
func (r *Reader) CanReadTypes(types []string) bool {
	for _, t := range types {
		if !r.CanReadType(t) {
			return false
		}
	}
	return true
}

// CanReadEveryType reports whether the principal has no type allow-list
// (or is an admin): what a definition touching every type (a trigger
// with no source types) needs.
func (r *Reader) CanReadEveryType() bool { return r.p.IsAdmin() || len(r.p.Types) == 0 }

// Unlimited reports whether the principal reads every record of every
// type in types: each is allowed and none is limited by an access rule.
// Deliveries (entity ids and errors of whatever their trigger matched)
// need it.
func (r *Reader) Unlimited(types []string) bool {
	if r.p.IsAdmin() {
		return true
	}
	for _, t := range types {
		if !r.p.canReadType(t) || r.policy.Rule(t) != nil {
			return false
		}
	}
	return true
}

// UnlimitedEverywhere reports whether the principal reads everything in
// the space: an admin, or no allow-list and no access rule on any type.
func (r *Reader) UnlimitedEverywhere() bool {
	return r.p.IsAdmin() || (len(r.p.Types) == 0 && !r.policy.HasRules())
}

// CanReadRecord reports whether the principal may read one record
// snapshot (live or tombstone).
func (r *Reader) CanReadRecord(rec *store.Record) bool {
	if r.p.IsAdmin() {
		return true
	}
	if !r.p.canReadType(rec.Type) {
		return false
	}
	rule := r.policy.Rule(rec.Type)
	return rule == nil || rule.AllowsRecord(rec, r.p.User)
}

// CanReadChange reports whether the principal may read a change, judged
// on its snapshot: After, or Before for a delete.
func (r *Reader) CanReadChange(ch *store.Change) bool {
	switch {
	case ch.After != nil:
		return r.CanReadRecord(ch.After)
	case ch.Before != nil:
		return r.CanReadRecord(ch.Before)
	}
	return r.CanReadRecord(&store.Record{Type: ch.Type, ID: ch.ID})
}

// CanReadCommit reports whether the principal may read a whole commit
// and its wire row: the row's type is allowed and every change is
// readable. An engine commit without changes is judged on its row's type.
func (r *Reader) CanReadCommit(c *store.Commit) bool {
	if r.p.IsAdmin() {
		return true
	}
	if !r.p.canReadType(c.Type) || r.hiddenPark(&c.Row) {
		return false
	}
	for i := range c.Changes {
		if !r.CanReadChange(&c.Changes[i]) {
			return false
		}
	}
	return true
}

// RowVerdict is what JudgeRow can tell from a wire row alone.
type RowVerdict int

// The verdicts of JudgeRow.
const (
	// RowHidden: the row is not readable.
	RowHidden RowVerdict = iota
	// RowReadable: the row is readable.
	RowReadable
	// RowNeedsCommit: only the row's commit can tell; ask CanReadCommit.
	RowNeedsCommit
)

// String names the verdict.
func (v RowVerdict) String() string {
	switch v {
	case RowHidden:
		return "hidden"
	case RowReadable:
		return "readable"
	case RowNeedsCommit:
		return "needs-commit"
	}
	return "unknown"
}

// JudgeRow tells from a wire row whether it is readable, or that its
// commit is needed to tell (the row's type has an access rule, or a merge
// or split names a second entity). For a RowNeedsCommit row, the answer
// is CanReadCommit of its commit, never a guess.
func (r *Reader) JudgeRow(row *store.Row) RowVerdict {
	switch {
	case r.p.IsAdmin():
		return RowReadable
	case !r.p.canReadType(row.Type):
		return RowHidden
	case r.hiddenPark(row):
		return RowHidden
	case r.policy.Rule(row.Type) != nil:
		return RowNeedsCommit
	case namesSecondEntity(row.Op) && !r.UnlimitedEverywhere():
		return RowNeedsCommit
	}
	return RowReadable
}

// hiddenPark reports whether row is a park row in a space with access
// rules: it names a delivery and its trigger, which may touch records the
// rules hide, so only an admin sees it there.
func (r *Reader) hiddenPark(row *store.Row) bool {
	return row.Op == changelog.OpPark && r.policy.HasRules()
}

// namesSecondEntity reports whether rows of op name an entity besides
// their own (merge: the entity folded in; split: the entity made).
func namesSecondEntity(op string) bool {
	return slices.Contains([]string{changelog.OpMerge, changelog.OpSplit}, op)
}

// Scope is the set of entity types a definition (a trigger, a function)
// touches: the types it reads and writes. Every marks a definition that
// touches every type (a change trigger with no source types).
type Scope struct {
	Every bool
	Types []string
}

// CanSeeDefinition reports whether the principal may see a definition
// touching scope: an admin, or every type it touches is in the
// principal's allow-list (access rules aside: a definition shows code,
// not records).
func (r *Reader) CanSeeDefinition(s Scope) bool {
	if s.Every {
		return r.CanReadEveryType()
	}
	return r.CanReadTypes(s.Types)
}

// CanSeeDeliveries reports whether the principal may see the deliveries
// of a trigger touching scope (and stances of it): they name entities and
// carry errors about any record the trigger matched, so only an admin, or
// a principal that reads every record of every type touched (Unlimited),
// may.
func (r *Reader) CanSeeDeliveries(s Scope) bool {
	if s.Every {
		return r.UnlimitedEverywhere()
	}
	return r.Unlimited(s.Types)
}
