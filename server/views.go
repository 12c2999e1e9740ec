package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/views"
)

// viewRoutes registers view sync (DESIGN section 8) and epoch rotation.
func (s *Server) viewRoutes() {
	s.handle("GET /api/v1/spaces/{space}/views", s.listViews)
	s.handle("GET /api/v1/spaces/{space}/views/{view}", s.getView)
	s.handle("PUT /api/v1/spaces/{space}/views/{view}", s.putView)
	s.handle("DELETE /api/v1/spaces/{space}/views/{view}", s.deleteView)
	s.handle("POST /api/v1/spaces/{space}/views/{view}/bootstrap", s.openBootstrap)
	s.handle("GET /api/v1/spaces/{space}/views/{view}/bootstrap/{token}", s.bootstrapPage)
	s.handle("GET /api/v1/spaces/{space}/views/{view}/delta", s.viewDelta)
	s.handle("POST /api/v1/spaces/{space}/views/{view}/backtest", s.backtestView)
	s.handle("POST /api/v1/spaces/{space}/rotate-epoch", s.rotateEpoch)
}

// listViews answers GET .../views with {"views": [...]}: the views whose
// every type the token may read.
func (s *Server) listViews(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	p, err := s.viewRequest(r, space, accessRead, nil)
	if err != nil {
		return err
	}
	vs, err := s.views.List(r.Context(), space)
	if err != nil {
		return err
	}
	vs = slices.DeleteFunc(vs, func(v views.View) bool { return !canSeeView(p, v) })
	s.writeJSON(w, r, http.StatusOK, map[string]any{"views": vs})
	return nil
}

// getView answers GET .../views/{view}; a view with a type the token may
// not read is not_found to it.
func (s *Server) getView(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	p, err := s.viewRequest(r, space, accessRead, nil)
	if err != nil {
		return err
	}
	v, err := s.views.Get(r.Context(), space, r.PathValue("view"))
	if err != nil {
		return err
	}
	if !canSeeView(p, v) {
		return problem.New(problem.NotFound, "view %q not found in space %q", v.Name, space)
	}
	s.writeJSON(w, r, http.StatusOK, v)
	return nil
}

// canSeeView reports whether rd may read every type of a view (auth's
// CanReadTypes; each record is then judged on its own).
func canSeeView(rd *auth.Reader, v views.View) bool { return rd.CanReadTypes(v.Types) }

// putView answers PUT .../views/{view} (admin): 201 when new, else 200,
// with the saved view.
func (s *Server) putView(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	raw, err := decodeObject(r, "view definition")
	if err != nil {
		return err
	}
	v, created, err := s.views.Put(r.Context(), space, r.PathValue("view"), raw)
	if err != nil {
		return err
	}
	if err := s.setHead(w, r, space); err != nil {
		return err
	}
	s.writeJSON(w, r, createdStatus(created), v)
	return nil
}

// deleteView answers DELETE .../views/{view} (admin) with 204.
func (s *Server) deleteView(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	if err := s.views.Delete(r.Context(), space, r.PathValue("view")); err != nil {
		return err
	}
	if err := s.setHead(w, r, space); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// openBootstrapBody is the body of POST .../views/{view}/bootstrap; every
// field is optional.
type openBootstrapBody struct {
	PageSize int    `json:"pageSize"`
	Strategy string `json:"strategy"`
	At       *int64 `json:"at"`
}

// openBootstrap answers POST .../views/{view}/bootstrap with the context
// and the first page's token.
func (s *Server) openBootstrap(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	var body openBootstrapBody
	p, err := s.viewRequest(r, space, accessRead, &body)
	if err != nil {
		return err
	}
	op, err := s.views.Open(r.Context(), views.OpenParams{Space: space, View: r.PathValue("view"),
		PageSize: body.PageSize, Strategy: body.Strategy, At: body.At, Reader: views.Identify(p, p.Principal().TokenID)})
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, op)
	return nil
}

// bootstrapPage answers GET .../views/{view}/bootstrap/{token}.
func (s *Server) bootstrapPage(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	p, err := s.viewRequest(r, space, accessRead, nil)
	if err != nil {
		return err
	}
	page, err := s.views.Page(r.Context(), space, r.PathValue("view"), r.PathValue("token"), views.Identify(p, p.Principal().TokenID))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, page)
	return nil
}

// viewDelta answers GET .../views/{view}/delta?cursor=&budget=: one delta
// page, or with watch=1 the live view stream.
func (s *Server) viewDelta(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	p, err := s.readerFor(r, space, accessRead)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if err := checkParams(q, []string{"cursor", "budget", "watch"}, nil); err != nil {
		return err
	}
	watching, err := watchParam(q)
	if err != nil {
		return err
	}
	budget := 0
	if q.Has("budget") {
		if budget, err = strconv.Atoi(q.Get("budget")); err != nil || budget < 1 {
			return problem.Param("budget", "%q is not a commit budget (want an integer from 1 to %d)", q.Get("budget"), views.MaxBudget)
		}
	}
	dp := views.DeltaParams{Space: space, View: r.PathValue("view"), Cursor: q.Get("cursor"), Budget: budget, Reader: views.Identify(p, p.Principal().TokenID)}
	if watching {
		return s.views.Watch(w, streamRequest(r, p.Principal()), dp)
	}
	page, err := s.views.Delta(r.Context(), dp)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, page)
	return nil
}

// backtestViewBody is the body of POST .../views/{view}/backtest.
type backtestViewBody struct {
	From       int64           `json:"from"`
	To         int64           `json:"to"`
	Definition json.RawMessage `json:"definition"`
	Samples    int             `json:"samples"`
	MaxCommits int             `json:"maxCommits"`
	Sizes      *bool           `json:"sizes"`
}

// backtestView answers POST .../views/{view}/backtest (admin) with what
// the saved view, or the proposed definition in "definition", did over
// (from, to].
func (s *Server) backtestView(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	var body backtestViewBody
	p, err := s.viewRequest(r, space, accessAdmin, &body)
	if err != nil {
		return err
	}
	if string(body.Definition) == "null" {
		body.Definition = nil
	}
	if len(body.Definition) > 0 && body.Definition[0] != '{' {
		return badRequest("definition must be a JSON object (a view definition)").With("field", "definition")
	}
	res, err := s.views.Backtest(r.Context(), views.BacktestParams{Space: space, View: r.PathValue("view"),
		Definition: body.Definition, From: body.From, To: body.To, Samples: body.Samples, MaxCommits: body.MaxCommits,
		NoSizes: body.Sizes != nil && !*body.Sizes, Reader: p})
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, res)
	return nil
}

// rotateEpoch answers POST .../rotate-epoch (admin) with the space and
// its new epoch: every view cursor of the space must reset.
func (s *Server) rotateEpoch(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if _, err := s.viewRequest(r, space, accessAdmin, &struct{}{}); err != nil {
		return err
	}
	sp, err := s.views.RotateEpoch(r.Context(), space)
	if err != nil {
		return err
	}
	setSeq(w, sp.Head)
	s.writeJSON(w, r, http.StatusOK, spaceView(sp))
	return nil
}

// viewRequest authorizes a request without query parameters, decodes
// its optional strict JSON body into body (nil: no body is read) and
// returns the principal's Reader.
func (s *Server) viewRequest(r *http.Request, space string, need access, body any) (*auth.Reader, error) {
	p, err := s.readerFor(r, space, need)
	if err != nil {
		return nil, err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return nil, err
	}
	if body != nil {
		if err := decodeOptional(r, body); err != nil {
			return nil, err
		}
	}
	return p, nil
}
