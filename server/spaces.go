package server

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// spaceBody is one space as the API shows it.
type spaceBody struct {
	Space         string `json:"space"`
	Head          int64  `json:"head"`
	Horizon       int64  `json:"horizon"`
	RetainedFrom  int64  `json:"retainedFrom"`
	Epoch         string `json:"epoch"`
	SchemaVersion int64  `json:"schemaVersion"`
}

func spaceView(sp store.Space) spaceBody {
	return spaceBody{
		Space:         sp.ID,
		Head:          sp.Head,
		Horizon:       sp.Horizon,
		RetainedFrom:  sp.Horizon + 1,
		Epoch:         sp.Epoch,
		SchemaVersion: sp.SchemaVersion,
	}
}

// discoverySpace is one space in the discovery answer.
type discoverySpace struct {
	Space   string `json:"space"`
	Head    int64  `json:"head"`
	Horizon int64  `json:"horizon"`
	Epoch   string `json:"epoch"`
}

// discovery answers GET /api/v1.
func (s *Server) discovery(w http.ResponseWriter, r *http.Request) error {
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	sps, err := s.log.Spaces(r.Context())
	if err != nil {
		return err
	}
	p := principal(r)
	out := make([]discoverySpace, 0, len(sps))
	for _, sp := range sps {
		if p.CanAccessSpace(sp.ID) {
			out = append(out, discoverySpace{Space: sp.ID, Head: sp.Head, Horizon: sp.Horizon, Epoch: sp.Epoch})
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"version": s.version, "spaces": out})
	return nil
}

// getSpace answers GET /api/v1/spaces/{space}.
func (s *Server) getSpace(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if _, err := authorize(r, space, accessRead); err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	sp, err := s.log.Space(r.Context(), space)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, spaceView(sp))
	return nil
}

// putSpace answers PUT /api/v1/spaces/{space}: 201 when created, 200 when
// it existed.
func (s *Server) putSpace(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if _, err := authorize(r, space, accessAdmin); err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	if err := validSpace(space); err != nil {
		return err
	}
	if err := optionalObject(r); err != nil {
		return err
	}
	status := http.StatusCreated
	sp, err := s.log.CreateSpace(r.Context(), space)
	if problem.CodeOf(err) == problem.Conflict {
		status = http.StatusOK
		sp, err = s.log.Space(r.Context(), space)
	}
	if err != nil {
		return err
	}
	setSeq(w, sp.Head)
	s.writeJSON(w, r, status, spaceView(sp))
	return nil
}

// optionalObject accepts an empty body or one JSON object (ignored).
func optionalObject(r *http.Request) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	_, err = decodeObject(r, "request body")
	return err
}

// pruneBody is the body of POST .../prune.
type pruneBody struct {
	Through *int64 `json:"through"`
	Force   bool   `json:"force"`
}

// prune answers POST /api/v1/spaces/{space}/prune.
func (s *Server) prune(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if _, err := authorize(r, space, accessAdmin); err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	var body pruneBody
	if err := decodeJSON(r, &body, true); err != nil {
		return err
	}
	if body.Through == nil {
		return badRequest("through is required").With("field", "through")
	}
	sp, err := s.log.Space(r.Context(), space)
	if err != nil {
		return err
	}
	if t := *body.Through; t < sp.Horizon || t > sp.Head {
		return badRequest("through %d is outside the retained range [%d, %d] (horizon, head)", t, sp.Horizon, sp.Head).
			With("field", "through").With("horizon", sp.Horizon).With("head", sp.Head)
	}
	if s.engine != nil && !body.Force {
		if err := s.engine.CheckPrune(r.Context(), space, *body.Through); err != nil {
			return err
		}
	}
	sp, err = s.log.Prune(r.Context(), space, *body.Through)
	if err != nil {
		return err
	}
	setSeq(w, sp.Head)
	s.writeJSON(w, r, http.StatusOK, spaceView(sp))
	return nil
}

// validSpace checks a space name (the type name rule).
func validSpace(space string) error {
	if !changelog.ValidTypeName(space) {
		return problem.Param("space", "%q is not a valid space name (want [a-z][a-z0-9-]*, dot-separated)", space)
	}
	return nil
}

// setSeq sets the Eddy-Seq header of a write response.
func setSeq(w http.ResponseWriter, seq int64) {
	w.Header().Set("Eddy-Seq", strconv.FormatInt(seq, 10))
}
