package changelog

import (
	"encoding/json"
	"maps"

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

	// prepared is set by prepare, in the submitting goroutine, once the
	// mutation is valid: the group's leader then neither validates it
	// again nor decodes or encodes its object.
	prepared *preparedObject
}

// preparedObject is a valid mutation's object (a put's properties or a
// patch's patch), decoded, and the canonical JSON its receipt proposes;
// both nil for other ops.
type preparedObject struct {
	obj      map[string]any // never mutated: the applier clones it
	proposed json.RawMessage
}

// prepare marks a mutation ValidateMutation accepted, decoding a put's
// properties or a patch's patch and encoding what its receipt proposes.
func (m *Mutation) prepare() {
	var raw json.RawMessage
	switch m.Op {
	case OpPut:
		raw = m.Properties
	case OpPatch:
		raw = m.Patch
	default:
		m.prepared = &preparedObject{}
		return
	}
	obj, err := decodeObject(raw)
	if err != nil {
		return // Apply validates and rejects it
	}
	m.prepared = &preparedObject{obj: obj, proposed: encodeCanonical(obj)}
}

// object returns the mutation's decoded object (a put's properties, a
// patch's patch), from prepare when it ran, as a map the caller may
// change.
func (m *Mutation) object(raw json.RawMessage) (map[string]any, error) {
	if m.prepared != nil && m.prepared.obj != nil {
		return maps.Clone(m.prepared.obj), nil
	}
	return decodeObject(raw)
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
