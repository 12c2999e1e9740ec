package changelog

import (
	"encoding/json"
	"time"

	"github.com/eddy-run/eddy/store"
)

// ApplyEnv is what applying a mutation may look at: the seq the commit
// would get, the commit time, the schema and the current records.
type ApplyEnv struct {
	// Seq is the seq the commit gets if the mutation applies.
	Seq int64
	// Now is the commit timestamp (UTC, microseconds).
	Now time.Time
	// Schema returns the compiled definition of a type, or nil for an
	// unregistered type (which accepts any JSON object).
	Schema func(typ string) *TypeDef
	// Records holds the current record (live or tombstone) of every key
	// the mutation names; a key without a row is absent.
	Records map[store.EntityKey]store.Record
}

// Outcome is the result of applying one mutation. For an applied mutation
// Receipt.Status is applied, Changes holds one change (two for merge and
// split) and Records the rows to store; otherwise both are empty.
type Outcome struct {
	Receipt store.Receipt
	Op      string
	Primary store.EntityKey
	// Payload is the wire row payload of the commit (applied only).
	Payload json.RawMessage
	Changes []store.Change
	Records []store.Record
}

// Apply applies one mutation to the current records. It is pure: the same
// inputs give the same Outcome. It never returns an error: a mutation that
// cannot apply yields a rejected receipt with a reason code.
func Apply(m Mutation, env ApplyEnv) Outcome { panic("changelog.Apply: unimplemented") }

// ValidateMutation checks a mutation's shape (op, type name, ids, fields
// the op needs) before it reaches a transaction. Errors are bad_request.
func ValidateMutation(m *Mutation) error { panic("changelog.ValidateMutation: unimplemented") }
