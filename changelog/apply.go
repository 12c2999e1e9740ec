package changelog

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Limits of one entity. Tests may shrink them.
var (
	// MaxEntityBytes bounds an entity's canonical properties, in bytes;
	// a mutation exceeding it is rejected with payload_too_large.
	MaxEntityBytes = 256 << 10
	// MaxProperties bounds an entity's top-level properties; a mutation
	// exceeding it is rejected with unprocessable.
	MaxProperties = 1000
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

// rejection is why a mutation cannot apply: a problem code, a message and
// the proposed properties it names.
type rejection struct {
	code  string
	msg   string
	props []store.RejectedProperty
}

func reject(code, format string, args ...any) *rejection {
	return &rejection{code: code, msg: fmt.Sprintf(format, args...)}
}

// result is what an op produces before Apply assembles the Outcome.
type result struct {
	noop     bool
	version  int64 // the current version, for a no-op
	accepted []string
	rejected []store.RejectedProperty
	changes  []store.Change
	records  []store.Record
	payload  payload
}

// applier carries one Apply call.
type applier struct {
	m   *Mutation
	env ApplyEnv
}

// Apply applies one mutation to the current records. It is pure: the same
// inputs give the same Outcome. It never returns an error: a mutation that
// cannot apply yields a rejected receipt with a reason code.
func Apply(m Mutation, env ApplyEnv) Outcome {
	out := Outcome{Op: m.Op, Primary: m.Key()}
	out.Receipt = store.Receipt{
		MutationID: m.MutationID,
		Accepted:   []string{},
		Rejected:   []store.RejectedProperty{},
		Proposed:   proposed(&m),
	}
	if m.prepared == nil { // Write validated and prepared it already
		if err := ValidateMutation(&m); err != nil {
			return rejected(out, &rejection{code: problem.BadRequest, msg: errMessage(err)})
		}
	}
	a := &applier{m: &m, env: env}
	res, rej := a.run()
	if rej != nil {
		return rejected(out, rej)
	}
	out.Receipt.Accepted = nonNil(res.accepted)
	out.Receipt.Rejected = nonNilRejected(res.rejected)
	if res.noop {
		out.Receipt.Status = store.ReceiptNoop
		out.Receipt.Version = res.version
		return out
	}
	out.Receipt.Status = store.ReceiptApplied
	out.Receipt.Seq = env.Seq
	out.Receipt.Version = env.Seq
	out.Payload = res.payload.encode()
	for i := range res.changes {
		res.changes[i].Ordinal = i
	}
	out.Changes = res.changes
	out.Records = res.records
	return out
}

func rejected(out Outcome, rej *rejection) Outcome {
	out.Receipt.Status = store.ReceiptRejected
	out.Receipt.Reason = &store.Reason{Code: rej.code, Message: rej.msg}
	out.Receipt.Rejected = nonNilRejected(rej.props)
	return out
}

func errMessage(err error) string {
	var pe *problem.Error
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilRejected(s []store.RejectedProperty) []store.RejectedProperty {
	if s == nil {
		return []store.RejectedProperty{}
	}
	return s
}

func (a *applier) run() (*result, *rejection) {
	switch a.m.Op {
	case OpPut, OpPatch:
		return a.applyProperties()
	case OpDelete:
		return a.applyDelete()
	case OpLink, OpUnlink:
		return a.applyLink()
	case OpMerge:
		return a.applyMerge()
	case OpSplit:
		return a.applySplit()
	}
	return nil, reject(problem.BadRequest, "unknown op %q", a.m.Op)
}

// schema returns the compiled definition of a type (nil if unregistered).
func (a *applier) schema(typ string) *TypeDef {
	if a.env.Schema == nil {
		return nil
	}
	return a.env.Schema(typ)
}

// checkIfVersion applies the ifVersion precondition to the primary
// entity: its current version (0 when missing) must equal it.
func (a *applier) checkIfVersion(cur *entity) *rejection {
	if a.m.IfVersion == nil {
		return nil
	}
	v := cur.version()
	if *a.m.IfVersion == v {
		return nil
	}
	code := problem.Conflict
	if a.m.IfMatch {
		code = problem.PreconditionFailed
	}
	return reject(code, "%s: version is %d, not %d", keyString(cur.key), v, *a.m.IfVersion)
}

// judgeBase splits proposed property names by the baseVersion rule: a
// name whose conflict group changed after baseVersion is rejected.
func (a *applier) judgeBase(cur *entity, names []string) (accepted []string, rejected []store.RejectedProperty) {
	accepted = []string{}
	if a.m.BaseVersion == nil || !cur.live {
		return append(accepted, names...), nil
	}
	def := a.schema(cur.key.Type)
	for _, n := range names {
		if cur.rec.GroupVersions[def.GroupOf(n)] > *a.m.BaseVersion {
			rejected = append(rejected, store.RejectedProperty{Property: n, Reason: problem.Conflict})
			continue
		}
		accepted = append(accepted, n)
	}
	return accepted, rejected
}

// baseConflict is the rejection of a mutation none of whose proposed
// properties survived the baseVersion rule.
func (a *applier) baseConflict(key store.EntityKey, rejected []store.RejectedProperty) *rejection {
	return &rejection{
		code:  problem.Conflict,
		msg:   fmt.Sprintf("%s: every proposed property changed after version %d", keyString(key), *a.m.BaseVersion),
		props: rejected,
	}
}

func keyString(k store.EntityKey) string { return k.Type + "/" + k.ID }

// proposed returns the receipt's record of what the mutation proposed.
func proposed(m *Mutation) json.RawMessage {
	if m.prepared != nil && m.prepared.obj != nil {
		return m.prepared.proposed
	}
	v := map[string]any{}
	switch m.Op {
	case OpPut:
		return canonicalOrRaw(m.Properties)
	case OpPatch:
		return canonicalOrRaw(m.Patch)
	case OpLink, OpUnlink:
		v["rel"] = m.Rel
		v["target"] = m.Target
	case OpMerge:
		v["from"] = m.From
	case OpSplit:
		v["into"] = m.Into
		v["properties"] = canonicalOrRaw(m.Properties)
	default:
		return nil
	}
	return marshalCanonical(v)
}

func canonicalOrRaw(raw json.RawMessage) json.RawMessage {
	if !hasJSON(raw) {
		return nil
	}
	if c, err := Canonical(raw); err == nil {
		return c
	}
	return nil
}

// marshalCanonical encodes a Go value with encoding/json, then puts it in
// canonical form (sorted keys, no HTML escaping).
func marshalCanonical(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	c, err := Canonical(raw)
	if err != nil {
		return nil
	}
	return c
}

// sortedCopy returns a sorted copy of names.
func sortedCopy(names []string) []string {
	s := slices.Clone(names)
	slices.Sort(s)
	return s
}
