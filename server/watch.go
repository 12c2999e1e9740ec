package server

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/watch"
)

// entityWatchParams are the parameters of GET .../entities/{type}?watch=1:
// those of a changes watch, except types (the path names the type).
var entityWatchParams = slices.Concat([]string{"watch", "from", "when"},
	slices.DeleteFunc(slices.Clone(changelog.FilterParams), func(p string) bool { return p == "types" }))

// watchParam reads watch: 1 or true streams, 0 or false (or absent) does
// not.
func watchParam(q url.Values) (bool, error) {
	if !q.Has("watch") {
		return false, nil
	}
	switch v := q.Get("watch"); v {
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	default:
		return false, problem.Param("watch", "%q is not a switch (want 1 or 0)", v)
	}
}

// rowFilter reads the filter parameters and when of q into the one
// filter every row-reading path uses (forward pages, history, watch):
// what the reader may read (auth's JudgeRow, and CanReadCommit for the
// rows only their commit can tell), then the compiled when, so a CEL
// expression never even sees a row the token may not read. reader is
// asked for the Reader at each row (a watch stream's follows policy
// changes). The when is judged by the returned Eval (nil without a
// when), bound to ctx and the server's evaluation budget: the caller asks
// its Err after reading.
func (s *Server) rowFilter(ctx context.Context, reader func() *auth.Reader, q url.Values) (changelog.Filter, *predicate.Eval, error) {
	f, err := changelog.ParseFilter(q)
	if err != nil {
		return changelog.Filter{}, nil, err
	}
	visible := func(r *store.Row) bool { return reader().JudgeRow(r) != auth.RowHidden }
	f.Allow = visible
	f.NeedsCommit = func(r *store.Row) bool { return reader().JudgeRow(r) == auth.RowNeedsCommit }
	f.CommitAllow = func(c *store.Commit) bool { return reader().CanReadCommit(c) }
	if !q.Has("when") {
		return f, nil, nil
	}
	when, err := predicate.CompileRow("when", q.Get("when"))
	if err != nil {
		return changelog.Filter{}, nil, err
	}
	ev := when.Evaluator(ctx, s.whenBudget)
	f.Allow = func(r *store.Row) bool { return visible(r) && ev.Allow(r) }
	return f, ev, nil
}

// fixedReader is the reader of a one-shot read.
func fixedReader(rd *auth.Reader) func() *auth.Reader { return func() *auth.Reader { return rd } }

// liveReader is the reader of a watch stream: rd's principal under the
// newest policy of the space this process has loaded (a type definition
// saved through this process loads it at once; one saved through another
// process sharing PostgreSQL, at this process's next request to the
// space). A policy is never older than rd's.
func (s *Server) liveReader(rd *auth.Reader, space string) func() *auth.Reader {
	var cur atomic.Pointer[auth.Reader]
	cur.Store(rd)
	policies := s.auth.Policies()
	return func() *auth.Reader {
		r := cur.Load()
		if pol := policies.Latest(space); pol != nil && pol.Version() > r.Policy().Version() {
			r = auth.NewReader(r.Principal(), pol)
			cur.Store(r)
		}
		return r
	}
}

// watchChanges answers GET .../changes?watch=1: the ndjson stream of the
// space's rows after from (default: the head).
func (s *Server) watchChanges(w http.ResponseWriter, r *http.Request, rd *auth.Reader, space string, q url.Values) error {
	for _, name := range []string{"before", "limit"} {
		if q.Has(name) {
			return problem.Param(name, "a watch stream takes no %s (it runs forward from from)", name)
		}
	}
	f, ev, err := s.rowFilter(r.Context(), s.liveReader(rd, space), q)
	if err != nil {
		return err
	}
	return s.serveWatch(w, r, space, q, f, ev)
}

// watchEntities answers GET .../entities/{type}?watch=1: the changes
// watch with types=[type].
func (s *Server) watchEntities(w http.ResponseWriter, r *http.Request, rd *auth.Reader, space, typ string, q url.Values) error {
	if err := checkParams(q, entityWatchParams, listFilters); err != nil {
		return err
	}
	if err := validType(typ); err != nil {
		return err
	}
	f, ev, err := s.rowFilter(r.Context(), s.liveReader(rd, space), q)
	if err != nil {
		return err
	}
	f.Types = []string{typ}
	return s.serveWatch(w, r, space, q, f, ev)
}

// serveWatch hands a validated watch to the hub. Errors before the first
// frame come back here and are rendered as problems.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, space string, q url.Values, f changelog.Filter, ev *predicate.Eval) error {
	from, hasFrom, err := seqParam(q, "from")
	if err != nil {
		return err
	}
	if !hasFrom {
		from = -1
	}
	if s.hub == nil {
		return problem.New(problem.Unavailable, "watch streams are not enabled on this server")
	}
	p := watch.Params{Space: space, From: from, Filter: f}
	if ev != nil {
		p.Budget = ev
	}
	return s.hub.Serve(w, streamRequest(r, principal(r)), p)
}

// streamRequest returns r with the key its stream counts against (the
// token: watch.Options.MaxStreamsPerKey).
func streamRequest(r *http.Request, p *auth.Principal) *http.Request {
	return r.WithContext(watch.WithKey(r.Context(), p.TokenID))
}
