package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/eddy-run/eddy/triggers"
)

// listTriggers answers GET .../triggers with {"triggers": [...]}: those
// the principal may see (auth's CanSeeDefinition over the types each
// touches).
func (s *Server) listTriggers(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	rd, sc, err := s.readDefinitions(r, space)
	if err != nil {
		return err
	}
	ts, err := s.defs.Triggers(r.Context(), space)
	if err != nil {
		return err
	}
	ts = slices.DeleteFunc(ts, func(t *triggers.Trigger) bool { return !rd.CanSeeDefinition(sc.trigger(t)) })
	s.writeJSON(w, r, http.StatusOK, map[string]any{"triggers": ts})
	return nil
}

// getTrigger answers GET .../triggers/{name}: the trigger, plus its
// runtime "status" when the engine runs and has state for it.
func (s *Server) getTrigger(w http.ResponseWriter, r *http.Request) error {
	space, name := r.PathValue("space"), r.PathValue("name")
	rd, sc, err := s.readDefinitions(r, space)
	if err != nil {
		return err
	}
	t, err := s.defs.Trigger(r.Context(), space, name)
	if err != nil {
		return err
	}
	if !rd.CanSeeDefinition(sc.trigger(t)) {
		return hiddenDefinition("trigger", name)
	}
	st, err := s.triggerStatus(r.Context(), space, name)
	if err != nil {
		return err
	}
	if st == nil {
		s.writeJSON(w, r, http.StatusOK, t)
		return nil
	}
	out, err := withKey(t, "status", st)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// withKey returns the JSON object v with one more key, appended after
// the others.
func withKey(v any, key string, value any) (json.RawMessage, error) {
	obj, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	val, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", key, err)
	}
	obj = bytes.TrimSpace(obj)
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return nil, fmt.Errorf("encode: %T is not a JSON object", v)
	}
	k, _ := json.Marshal(key) // a string always encodes
	out := append([]byte{}, obj[:len(obj)-1]...)
	if len(bytes.TrimSpace(obj[1:len(obj)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, val...)
	return append(out, '}'), nil
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
