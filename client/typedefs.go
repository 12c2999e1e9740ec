package client

import (
	"context"
	"net/http"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// TypeDef is a stored type definition as the API answers it:
// {"type", "definition", "updatedAt"}.
type TypeDef = store.TypeDef

// TypeDefinition is the body of a type definition (declared properties,
// strict, state fields with transitions, conflict groups); see
// docs/changelog.md. Decode a TypeDef's Definition into it, or pass one
// to PutType.
type TypeDefinition = changelog.TypeDef

// PropertyDef declares one property of a TypeDefinition.
type PropertyDef = changelog.PropertyDef

// StateDef declares a state field of a TypeDefinition.
type StateDef = changelog.StateDef

// AccessDef is a TypeDefinition's access rule: who may read the type's
// entities (docs/auth.md#access-rules).
type AccessDef = changelog.AccessDef

// PutType stores the definition of typ (PUT .../types/{type}, admin).
// def is anything that encodes to the definition's JSON: a
// TypeDefinition, a map, or a json.RawMessage. created reports a new
// definition (201). Replacing a definition with itself changes nothing,
// so the call is retried like a GET.
func (s *Space) PutType(ctx context.Context, typ string, def any) (td TypeDef, created bool, err error) {
	cl := send(http.MethodPut, s.path("types", typ), def)
	cl.retry = true
	ans, err := s.c.callJSON(ctx, cl, &td)
	if err != nil {
		return TypeDef{}, false, err
	}
	return td, ans.status == http.StatusCreated, nil
}

// GetType returns the definition of typ (not_found when it has none).
func (s *Space) GetType(ctx context.Context, typ string) (TypeDef, error) {
	var td TypeDef
	_, err := s.c.callJSON(ctx, get(s.path("types", typ), nil), &td)
	return td, err
}

// Types returns the space's type definitions the token may read.
func (s *Space) Types(ctx context.Context) ([]TypeDef, error) {
	var out struct {
		Types []TypeDef `json:"types"`
	}
	_, err := s.c.callJSON(ctx, get(s.path("types"), nil), &out)
	return out.Types, err
}

// DeleteType removes the definition of typ (admin); its entities stay.
func (s *Space) DeleteType(ctx context.Context, typ string) error {
	_, err := s.c.do(ctx, send(http.MethodDelete, s.path("types", typ), nil))
	return err
}
