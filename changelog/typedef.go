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
	"time"

	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/problem"
)

// Property kinds a type definition may declare.
const (
	KindString    = "string"
	KindNumber    = "number"
	KindInteger   = "integer"
	KindBoolean   = "boolean"
	KindObject    = "object"
	KindArray     = "array"
	KindTimestamp = "timestamp" // an RFC 3339 string
	KindAny       = "any"
)

var propertyKinds = []string{KindString, KindNumber, KindInteger, KindBoolean, KindObject, KindArray, KindTimestamp, KindAny}

// TypeDef is a compiled type definition: declared properties with kinds,
// strict mode, state fields with allowed transitions, and conflict groups.
//
// As JSON:
//
//	{"properties": {"title": {"kind": "string", "required": true}},
//	 "strict": true,
//	 "states": {"status": {"initial": "open",
//	   "transitions": {"open": ["done"], "done": ["open"]}}},
//	 "conflictGroups": {"schedule": ["startAt", "dueAt"]},
//	 "access": {"read": "user in entity.properties.members"}}
//
// A state field's known values are the keys of its transitions; a
// terminal state is a key with an empty list. State values are strings.
// A state field with an initial value always has a value: creating an
// entity without one sets the initial, and removing it is a conflict.
type TypeDef struct {
	Properties     map[string]PropertyDef `json:"properties,omitempty"`
	Strict         bool                   `json:"strict,omitempty"`
	States         map[string]StateDef    `json:"states,omitempty"`
	ConflictGroups map[string][]string    `json:"conflictGroups,omitempty"`
	// Access, if set, limits who may read entities of the type (package
	// auth decides; see ReadRule).
	Access *AccessDef `json:"access,omitempty"`

	groupOf map[string]string // property -> conflict group name
	read    *predicate.Access
}

// AccessDef is a type's access rule: Read is CEL over `entity` (each
// snapshot) and `user` (the reader's user), true when that user may read
// it.
type AccessDef struct {
	Read string `json:"read"`
}

// PropertyDef declares one property. An empty Kind means any.
type PropertyDef struct {
	Kind     string `json:"kind"`
	Required bool   `json:"required,omitempty"`
}

// StateDef declares a state field: its initial value and allowed
// transitions (from value to the values it may move to).
type StateDef struct {
	Initial     string              `json:"initial,omitempty"`
	Transitions map[string][]string `json:"transitions"`
}

// ParseTypeDef decodes and validates a type definition. Errors are
// bad_request naming the offending field.
func ParseTypeDef(raw []byte) (*TypeDef, error) {
	d, err := decodeTypeDef(raw)
	if err != nil {
		return nil, err
	}
	if err := d.compile(); err != nil {
		return nil, err
	}
	return d, nil
}

func decodeTypeDef(raw []byte) (*TypeDef, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, problem.New(problem.BadRequest, "type definition must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var d TypeDef
	if err := dec.Decode(&d); err != nil {
		return nil, jsonProblem("type definition", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, problem.New(problem.BadRequest, "type definition: trailing data after JSON object")
	}
	return &d, nil
}

// jsonProblem turns an encoding/json decode error into a bad_request,
// naming the field when the error does.
func jsonProblem(what string, err error) *problem.Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return problem.New(problem.BadRequest, "%s must be a JSON object, not %s", what, te.Value)
		}
		return problem.New(problem.BadRequest, "%s: %s: unexpected JSON %s", what, te.Field, te.Value).With("field", te.Field)
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return problem.New(problem.BadRequest, "%s: unknown field %q", what, name).With("field", name)
	}
	return problem.New(problem.BadRequest, "%s: invalid JSON: %s", what, strings.TrimPrefix(msg, "json: "))
}

func fieldError(field, format string, args ...any) *problem.Error {
	return problem.New(problem.BadRequest, "%s: %s", field, fmt.Sprintf(format, args...)).With("field", field)
}

// compile validates d and builds its lookup tables.
func (d *TypeDef) compile() error {
	if err := d.checkProperties(); err != nil {
		return err
	}
	if err := d.checkStates(); err != nil {
		return err
	}
	if err := d.compileAccess(); err != nil {
		return err
	}
	return d.compileGroups()
}

// compileAccess compiles the access rule, if any.
func (d *TypeDef) compileAccess() error {
	if d.Access == nil {
		return nil
	}
	rule, err := predicate.CompileAccess("access.read", d.Access.Read)
	if err != nil {
		return err
	}
	d.read = rule
	return nil
}

// ReadRule returns the compiled access rule, or nil when the type
// declares none.
func (d *TypeDef) ReadRule() *predicate.Access { return d.read }

