package server

import (
	"net/http"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// mutations answers POST .../mutations with one receipt per mutation.
// With Eddy-Cause every commit is delivery-authored.
func (s *Server) mutations(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	p, err := authorize(r, space, accessWrite)
	if err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	ms, atomic, err := changelog.DecodeMutations(r.Body)
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
	prov, err := s.writeProvenance(r, p, space)
	if err != nil {
		return err
	}
	res, err := s.log.Write(r.Context(), changelog.WriteRequest{
		Space: space, Mutations: ms, Atomic: atomic, Provenance: prov,
	})
	if err != nil {
		return err
	}
	setSeq(w, res.LastSeq)
	out := make([]store.Receipt, len(res.Receipts))
	for i, rc := range res.Receipts {
		out[i] = receiptView(rc)
	}
	s.writeJSON(w, r, http.StatusOK, receiptsBody{Receipts: out})
	return nil
}

// receiptsBody is the answer to a mutations request.
type receiptsBody struct {
	Receipts []store.Receipt `json:"receipts"`
}
