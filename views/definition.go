package views

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Limits of a view definition.
const (
	MaxTypes      = 32
	MaxFields     = 256
	MaxVersionLen = 64
	MaxFieldLen   = 128
)

// Filter kinds, the keys of a definition's "filter" object.
const (
	FilterFieldEquals  = "fieldEquals"
	FilterCEL          = "cel"
	FilterCurrentState = "currentState"
)

// Spec is a view definition as it is saved and shown: the body of
// PUT .../views/{view}.
type Spec struct {
	// Version is the declared filter version, chosen by whoever writes
	// the definition.
	Version string `json:"version"`
	// Types are the entity types the view reads (its window).
	Types []string `json:"types"`
	// Filter holds exactly one filter kind.
	Filter FilterSpec `json:"filter"`
	// Fields, when set, is the projection: only these properties are sent.
	Fields []string `json:"fields,omitempty"`
}

// FilterSpec is a view's filter: exactly one kind is set.
type FilterSpec struct {
	FieldEquals  *FieldEquals  `json:"fieldEquals,omitempty"`
	CEL          *string       `json:"cel,omitempty"`
	CurrentState *CurrentState `json:"currentState,omitempty"`
}

// FieldEquals is the reference filter: the property Field holds a value
// equal to Expected (a string, number or bool; numbers compare by value).
type FieldEquals struct {
	Field    string          `json:"field"`
	Expected json.RawMessage `json:"expected"`
}

// CurrentState is a filter that can only judge a record as it stands
// now: a CEL expression over entity whose non-inclusion is sent as a
// removal whenever the view's types hold either side of a change.
type CurrentState struct {
	CEL string `json:"cel"`
}

// Definition is a parsed, validated view: its identity, filter version,
// filter signature and membership. It is immutable and safe for
// concurrent use.
type Definition struct {
	name      string
	spec      Spec
	types     map[string]bool
	field     string
	expected  any
	prg       *predicate.Record
	fields    []string
	current   bool
	signature string
}

// Parse validates the JSON definition of the view name. Errors are
// bad_request naming the field at fault; CEL errors carry their position.
func Parse(name string, raw []byte) (*Definition, error) {
	if !changelog.ValidTypeName(name) {
		return nil, problem.Param("view", "%q is not a valid view name (want [a-z][a-z0-9-]*, dot-separated)", name)
	}
	var spec struct {
		Version *string                    `json:"version"`
		Types   []string                   `json:"types"`
		Filter  map[string]json.RawMessage `json:"filter"`
		Fields  []string                   `json:"fields"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return nil, definitionJSONError(err)
	}
	d := &Definition{name: name}
	if err := d.setVersion(spec.Version); err != nil {
		return nil, err
	}
	if err := d.setTypes(spec.Types); err != nil {
		return nil, err
	}
	if err := d.setFilter(spec.Filter); err != nil {
		return nil, err
	}
	if err := d.setFields(spec.Fields); err != nil {
		return nil, err
	}
	d.signature = signature(&d.spec)
	return d, nil
}

func definitionJSONError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		f = strings.Trim(f, `"`)
		return fieldError(f, "unknown field (a view has version, types, filter and fields)")
	}
	return problem.New(problem.BadRequest, "view definition: %s", msg)
}

func fieldError(field, format string, args ...any) *problem.Error {
	return problem.New(problem.BadRequest, "%s: %s", field, fmt.Sprintf(format, args...)).With("field", field)
}

