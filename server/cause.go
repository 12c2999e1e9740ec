package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// causeHeader carries a delivery's cause token on a webhook function's
// write-back.
const causeHeader = functions.HeaderCause

// reasonCausalityCap is details.reason of the conflict that refuses a
// delivery-authored write past the depth cap.
const reasonCausalityCap = "causality_cap"

// writeProvenance returns the provenance template of an entity write or a
// mutations batch: the principal's, or with Eddy-Cause the delivery's
// (actor trigger:<name>, causedBy and depth from the token). Call it after
// the principal was authorized to write.
func (s *Server) writeProvenance(r *http.Request, p *auth.Principal, space string) (store.Provenance, error) {
	token := r.Header.Get(causeHeader)
	if token == "" {
		return provenance(r, p), nil
	}
	c, err := s.verifyCause(r, token, space)
	if err != nil {
		return store.Provenance{}, err
	}
	if err := s.checkCauseCap(r, space, c); err != nil {
		return store.Provenance{}, err
	}
	return c.Provenance(requestID(r.Context()), traceparent(r)), nil
}

// verifyCause verifies a cause token: a bad or expired token is
// unauthorized, another space's forbidden.
func (s *Server) verifyCause(r *http.Request, token, space string) (causality.Claims, error) {
	key, err := s.causeKeys.Key(r.Context())
	if err != nil {
		return causality.Claims{}, err
	}
	c, err := causality.Verify(key, token, space, time.Now())
	switch {
	case errors.Is(err, causality.ErrWrongSpace):
		return c, forbidden("%s: %v", causeHeader, err).With("header", causeHeader)
	case err != nil:
		return c, problem.New(problem.Unauthorized, "%s: %v", causeHeader, err).With("header", causeHeader)
	}
	sp, err := s.log.Space(r.Context(), space)
	if err != nil {
		return c, err
	}
	if c.CausedBy > sp.Head {
		// A token from another database sharing the key; writing it would
		// record a cause that is not a smaller seq.
		return c, problem.New(problem.Unauthorized, "%s: cause seq %d is ahead of the head %d", causeHeader, c.CausedBy, sp.Head).With("header", causeHeader)
	}
	return c, nil
}

// checkCauseCap refuses a write whose depth is past the cap in force for
// its trigger: 409 conflict with details.reason causality_cap.
func (s *Server) checkCauseCap(r *http.Request, space string, c causality.Claims) error {
	triggerCap, err := s.triggerCap(r, space, c.Trigger)
	if err != nil {
		return err
	}
	if !causality.Exceeds(c.Depth, causality.DefaultCap, triggerCap) {
		return nil
	}
	limit := causality.Cap(causality.DefaultCap, triggerCap)
	return problem.New(problem.Conflict, "depth %d of trigger %q's delivery is past the causality cap %d", c.Depth, c.Trigger, limit).
		With("reason", reasonCausalityCap).With("depth", c.Depth).With("cap", limit).With("trigger", c.Trigger)
}

// triggerCap returns the causalityCap of a stored trigger definition, or 0
// (the space's cap) when it sets none or is gone.
func (s *Server) triggerCap(r *http.Request, space, name string) (int, error) {
	d, err := s.log.Store().DefinitionGet(r.Context(), space, store.DefTrigger, name)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read trigger %s: %w", name, err)
	}
	var def struct {
		CausalityCap int `json:"causalityCap"`
	}
	if err := json.Unmarshal(d.Def, &def); err != nil {
		return 0, fmt.Errorf("decode trigger %s: %w", name, err)
	}
	return def.CausalityCap, nil
}
