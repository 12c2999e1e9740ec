package changelog

import (
	"encoding/json"

	"github.com/eddy-run/eddy/store"
)

// Mutation ops.
const (
	OpPut    = "put"
	OpPatch  = "patch"
	OpDelete = "delete"
	OpLink   = "link"
	OpUnlink = "unlink"
	OpMerge  = "merge"
	OpSplit  = "split"
	// OpFire and OpPark are the engine's housekeeping ops; they carry no
	// entity changes and are never accepted from clients.
	OpFire = "fire"
	OpPark = "park"
)

// Mutation is one requested change to one entity (two for merge and split).
// Properties is an object for put and an array of property names for split.
type Mutation struct {
	MutationID  string           `json:"mutationId,omitempty"`
	Op          string           `json:"op"`
	Type        string           `json:"type"`
	EntityID    string           `json:"entityId"`
	Properties  json.RawMessage  `json:"properties,omitempty"`
	Patch       json.RawMessage  `json:"patch,omitempty"`
	Rel         string           `json:"rel,omitempty"`
	Target      *store.EntityKey `json:"target,omitempty"`
	From        *store.EntityKey `json:"from,omitempty"`
	Into        *SplitInto       `json:"into,omitempty"`
	IfVersion   *int64           `json:"ifVersion,omitempty"`
	BaseVersion *int64           `json:"baseVersion,omitempty"`
	// IfMatch marks IfVersion as coming from an HTTP If-Match header, so a
	// mismatch is precondition_failed rather than conflict.
	IfMatch bool `json:"-"`
}

// SplitInto names the entity a split creates; Type defaults to the source
// entity's type.
type SplitInto struct {
	Type string `json:"type,omitempty"`
	ID   string `json:"id"`
}

// Key returns the mutation's primary entity key.
func (m *Mutation) Key() store.EntityKey { return store.EntityKey{Type: m.Type, ID: m.EntityID} }

// Keys returns every entity key the mutation reads: the primary one and,
// for merge and split, the second.
func (m *Mutation) Keys() []store.EntityKey {
	keys := []store.EntityKey{m.Key()}
	switch {
	case m.Op == OpMerge && m.From != nil:
		keys = append(keys, *m.From)
	case m.Op == OpSplit && m.Into != nil:
		keys = append(keys, m.Into.Key(m.Type))
	}
	return keys
}

// Key returns the key of the entity a split creates.
func (s *SplitInto) Key(sourceType string) store.EntityKey {
	t := s.Type
	if t == "" {
		t = sourceType
	}
	return store.EntityKey{Type: t, ID: s.ID}
}
