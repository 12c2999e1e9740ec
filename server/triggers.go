package server

import (
	"net/http"
)

// listTriggers answers GET .../triggers with {"triggers": [...]}.
func (s *Server) listTriggers(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.readDefinitions(r, space); err != nil {
		return err
	}
	ts, err := s.defs.Triggers(r.Context(), space)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"triggers": ts})
	return nil
}

// getTrigger answers GET .../triggers/{name}.
func (s *Server) getTrigger(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.readDefinitions(r, space); err != nil {
		return err
	}
	t, err := s.defs.Trigger(r.Context(), space, r.PathValue("name"))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, t)
	return nil
}

// putTrigger answers PUT .../triggers/{name}: 201 when new, else 200,
// with the saved trigger and its "warnings" (cycles in the trigger graph).
func (s *Server) putTrigger(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	raw, err := decodeObject(r, "trigger definition")
	if err != nil {
		return err
	}
	saved, created, err := s.defs.PutTrigger(r.Context(), space, r.PathValue("name"), raw)
	if err != nil {
		return err
	}
	if err := s.setHead(w, r, space); err != nil {
		return err
	}
	s.writeJSON(w, r, createdStatus(created), saved)
	return nil
}

// deleteTrigger answers DELETE .../triggers/{name} with 204.
func (s *Server) deleteTrigger(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	if err := s.defs.DeleteTrigger(r.Context(), space, r.PathValue("name")); err != nil {
		return err
	}
	if err := s.setHead(w, r, space); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
