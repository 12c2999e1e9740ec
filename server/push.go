package server

import (
	"net/http"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// pushRoutes registers the push protocol (DESIGN section 8b).
func (s *Server) pushRoutes() {
	s.handle("POST /api/v1/spaces/{space}/push", s.push)
	s.handle("GET /api/v1/spaces/{space}/clients/{clientId}", s.getClient)
}

// pushAnswer is the body of a push's 200 answer.
type pushAnswer struct {
	ClientID    string          `json:"clientId"`
	LastOrdinal int64           `json:"lastOrdinal"`
	Receipts    []store.Receipt `json:"receipts"`
}

// push answers POST .../push: the client's ordinals in order, replays
// answered from stored receipts, a gap refused with 409 mutation_gap
// (the mutations before it processed, their receipts in
// details.receipts), a client of another principal 403.
func (s *Server) push(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	p, err := authorize(r, space, accessWrite)
	if err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	push, ms, err := changelog.DecodePush(r.Body)
	if err != nil {
		return err
	}
	for i := range ms {
		for _, k := range ms[i].Keys() {
			if !canUseType(p, k.Type) {
				return forbidden("mutations[%d]: token may not write type %q", i, k.Type).With("index", i)
			}
		}
	}
	push.Owner = p.TokenID
	res, err := s.log.Write(r.Context(), changelog.WriteRequest{Space: space, Mutations: ms, Provenance: provenance(r, p), Push: &push})
	if err != nil {
		return err
	}
	setSeq(w, res.LastSeq)
	out := pushAnswer{ClientID: push.ClientID, LastOrdinal: res.Push.LastOrdinal, Receipts: make([]store.Receipt, len(res.Receipts))}
	for i, rc := range res.Receipts {
		out.Receipts[i] = receiptView(rc)
	}
	switch {
	case res.Push.Forbidden:
		return forbidden("client %q belongs to another principal; register a new client id", push.ClientID)
	case res.Push.Gap != nil:
		g := res.Push.Gap
		return problem.New(problem.MutationGap, "client %q must push ordinal %d next, got %d", push.ClientID, g.Expected, g.Got).
			With("expected", g.Expected).With("got", g.Got).With("lastOrdinal", out.LastOrdinal).With("receipts", out.Receipts)
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// clientView is a push client as GET .../clients/{clientId} shows it.
type clientView struct {
	ClientID    string    `json:"clientId"`
	LastOrdinal int64     `json:"lastOrdinal"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// getClient answers GET .../clients/{clientId} for the owning principal;
// a client of another principal is 403, an unknown one 404.
func (s *Server) getClient(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	p, err := authorize(r, space, accessWrite)
	if err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	c, err := s.log.Client(r.Context(), space, r.PathValue("clientId"))
	if err != nil {
		return err
	}
	if c.Owner != p.TokenID {
		return forbidden("client %q belongs to another principal", c.ID)
	}
	s.writeJSON(w, r, http.StatusOK, clientView{ClientID: c.ID, LastOrdinal: c.LastOrdinal, UpdatedAt: c.UpdatedAt})
	return nil
}
