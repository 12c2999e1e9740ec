package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/store"
)

// Policy is what one space's type definitions say about reading: the
// compiled access rule of each type that declares one. A nil *Policy has
// no rules. A Policy never changes; a type definition change makes a new
// one.
type Policy struct {
	space   string
	version int64 // the space's schema version it was built from
	rules   map[string]*predicate.Access
}

// NewPolicy compiles the access rules of a space's type definitions.
// Definitions were validated when saved, so an error here means stored
// data is damaged.
func NewPolicy(space string, version int64, defs []store.TypeDef) (*Policy, error) {
	return newPolicy(space, version, defs, nil)
}

// newPolicy is NewPolicy reusing the compiled rules of prev whose source
// is unchanged (a rule is compiled once per type definition version).
func newPolicy(space string, version int64, defs []store.TypeDef, prev *Policy) (*Policy, error) {
	p := &Policy{space: space, version: version, rules: map[string]*predicate.Access{}}
	for _, td := range defs {
		var doc struct {
			Access *changelog.AccessDef `json:"access"`
		}
		if err := json.Unmarshal(td.Def, &doc); err != nil {
			return nil, fmt.Errorf("access rule of type %s: %w", td.Type, err)
		}
		if doc.Access == nil {
			continue
		}
		if old := prev.Rule(td.Type); old != nil && old.String() == doc.Access.Read {
			p.rules[td.Type] = old
			continue
		}
		rule, err := predicate.CompileAccess("access.read", doc.Access.Read)
		if err != nil {
			return nil, fmt.Errorf("access rule of type %s: %w", td.Type, err)
		}
		p.rules[td.Type] = rule
	}
	return p, nil
}

// Rule returns the access rule of a type, or nil when it declares none.
func (p *Policy) Rule(typ string) *predicate.Access {
	if p == nil {
		return nil
	}
	return p.rules[typ]
}

// HasRules reports whether any type of the space declares an access rule.
func (p *Policy) HasRules() bool { return p != nil && len(p.rules) > 0 }

// Version is the schema version of the space the policy was built from
// (0 for a nil Policy).
func (p *Policy) Version() int64 {
	if p == nil {
		return 0
	}
	return p.version
}

// Policies keeps each space's Policy for its current schema version. Every
// type definition change bumps the version, so a Policy is rebuilt (and
// only rules whose source changed are compiled again) the first time it is
// asked for after a change. It is safe for concurrent use.
type Policies struct {
	st     store.Store
	spaces sync.Map // space -> *Policy, the newest built; read without locks
}

// NewPolicies returns a cache over st.
func NewPolicies(st store.Store) *Policies { return &Policies{st: st} }

// For returns the policy of a space as its type definitions stand now.
// An unknown space is store.ErrNotFound (wrapped).
func (ps *Policies) For(ctx context.Context, space string) (*Policy, error) {
	p, _, err := ps.forSpace(ctx, space)
	return p, err
}

// forSpace is For, also returning the space as it read it.
func (ps *Policies) forSpace(ctx context.Context, space string) (*Policy, store.Space, error) {
	sp, err := ps.st.SpaceGet(ctx, space)
	if err != nil {
		return nil, store.Space{}, fmt.Errorf("access policy of %s: %w", space, err)
	}
	prev := ps.cached(space)
	if prev != nil && prev.version == sp.SchemaVersion {
		return prev, sp, nil
	}
	defs, err := ps.st.TypeDefList(ctx, space)
	if err != nil {
		return nil, store.Space{}, fmt.Errorf("access policy of %s: %w", space, err)
	}
	// The version was read before the definitions, so the policy can only
	// be labelled older than its content, never newer: a stale one is
	// rebuilt on the next call.
	p, err := newPolicy(space, sp.SchemaVersion, defs, prev)
	if err != nil {
		return nil, store.Space{}, err
	}
	ps.store(p)
	return p, sp, nil
}

// Latest returns the newest policy of a space this cache has built,
// without reading the store (nil if none yet). Long-lived streams use it
// to pick up rule changes another request has loaded.
func (ps *Policies) Latest(space string) *Policy { return ps.cached(space) }

// Reader returns the Reader of principal p in space, under the space's
// current policy. The space it read to find the policy comes with it
// (Reader.Space), so a request reads its space once.
func (ps *Policies) Reader(ctx context.Context, p *Principal, space string) (*Reader, error) {
	pol, sp, err := ps.forSpace(ctx, space)
	if err != nil {
		return nil, err
	}
	r := NewReader(p, pol)
	r.space = &sp
	return r, nil
}

func (ps *Policies) cached(space string) *Policy {
	if p, ok := ps.spaces.Load(space); ok {
		return p.(*Policy)
	}
	return nil
}

// store keeps p unless a newer policy of its space is kept already.
func (ps *Policies) store(p *Policy) {
	for {
		old, loaded := ps.spaces.LoadOrStore(p.space, p)
		if !loaded || old.(*Policy).version >= p.version || ps.spaces.CompareAndSwap(p.space, old, p) {
			return
		}
	}
}
