package definitions

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"strings"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// RunDeliveryPrefix starts the delivery id of a manual run.
const RunDeliveryPrefix = "run_"

// reasonCausalityCap is details.reason of a run refused by the depth cap.
const reasonCausalityCap = "causality_cap"

// RunResult is what running a trigger's function once wrote. Seq is the
// causing commit (the entity's latest); Depth the depth its rows carry.
// Receipts is empty when the function returned no actions. LastSeq is the
// last seq appended (0 when nothing was).
type RunResult struct {
	Trigger  string          `json:"trigger"`
	Delivery string          `json:"delivery"`
	Seq      int64           `json:"seq"`
	Depth    int             `json:"depth"`
	Receipts []store.Receipt `json:"receipts"`
	LastSeq  int64           `json:"-"`
}

// Run runs the function of the trigger name once on the entity key, as a
// delivery caused by the commit that last changed it, and applies the
// actions in one write authored by the delivery (actor trigger:<name>,
// via trigger, causedBy that commit, depth one more than its). No cursor
// moves. A missing or deleted entity is not_found; a pruned causing
// commit a *changelog.HistoryUnavailableError; a depth past the cap a
// conflict with details.reason "causality_cap" (nothing runs); a failed
// run, an unregistered go handler or a webhook that fails or answers
// non-2xx unprocessable (details.status, details.error).
func (s *Service) Run(ctx context.Context, space, name string, key store.EntityKey, requestID string) (RunResult, error) {
	t, err := s.Trigger(ctx, space, name)
	if err != nil {
		return RunResult{}, err
	}
	f, err := s.Function(ctx, space, t.Function)
	if err != nil {
		return RunResult{}, err
	}
	c, rec, err := s.latestCommit(ctx, space, key)
	if err != nil {
		return RunResult{}, err
	}
	d := causality.Effect{Trigger: name, ID: newRunID(), Cause: causality.CauseOf(&c)}
	if err := checkCap(t, d); err != nil {
		return RunResult{}, err
	}
	in := functions.Input{Row: c.Row, Entity: &rec, Before: beforeOf(c, key), Trigger: name, Now: s.now()}
	ms, err := s.runOnce(ctx, t, f, space, d, &c, in)
	if err != nil {
		return RunResult{}, err
	}
	res := RunResult{Trigger: name, Delivery: d.ID, Seq: c.Seq, Depth: d.Depth(), Receipts: []store.Receipt{}}
	if len(ms) == 0 {
		return res, nil
	}
	w, err := s.log.Write(ctx, changelog.WriteRequest{Space: space, Mutations: ms, Provenance: d.Provenance(requestID, "")})
	if err != nil {
		return RunResult{}, err
	}
	res.Receipts, res.LastSeq = w.Receipts, w.LastSeq
	return res, nil
}

// latestCommit returns the live entity key and the commit that last
// changed it.
func (s *Service) latestCommit(ctx context.Context, space string, key store.EntityKey) (store.Commit, store.Record, error) {
	if key.Type == "" || key.ID == "" {
		return store.Commit{}, store.Record{}, fieldError("entity", "want {\"type\": T, \"id\": ID}")
	}
	rec, err := s.log.Get(ctx, space, key)
	if err != nil {
		return store.Commit{}, store.Record{}, err
	}
	c, err := s.log.Commit(ctx, space, rec.Version)
	return c, rec, err
}

// beforeOf returns the before-image of key in the commit c (nil if c did
// not change it or created it).
func beforeOf(c store.Commit, key store.EntityKey) *store.Record {
	for _, ch := range c.Changes {
		if ch.Type == key.Type && ch.ID == key.ID {
			return ch.Before
		}
	}
	return nil
}

// checkCap refuses a delivery whose depth is past the trigger's cap.
func checkCap(t *triggers.Trigger, d causality.Effect) error {
	if !causality.Exceeds(d.Depth(), causality.DefaultCap, t.CausalityCap) {
		return nil
	}
	limit := causality.Cap(causality.DefaultCap, t.CausalityCap)
	return problem.New(problem.Conflict, "depth %d of a run of trigger %q is past the causality cap %d", d.Depth(), t.Name, limit).
		With("reason", reasonCausalityCap).With("depth", d.Depth()).With("cap", limit).With("trigger", t.Name)
}

// runOnce runs f once on in through the executor (a webhook gets the
// delivery's Eddy-Cause token, like the engine's deliveries) and returns
// its actions.
func (s *Service) runOnce(ctx context.Context, t *triggers.Trigger, f *functions.Function, space string, d causality.Effect, c *store.Commit, in functions.Input) ([]changelog.Mutation, error) {
	if f.Kind == functions.KindGo && !*f.Registered {
		return nil, problem.New(problem.Unprocessable, "go handler %q is not registered in this process", f.Handler).
			With("handler", f.Handler)
	}
	if s.exec == nil {
		return nil, errNoExecutor
	}
	ms, err := s.exec.Invoke(ctx, space, t, f, d, c, in)
	if err != nil {
		return nil, runError(ctx, err)
	}
	return ms, nil
}

// newRunID returns a fresh delivery id: "run_" and 12 base32 characters.
func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	s := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
	return RunDeliveryPrefix + strings.ToLower(s[:12])
}