func (d *TypeDef) checkProperties() error {
	for _, name := range sortedKeys(d.Properties) {
		p := d.Properties[name]
		if name == "" {
			return fieldError("properties", "property names must not be empty")
		}
		if p.Kind == "" {
			p.Kind = KindAny
			d.Properties[name] = p
		}
		if !slices.Contains(propertyKinds, p.Kind) {
			return fieldError("properties."+name+".kind", "unknown kind %q (want one of %s)", p.Kind, strings.Join(propertyKinds, ", "))
		}
	}
	return nil
}

func (d *TypeDef) checkStates() error {
	for _, field := range sortedKeys(d.States) {
		if err := d.checkState(field, d.States[field]); err != nil {
			return err
		}
	}
	return nil
}

func (d *TypeDef) checkState(field string, s StateDef) error {
	path := "states." + field
	if field == "" {
		return fieldError("states", "state field names must not be empty")
	}
	if p, ok := d.Properties[field]; ok && p.Kind != KindString && p.Kind != KindAny {
		return fieldError("properties."+field+".kind", "state field must be of kind string, not %s", p.Kind)
	}
	if len(s.Transitions) == 0 {
		return fieldError(path+".transitions", "a state field needs at least one state")
	}
	for _, from := range sortedKeys(s.Transitions) {
		if from == "" {
			return fieldError(path+".transitions", "state values must not be empty")
		}
		for _, to := range s.Transitions[from] {
			if _, ok := s.Transitions[to]; !ok {
				return fieldError(path+".transitions."+from, "target %q is not a known state (a key of transitions)", to)
			}
		}
	}
	if _, ok := s.Transitions[s.Initial]; s.Initial != "" && !ok {
		return fieldError(path+".initial", "initial state %q is not a known state (a key of transitions)", s.Initial)
	}
	return nil
}

func (d *TypeDef) compileGroups() error {
	d.groupOf = make(map[string]string)
	for _, g := range sortedKeys(d.ConflictGroups) {
		path := "conflictGroups." + g
		if g == "" {
			return fieldError("conflictGroups", "group names must not be empty")
		}
		if len(d.ConflictGroups[g]) == 0 {
			return fieldError(path, "a conflict group needs at least one property")
		}
		for _, p := range d.ConflictGroups[g] {
			if p == "" {
				return fieldError(path, "property names must not be empty")
			}
			if other, ok := d.groupOf[p]; ok {
				return fieldError(path, "property %q is already in group %q", p, other)
			}
			d.groupOf[p] = g
		}
	}
	return d.checkGroupNames()
}

// checkGroupNames rejects a group named like an ungrouped declared
// property, whose own group would then be ambiguous.
func (d *TypeDef) checkGroupNames() error {
	for _, g := range sortedKeys(d.ConflictGroups) {
		if _, grouped := d.groupOf[g]; grouped {
			continue
		}
		_, isProp := d.Properties[g]
		_, isState := d.States[g]
		if isProp || isState {
			return fieldError("conflictGroups."+g, "group name collides with the ungrouped property %q", g)
		}
	}
	return nil
}

// GroupOf returns the conflict group of a property: its declared group, or
// the property's own name. A nil *TypeDef is valid.
func (d *TypeDef) GroupOf(property string) string {
	if d != nil {
		if g, ok := d.groupOf[property]; ok {
			return g
		}
	}
	return property
}

// declared reports whether a property is declared (as a property or a
// state field).
func (d *TypeDef) declared(name string) bool {
	_, p := d.Properties[name]
	_, s := d.States[name]
	return p || s
}

// checkKind reports whether a decoded JSON value has a property kind.
func checkKind(kind string, v any) bool {
	switch kind {
	case KindAny, "":
		return true
	case KindString:
		_, ok := v.(string)
		return ok
	case KindNumber:
		_, ok := v.(json.Number)
		return ok
	case KindInteger:
		n, ok := v.(json.Number)
		return ok && isIntegral(string(n))
	case KindBoolean:
		_, ok := v.(bool)
		return ok
	case KindObject:
		_, ok := v.(map[string]any)
		return ok
	case KindArray:
		_, ok := v.([]any)
		return ok
	case KindTimestamp:
		s, ok := v.(string)
		return ok && validTimestamp(s)
	}
	return false
}

func validTimestamp(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// isIntegral reports whether a JSON number literal denotes an integer
// (1, -0, 1.0, 1e3, 120e-1 are; 1.5 and 1e-3 are not). It works on the
// text, so huge exponents cost nothing.
func isIntegral(n string) bool {
	n = strings.TrimPrefix(n, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(n), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return true // zero
	}
	trailing := len(digits) - len(strings.TrimRight(digits, "0"))
	e := int64(0)
	if hasExp {
		v, err := strconv.ParseInt(exp, 10, 64)
		if err != nil {
			// Out of int64 range: a huge positive exponent is integral,
			// a huge negative one is not.
			return !strings.HasPrefix(exp, "-")
		}
		e = v
	}
	return e-int64(len(frac))+int64(trailing) >= 0
}
