package changelog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/eddy-run/eddy/internal/ijson"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Limits of a mutation batch and its names.
const (
	// MaxMutations bounds the mutations of one request.
	MaxMutations = 1000
	// MaxNameLen bounds type names, ids, rels and mutation ids.
	MaxNameLen = 128
)

// ValidTypeName reports whether s is a valid type name:
// [a-z][a-z0-9-]*(\.[a-z0-9-]+)*, at most 128 characters. It runs on
// every name of every write, so it scans bytes rather than run a regular
// expression (the test checks it against one).
func ValidTypeName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	dot := false // the byte before was a dot
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			if dot {
				return false
			}
			dot = true
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-':
			dot = false
		default:
			return false
		}
	}
	return !dot
}

// ValidID reports whether s is a valid entity id: [A-Za-z0-9._:-]{1,128},
// except "." and "..", which a URL path cannot carry as a segment.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !idByte[s[i]] {
			return false
		}
	}
	return true
}

// idByte marks the bytes an entity id may hold.
var idByte = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") {
		t[c] = true
	}
	return t
}()

// EngineType reports whether typ is in the engine's namespace "eddy."
// (eddy.trigger, eddy.delivery and any later one): rows of these types
// are written by the engine alone, never by a client or a function.
func EngineType(typ string) bool { return strings.HasPrefix(typ, "eddy.") }

// clientOps are the ops a client may send, with the optional fields each
// takes beyond mutationId, op, type and entityId.
var clientOps = map[string][]string{
	OpPut:    {"properties", "ifVersion", "baseVersion"},
	OpPatch:  {"patch", "ifVersion", "baseVersion"},
	OpDelete: {"ifVersion"},
	OpLink:   {"rel", "target", "ifVersion"},
	OpUnlink: {"rel", "target", "ifVersion"},
	OpMerge:  {"from", "ifVersion", "baseVersion"},
	OpSplit:  {"into", "properties", "ifVersion", "baseVersion"},
}

// ValidateMutation checks a mutation's shape (op, type name, ids, fields
// the op needs) before it reaches a transaction. Errors are bad_request
// with details.field naming the offending field.
func ValidateMutation(m *Mutation) error {
	if err := validateHeader(m); err != nil {
		return err
	}
	if err := validateFields(m); err != nil {
		return err
	}
	switch m.Op {
	case OpPut:
		return validateObject("properties", m.Properties)
	case OpPatch:
		return validateObject("patch", m.Patch)
	case OpLink, OpUnlink:
		return validateLink(m)
	case OpMerge:
		return validateMerge(m)
	case OpSplit:
		return validateSplit(m)
	}
	return nil
}

func validateHeader(m *Mutation) error {
	if len(m.MutationID) > MaxNameLen {
		return fieldError("mutationId", "at most %d characters", MaxNameLen)
	}
	switch {
	case m.Op == "":
		return fieldError("op", "required")
	case m.Op == OpFire || m.Op == OpPark:
		return fieldError("op", "%q is an engine op and cannot be requested", m.Op)
	case clientOps[m.Op] == nil:
		return fieldError("op", "unknown op %q", m.Op)
	}
	if !ValidTypeName(m.Type) {
		return fieldError("type", "invalid type name %q", m.Type)
	}
	if EngineType(m.Type) {
		return fieldError("type", "%q is the engine's own type and cannot be written", m.Type)
	}
	if !ValidID(m.EntityID) {
		return fieldError("entityId", "invalid entity id %q", m.EntityID)
	}
	if m.IfVersion != nil && *m.IfVersion < 0 {
		return fieldError("ifVersion", "must not be negative")
	}
	if m.BaseVersion != nil && *m.BaseVersion < 0 {
		return fieldError("baseVersion", "must not be negative")
	}
	return nil
}

// validateFields rejects fields that do not belong to the op.
func validateFields(m *Mutation) error {
	present := map[string]bool{
		"properties":  hasJSON(m.Properties),
		"patch":       hasJSON(m.Patch),
		"rel":         m.Rel != "",
		"target":      m.Target != nil,
		"from":        m.From != nil,
		"into":        m.Into != nil,
		"ifVersion":   m.IfVersion != nil,
		"baseVersion": m.BaseVersion != nil,
	}
	allowed := clientOps[m.Op]
	for _, f := range []string{"properties", "patch", "rel", "target", "from", "into", "ifVersion", "baseVersion"} {
		if present[f] && !slices.Contains(allowed, f) {
			return fieldError(f, "not allowed with op %q", m.Op)
		}
	}
	return nil
}

// hasJSON reports whether a raw field was given (null counts as absent).
func hasJSON(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && string(t) != "null"
}

