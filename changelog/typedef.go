package changelog

// TypeDef is a compiled type definition: declared properties with kinds,
// strict mode, state fields with allowed transitions, and conflict groups.
type TypeDef struct {
	Properties     map[string]PropertyDef `json:"properties,omitempty"`
	Strict         bool                   `json:"strict,omitempty"`
	States         map[string]StateDef    `json:"states,omitempty"`
	ConflictGroups map[string][]string    `json:"conflictGroups,omitempty"`

	groupOf map[string]string // property -> conflict group name
}

// PropertyDef declares one property.
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
func ParseTypeDef(raw []byte) (*TypeDef, error) { panic("changelog.ParseTypeDef: unimplemented") }

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
