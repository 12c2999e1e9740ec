package server

import (
	"net/http"
	"net/url"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// asOfParam applies head=N to a list cursor: the collection as of head N
// (1..head, not below the horizon). A cursor from a page of another
// snapshot is refused. known is the space as the request read it (nil:
// not read).
func (s *Server) asOfParam(r *http.Request, space string, known *store.Space, q url.Values, cur listCursor) (listCursor, error) {
	head, ok, err := seqParam(q, "head")
	if err != nil || !ok {
		return cur, err
	}
	if cur.Head != 0 && cur.Head != head {
		return cur, problem.Param("head", "the after cursor pages snapshot %d, not %d", cur.Head, head)
	}
	sp, err := s.log.SpaceOf(r.Context(), space, known)
	if err != nil {
		return cur, err
	}
	switch {
	case head < 1 || head > sp.Head:
		return cur, problem.Param("head", "%d is not a head of the space (want 1..%d)", head, sp.Head).With("head", sp.Head)
	case head < sp.Horizon:
		return cur, problem.New(problem.Compacted, "snapshot %d was pruned: the horizon is %d", head, sp.Horizon).With("horizon", sp.Horizon)
	}
	cur.Head = head
	return cur, nil
}
