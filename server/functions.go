package server

import (
	"net/http"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/definitions"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
)

// listFunctions answers GET .../functions with {"functions": [...]}
// (public views: no secrets): those the principal may see (auth's
// CanSeeDefinition over the types each writes).
func (s *Server) listFunctions(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	rd, sc, err := s.readDefinitions(r, space)
	if err != nil {
		return err
	}
	fs, err := s.defs.Functions(r.Context(), space)
	if err != nil {
		return err
	}
	out := make([]*functions.Function, 0, len(fs))
	for _, f := range fs {
		if rd.CanSeeDefinition(sc.function(f.Name)) {
			out = append(out, f.Public())
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"functions": out})
	return nil
}

// getFunction answers GET .../functions/{name} with its public view; a
// function the principal may not see is not_found.
func (s *Server) getFunction(w http.ResponseWriter, r *http.Request) error {
	space, name := r.PathValue("space"), r.PathValue("name")
	rd, sc, err := s.readDefinitions(r, space)
	if err != nil {
		return err
	}
	f, err := s.defs.Function(r.Context(), space, name)
	if err != nil {
		return err
	}
	if !rd.CanSeeDefinition(sc.function(f.Name)) {
		return hiddenDefinition("function", name)
	}
	s.writeJSON(w, r, http.StatusOK, f.Public())
	return nil
}

// putFunction answers PUT .../functions/{name}: 201 when new, else 200,
// with the public view of the saved function.
func (s *Server) putFunction(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	raw, err := decodeObject(r, "function definition")
	if err != nil {
		return err
	}
	f, created, err := s.defs.PutFunction(r.Context(), space, r.PathValue("name"), raw)
	if err != nil {
		return err
	}
	if err := s.setHead(w, r, space); err != nil {
		return err
	}
	s.writeJSON(w, r, createdStatus(created), f.Public())
	return nil
}

// deleteFunction answers DELETE .../functions/{name} with 204 (409 while
// a trigger names it).
func (s *Server) deleteFunction(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	if err := s.defs.DeleteFunction(r.Context(), space, r.PathValue("name")); err != nil {
		return err
	}
	if err := s.setHead(w, r, space); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// testBody is the body of POST .../functions/{name}/test.
type testBody struct {
	Seq     *int64 `json:"seq"`
	Trigger string `json:"trigger"`
}

// testFunction answers POST .../functions/{name}/test: a dry run on the
// commit at seq that writes and sends nothing.
func (s *Server) testFunction(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	var body testBody
	if err := decodeJSON(r, &body, true); err != nil {
		return err
	}
	if body.Seq == nil {
		return badRequest("seq is required: the committed row to run the function on").With("field", "seq")
	}
	res, err := s.defs.TestFunction(r.Context(), space, r.PathValue("name"),
		definitions.TestParams{Seq: *body.Seq, Trigger: body.Trigger})
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, res)
	return nil
}

// readDefinitions authorizes reading a space's functions and triggers
// (any role; secrets are never shown), refuses query parameters and
// returns the principal's Reader and the space's definition scopes: a
// definition is shown only when auth's CanSeeDefinition allows it.
func (s *Server) readDefinitions(r *http.Request, space string) (*auth.Reader, *definitionScopes, error) {
	rd, err := s.readerFor(r, space, accessRead)
	if err != nil {
		return nil, nil, err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return nil, nil, err
	}
	sc, err := s.scopesFor(r.Context(), rd, space)
	if err != nil {
		return nil, nil, err
	}
	return rd, sc, nil
}

// hiddenDefinition is the answer about a definition the principal may
// not see: not_found, the same as an absent one.
func hiddenDefinition(kind, name string) error {
	return problem.New(problem.NotFound, "%s %q not found", kind, name)
}

// manageDefinitions authorizes changing or testing a space's functions
// and triggers (admin) and refuses query parameters.
func (s *Server) manageDefinitions(r *http.Request, space string) error {
	if _, err := authorize(r, space, accessAdmin); err != nil {
		return err
	}
	return checkParams(r.URL.Query(), nil, nil)
}

// createdStatus is 201 for a created resource, else 200.
func createdStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}
