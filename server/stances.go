package server

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/problem"
)

// stances answers GET .../changes/{seq}/stances with every trigger's
// stance on the row: {"seq": N, "stances": [{"trigger", "stance",
// "delivery"?, "error"?}]}. The row must be readable (auth's
// CanReadCommit, else forbidden), and only triggers the principal may
// see are listed, so stances are never an oracle about other rows.
func (s *Server) stances(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	rd, sc, err := s.readDefinitions(r, space)
	if err != nil {
		return err
	}
	seq, err := s.stanceSeq(r, space)
	if err != nil {
		return err
	}
	if err := s.needEngine(); err != nil {
		return err
	}
	st, err := s.engine.Stances(r.Context(), space, seq)
	if err != nil {
		return err
	}
	c, err := s.log.Commit(r.Context(), space, seq)
	if err != nil {
		return err
	}
	if !rd.CanReadCommit(&c) {
		return forbidden("token may not read row %d", seq)
	}
	st.Stances = slices.DeleteFunc(st.Stances, func(x engine.TriggerStance) bool {
		return !rd.CanSeeDefinition(sc.triggerNamed(x.Trigger))
	})
	if st.Stances == nil {
		st.Stances = []engine.TriggerStance{}
	}
	s.writeJSON(w, r, http.StatusOK, st)
	return nil
}

// stanceSeq reads {seq}: a row seq of the space, 1..head.
func (s *Server) stanceSeq(r *http.Request, space string) (int64, error) {
	v := r.PathValue("seq")
	seq, err := strconv.ParseInt(v, 10, 64)
	if err != nil || seq < 1 {
		return 0, problem.Param("seq", "%q is not a row seq (want an integer >= 1)", v)
	}
	sp, err := s.log.Space(r.Context(), space)
	if err != nil {
		return 0, err
	}
	if seq > sp.Head {
		return 0, problem.Param("seq", "%d is ahead of the head %d", seq, sp.Head).With("head", sp.Head)
	}
	return seq, nil
}
