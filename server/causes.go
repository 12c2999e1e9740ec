package server

import (
	"net/http"
	"strconv"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/problem"
)

// causes answers GET .../changes/{seq}/causes with the causal chain of a
// row: {"seq": N, "chain": [{"seq", "depth", "trigger"?, "delivery"?}, ...],
// "root", "rootRows", "cap", "budget"} from the row itself to its root
// (depth 0), or to a cause below the horizon, shown as {"seq": M,
// "pruned": true}; then the root write's seq, the rows it has caused so
// far, and the space's depth cap and causal budget. It is for trusted readers:
// an admin or a token with scope log:read.
func (s *Server) causes(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	rd, err := s.readerFor(r, space, accessRead)
	if err != nil {
		return err
	}
	if !rd.Principal().Has(auth.ScopeLogRead) {
		return forbidden("the causal chain needs scope %s", auth.ScopeLogRead)
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	seq, err := s.causeSeq(r, space)
	if err != nil {
		return err
	}
	ch, err := causality.Walk(r.Context(), s.log.Store(), space, seq, causality.WalkLimit)
	if err != nil {
		return err
	}
	if !rd.CanReadCommit(&ch.Start) {
		return forbidden("token may not read row %d", seq)
	}
	if err := s.hideLinks(r, rd, space, ch.Links); err != nil {
		return err
	}
	if err := ch.Tally(r.Context(), s.log.Store(), space, 0, 0); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, ch)
	return nil
}

// hideLinks blanks the trigger and delivery of links whose row rd may not
// read, unless rd may see that trigger's deliveries: the same rule as a
// tree's rows (a readable row names them, as its actor and provenance
// do). Seqs and depths keep their place.
func (s *Server) hideLinks(r *http.Request, rd *auth.Reader, space string, links []causality.Link) error {
	sc, err := s.scopesFor(r.Context(), rd, space)
	if err != nil {
		return err
	}
	for i := range links {
		l := &links[i]
		if l.Trigger == "" || l.Pruned || rd.CanSeeDeliveries(sc.triggerNamed(l.Trigger)) {
			continue
		}
		c, err := s.log.Commit(r.Context(), space, l.Seq)
		if err != nil {
			return err
		}
		if !rd.CanReadCommit(&c) {
			l.Trigger, l.Delivery = "", ""
		}
	}
	return nil
}

// causeSeq reads {seq}: a seq of the space, 1..head, not pruned.
func (s *Server) causeSeq(r *http.Request, space string) (int64, error) {
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
	if seq <= sp.Horizon {
		return 0, problem.New(problem.Compacted, "row %d was pruned: the horizon is %d", seq, sp.Horizon).With("horizon", sp.Horizon)
	}
	return seq, nil
}
