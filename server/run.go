package server

import (
	"net/http"

	"github.com/eddy-run/eddy/store"
)

// runBody is the body of POST .../triggers/{name}/run.
type runBody struct {
	Entity *store.EntityKey `json:"entity"`
}

// runTrigger answers POST .../triggers/{name}/run: the trigger's function
// runs once on the entity's latest commit and its actions are written as
// the run's delivery; no cursor moves.
func (s *Server) runTrigger(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	var body runBody
	if err := decodeOptional(r, &body); err != nil {
		return err
	}
	if body.Entity == nil {
		return badRequest("entity is required: {\"type\": T, \"id\": ID}").With("field", "entity")
	}
	res, err := s.defs.Run(r.Context(), space, r.PathValue("name"), *body.Entity, requestID(r.Context()))
	if err != nil {
		return err
	}
	if res.LastSeq > 0 {
		setSeq(w, res.LastSeq)
	} else if err := s.setHead(w, r, space); err != nil {
		return err
	}
	for i, rc := range res.Receipts {
		res.Receipts[i] = receiptView(rc)
	}
	s.writeJSON(w, r, http.StatusOK, res)
	return nil
}
