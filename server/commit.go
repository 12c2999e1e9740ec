package server

import (
	"encoding/json"
	"net/http"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/store"
)

// commit answers GET .../changes/{seq}: the row's commit. A reader sees
// what the row changed (auth's CanReadCommit: it may read the row and
// every change, else forbidden); a trusted reader (log:read) also sees the receipt and the
// provenance, as the raw log shows them.
func (s *Server) commit(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	rd, err := s.readerFor(r, space, accessRead)
	if err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	seq, err := s.causeSeq(r, space)
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
	out, err := commitView(&c, rd.Principal().Has(auth.ScopeLogRead))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// commitView is a commit as a reader sees it: the wire row's fields and
// its changes (before and after snapshots); with trusted, also the
// receipt and the provenance, as the raw log shows them.
func commitView(c *store.Commit, trusted bool) (json.RawMessage, error) {
	changes := c.Changes
	if changes == nil {
		changes = []store.Change{}
	}
	out, err := withKey(c.Row, "changes", changes)
	if err != nil || !trusted {
		return out, err
	}
	if out, err = withKey(out, "receipt", receiptView(c.Receipt)); err != nil {
		return nil, err
	}
	return withKey(out, "provenance", c.Provenance)
}