// validateObject checks that raw is one JSON object the strict gate
// accepts. ijson.Check refuses trailing data and accepts only what
// encoding/json decodes, so what is left to check is the value's kind,
// which its first byte tells: the object need not be decoded.
func validateObject(field string, raw json.RawMessage) error {
	if !hasJSON(raw) {
		return fieldError(field, "required (a JSON object)")
	}
	if err := ijson.Check(raw); err != nil {
		return ijsonProblem(field, err).With("field", field)
	}
	if kind := kindOfText(raw); kind != "object" {
		return fieldError(field, "not a JSON object: %s", kind)
	}
	return nil
}

func validateKey(field string, k *store.EntityKey) error {
	if k == nil {
		return fieldError(field, "required")
	}
	if !ValidTypeName(k.Type) {
		return fieldError(field+".type", "invalid type name %q", k.Type)
	}
	if !ValidID(k.ID) {
		return fieldError(field+".id", "invalid entity id %q", k.ID)
	}
	return nil
}

func validateLink(m *Mutation) error {
	if m.Rel == "" {
		return fieldError("rel", "required")
	}
	if !ValidID(m.Rel) {
		return fieldError("rel", "invalid rel %q (want [A-Za-z0-9._:-]{1,128})", m.Rel)
	}
	return validateKey("target", m.Target)
}

func validateMerge(m *Mutation) error {
	if err := validateKey("from", m.From); err != nil {
		return err
	}
	if *m.From == m.Key() {
		return fieldError("from", "an entity cannot be merged into itself")
	}
	return nil
}

func validateSplit(m *Mutation) error {
	if m.Into == nil {
		return fieldError("into", "required")
	}
	if m.Into.Type != "" && !ValidTypeName(m.Into.Type) {
		return fieldError("into.type", "invalid type name %q", m.Into.Type)
	}
	if EngineType(m.Into.Type) {
		return fieldError("into.type", "%q is the engine's own type and cannot be written", m.Into.Type)
	}
	if !ValidID(m.Into.ID) {
		return fieldError("into.id", "invalid entity id %q", m.Into.ID)
	}
	_, err := splitNames(m.Properties)
	return err
}

// splitNames decodes a split's property list: a non-empty array of
// distinct non-empty strings.
func splitNames(raw json.RawMessage) ([]string, error) {
	if !hasJSON(raw) {
		return nil, fieldError("properties", "required (an array of property names)")
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		return nil, fieldError("properties", "must be an array of property names")
	}
	if len(names) == 0 {
		return nil, fieldError("properties", "must name at least one property")
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" {
			return nil, fieldError("properties", "property names must not be empty")
		}
		if seen[n] {
			return nil, fieldError("properties", "property %q is named twice", n)
		}
		seen[n] = true
	}
	return names, nil
}

// mutationsBody is the body of POST .../mutations.
type mutationsBody struct {
	Atomic    bool       `json:"atomic"`
	Mutations []Mutation `json:"mutations"`
}

// DecodeMutations strictly decodes a mutations request body
// {"atomic": bool, "mutations": [...]}: unknown fields, trailing data, an
// empty list and more than MaxMutations mutations are bad_request, and
// every mutation must pass ValidateMutation (the error's details carry its
// index).
func DecodeMutations(r io.Reader) (mutations []Mutation, atomic bool, err error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, false, fmt.Errorf("read mutations body: %w", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, false, problem.New(problem.BadRequest, "empty body: want {\"mutations\": [...]}")
	}
	if err := ijson.Check(raw); err != nil {
		return nil, false, ijsonProblem("mutations body", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var body mutationsBody
	if err := dec.Decode(&body); err != nil {
		return nil, false, jsonProblem("mutations body", err)
	}
	if err := checkBatch(body.Mutations); err != nil {
		return nil, false, err
	}
	return body.Mutations, body.Atomic, nil
}

// ijsonProblem renders a refusal of the strict JSON gate as bad_request
// with details.offset.
func ijsonProblem(what string, err error) *problem.Error {
	var e *ijson.Error
	if !errors.As(err, &e) {
		return problem.New(problem.BadRequest, "%s: %v", what, err)
	}
	return problem.New(problem.BadRequest, "%s: %s", what, e.Error()).With("offset", e.Offset)
}

func checkBatch(ms []Mutation) error {
	switch {
	case len(ms) == 0:
		return fieldError("mutations", "at least one mutation is required")
	case len(ms) > MaxMutations:
		return fieldError("mutations", "at most %d mutations per request", MaxMutations)
	}
	for i := range ms {
		if err := ValidateMutation(&ms[i]); err != nil {
			var pe *problem.Error
			if errors.As(err, &pe) {
				pe = pe.With("index", i)
				pe.Message = "mutations[" + strconv.Itoa(i) + "]: " + pe.Message
				return pe
			}
			return err
		}
	}
	return nil
}
