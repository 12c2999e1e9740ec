package server

import (
	"net/http"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// listTypes answers GET .../types with the definitions the principal may
// read.
func (s *Server) listTypes(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	p, err := authorize(r, space, accessRead)
	if err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	tds, err := s.log.Types(r.Context(), space)
	if err != nil {
		return err
	}
	out := make([]store.TypeDef, 0, len(tds))
	for _, td := range tds {
		if canUseType(p, td.Type) {
			out = append(out, td)
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"types": out})
	return nil
}

// getType answers GET .../types/{type}.
func (s *Server) getType(w http.ResponseWriter, r *http.Request) error {
	space, typ := r.PathValue("space"), r.PathValue("type")
	if _, err := s.readerType(r, space, typ); err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	if err := validType(typ); err != nil {
		return err
	}
	td, err := s.log.GetType(r.Context(), space, typ)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, td)
	return nil
}

// putType answers PUT .../types/{type}: 201 when new, else 200.
func (s *Server) putType(w http.ResponseWriter, r *http.Request) error {
	space, typ := r.PathValue("space"), r.PathValue("type")
	if _, err := authorize(r, space, accessAdmin); err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	if err := validType(typ); err != nil {
		return err
	}
	if changelog.EngineType(typ) {
		return problem.Param("type", "%q is the engine's own type: it takes no definition", typ)
	}
	raw, err := decodeObject(r, "type definition")
	if err != nil {
		return err
	}
	status := http.StatusOK
	if _, err := s.log.GetType(r.Context(), space, typ); problem.CodeOf(err) == problem.NotFound {
		status = http.StatusCreated
	}
	td, err := s.log.PutType(r.Context(), space, typ, raw)
	if err != nil {
		return err
	}
	if err := s.refreshPolicy(r, space); err != nil {
		return err
	}
	if err := s.setHead(w, r, space); err != nil {
		return err
	}
	s.writeJSON(w, r, status, td)
	return nil
}

// deleteType answers DELETE .../types/{type} with 204.
func (s *Server) deleteType(w http.ResponseWriter, r *http.Request) error {
	space, typ := r.PathValue("space"), r.PathValue("type")
	if _, err := authorize(r, space, accessAdmin); err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	if err := validType(typ); err != nil {
		return err
	}
	if err := s.log.DeleteType(r.Context(), space, typ); err != nil {
		return err
	}
	if err := s.refreshPolicy(r, space); err != nil {
		return err
	}
	if err := s.setHead(w, r, space); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// refreshPolicy loads the space's access policy after a type definition
// changed, so the watch streams of this process judge by it from their
// next row (see liveReader).
func (s *Server) refreshPolicy(r *http.Request, space string) error {
	_, err := s.auth.Policies().For(r.Context(), space)
	return err
}

// setHead sets Eddy-Seq to the space head, for writes that append nothing.
func (s *Server) setHead(w http.ResponseWriter, r *http.Request, space string) error {
	sp, err := s.log.Space(r.Context(), space)
	if err != nil {
		return err
	}
	setSeq(w, sp.Head)
	return nil
}