func (d *Definition) setVersion(v *string) error {
	switch {
	case v == nil || *v == "":
		return fieldError("version", "required: the filter version, such as \"v1\"")
	case len(*v) > MaxVersionLen:
		return fieldError("version", "longer than %d bytes", MaxVersionLen)
	case strings.IndexFunc(*v, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return fieldError("version", "must be printable")
	}
	d.spec.Version = *v
	return nil
}

func (d *Definition) setTypes(ts []string) error {
	if len(ts) == 0 || len(ts) > MaxTypes {
		return fieldError("types", "want 1 to %d entity types, got %d", MaxTypes, len(ts))
	}
	d.types = make(map[string]bool, len(ts))
	for _, t := range ts {
		if !changelog.ValidTypeName(t) {
			return fieldError("types", "%q is not a valid type name", t)
		}
		d.types[t] = true
	}
	d.spec.Types = slices.Sorted(mapKeys(d.types))
	return nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// setFilter reads the one filter kind of f.
func (d *Definition) setFilter(f map[string]json.RawMessage) error {
	if len(f) != 1 {
		return fieldError("filter", "want exactly one of %s, %s or %s, got %d keys", FilterFieldEquals, FilterCEL, FilterCurrentState, len(f))
	}
	for kind, raw := range f {
		switch kind {
		case FilterFieldEquals:
			return d.setFieldEquals(raw)
		case FilterCEL:
			var src string
			if err := json.Unmarshal(raw, &src); err != nil {
				return fieldError("filter.cel", "want a CEL expression (a string)")
			}
			d.spec.Filter.CEL = &src
			return d.compile("filter.cel", src)
		case FilterCurrentState:
			var cs CurrentState
			if err := strictUnmarshal(raw, &cs); err != nil {
				return fieldError("filter.currentState", "want {\"cel\": \"<expression>\"}: %v", err)
			}
			d.spec.Filter.CurrentState, d.current = &cs, true
			return d.compile("filter.currentState.cel", cs.CEL)
		default:
			return fieldError("filter", "unknown filter kind %q (want %s, %s or %s)", kind, FilterFieldEquals, FilterCEL, FilterCurrentState).
				With("kind", kind)
		}
	}
	return nil
}

func strictUnmarshal(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (d *Definition) compile(field, src string) error {
	prg, err := predicate.CompileRecord(field, src)
	if err != nil {
		return err
	}
	d.prg = prg
	return nil
}

func (d *Definition) setFieldEquals(raw []byte) error {
	var fe FieldEquals
	if err := strictUnmarshal(raw, &fe); err != nil {
		return fieldError("filter.fieldEquals", "want {\"field\": \"<property>\", \"expected\": <value>}: %v", err)
	}
	if fe.Field == "" || len(fe.Field) > MaxFieldLen {
		return fieldError("filter.fieldEquals.field", "want a property name of 1 to %d bytes", MaxFieldLen)
	}
	var v any
	if err := json.Unmarshal(fe.Expected, &v); err != nil || !isScalar(v) {
		return fieldError("filter.fieldEquals.expected", "want a string, number or boolean")
	}
	canon, err := json.Marshal(v) // numbers by value: 1 and 1.0 are one value
	if err != nil {
		return fieldError("filter.fieldEquals.expected", "%v", err)
	}
	fe.Expected = canon
	d.spec.Filter.FieldEquals, d.field, d.expected = &fe, fe.Field, v
	return nil
}

func isScalar(v any) bool {
	switch v.(type) {
	case string, float64, bool:
		return true
	}
	return false
}

func (d *Definition) setFields(fs []string) error {
	if len(fs) > MaxFields {
		return fieldError("fields", "at most %d properties, got %d", MaxFields, len(fs))
	}
	for _, f := range fs {
		if f == "" || len(f) > MaxFieldLen {
			return fieldError("fields", "want property names of 1 to %d bytes", MaxFieldLen)
		}
	}
	if len(fs) > 0 {
		d.fields = slices.Compact(slices.Sorted(slices.Values(fs)))
		d.spec.Fields = d.fields
	}
	return nil
}

// signature hashes what decides membership and projection: the types,
// the filter with its values and the fields.
func signature(s *Spec) string {
	b, err := json.Marshal(struct {
		Types  []string   `json:"types"`
		Filter FilterSpec `json:"filter"`
		Fields []string   `json:"fields"`
	}{s.Types, s.Filter, s.Fields})
	if err != nil {
		panic(fmt.Sprintf("views: encode signature: %v", err)) // plain strings and raw canonical JSON
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Name returns the view's identity.
func (d *Definition) Name() string { return d.name }

// Version returns the declared filter version.
func (d *Definition) Version() string { return d.spec.Version }

// Signature returns the hash of the actual filter and its values (and the
// types and fields): the same name and version with another value has
// another signature.
func (d *Definition) Signature() string { return d.signature }

// Types returns the view's entity types, sorted.
func (d *Definition) Types() []string { return d.spec.Types }

// Spec returns the definition in its normalized form.
func (d *Definition) Spec() Spec { return d.spec }

// IsCurrentState reports a currentState view.
func (d *Definition) IsCurrentState() bool { return d.current }

// Holds is THE membership rule: whether the view holds a record
// snapshot. A nil snapshot or a tombstone is held by no view; a record
// outside the view's types is not held; otherwise the filter decides. It
// is pure: bootstrap, delta, live streams and backtest all ask it.
func (d *Definition) Holds(rec *store.Record) bool {
	if rec == nil {
		return false
	}
	return d.holds(newSnapshot(rec))
}

// holds is Holds on a snapshot whose decoded forms are shared.
func (d *Definition) holds(s *snapshot) bool {
	if s == nil || s.rec.Kind == store.KindDeleted || !d.types[s.rec.Type] {
		return false
	}
	if d.prg != nil {
		return d.prg.Holds(s.binding())
	}
	v, ok := s.property(d.field)
	return ok && scalarEqual(v, d.expected)
}

// scalarEqual compares decoded JSON values as fieldEquals does: strings,
// bools and numbers (float64) by value; anything else never equals.
func scalarEqual(v, expected any) bool {
	switch v.(type) {
	case string, float64, bool:
		return v == expected
	}
	return false
}
