package server

import (
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/eddy-run/eddy/problem"
)

// Fence timeouts.
const (
	defaultFenceTimeout = 5 * time.Second
	maxFenceTimeout     = 60 * time.Second
)

// fenceParams are the parameters of GET .../fence.
var fenceParams = []string{"seq", "triggers", "timeout"}

// fence answers GET .../fence?seq=N&triggers=a,b&timeout=5s: it waits
// until the named triggers (every enabled one when none is named) have
// evaluated every row <= seq and every delivery those rows caused is
// terminal, or until the timeout. It answers 200 either way:
// {"seq", "done": true} or {"seq", "done": false, "waiting": [...]}.
// Whoever may read the space's changes may ask; it names only triggers
// the principal may see (auth's CanSeeDefinition).
func (s *Server) fence(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	rd, err := s.readerFor(r, space, accessRead)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if err := checkParamsSuggest(q, fenceParams, []string{"triggers"}, map[string]string{"trigger": "triggers"}); err != nil {
		return err
	}
	seq, ok, err := seqParam(q, "seq")
	if err != nil {
		return err
	}
	if !ok {
		return problem.Param("seq", "required: the seq to wait for (a write's Eddy-Seq header)")
	}
	names, err := listValues[string](q, "triggers", nil)
	if err != nil {
		return err
	}
	timeout, err := fenceTimeout(q)
	if err != nil {
		return err
	}
	if err := s.needEngine(); err != nil {
		return err
	}
	sc, err := s.scopesFor(r.Context(), rd, space)
	if err != nil {
		return err
	}
	for _, n := range names {
		if !rd.CanSeeDefinition(sc.triggerNamed(n)) {
			return hiddenDefinition("trigger", n)
		}
	}
	res, err := s.engine.Fence(r.Context(), space, seq, names, timeout)
	if err != nil {
		return err
	}
	res.Waiting = slices.DeleteFunc(res.Waiting, func(n string) bool { return !rd.CanSeeDefinition(sc.triggerNamed(n)) })
	s.writeJSON(w, r, http.StatusOK, res)
	return nil
}

// fenceTimeout parses timeout: a Go duration, default 5s, 0..60s.
func fenceTimeout(q url.Values) (time.Duration, error) {
	if !q.Has("timeout") {
		return defaultFenceTimeout, nil
	}
	v := q.Get("timeout")
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > maxFenceTimeout {
		return 0, problem.Param("timeout", "%q is not a timeout (want a duration from 0s to 60s, such as 5s)", v)
	}
	return d, nil
}
