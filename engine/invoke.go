package engine

import (
	"context"
	"time"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// Invoke runs the function f once for the delivery d of space on the
// causing commit c, through the path the engine's delivery attempts
// take: the same HTTP client (which never follows a redirect), the same
// timeout (t's delivery timeout, else f's, else the default; t may be nil
// for a dry run), the same cause-token key cache and the same clock
// (in.Now is set from it). Nothing is recorded: manual runs and dry runs
// use it. A webhook's transport failure, non-2xx answer or refused
// answer is a *functions.CallError; an in-process function's error is
// returned as the function raised it.
func (e *Engine) Invoke(ctx context.Context, space string, t *triggers.Trigger, f *functions.Function, d causality.Effect, c *store.Commit, in functions.Input) ([]changelog.Mutation, error) {
	if t == nil {
		t = &triggers.Trigger{Name: d.Trigger}
	}
	a := &attempt{e: e, space: space, cfg: runConfig{def: t, fn: f}, n: 1, start: time.Now(), c: c,
		d: store.Delivery{ID: d.ID, Space: space, Trigger: d.Trigger, Seq: c.Seq}}
	in.Now = e.now()
	if f.Kind == functions.KindWebhook {
		return a.invokeWebhook(ctx, *c, in)
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout())
	defer cancel()
	return a.callInProcess(ctx, in)
}

// invokeWebhook sends one request and decodes a 2xx answer's actions.
func (a *attempt) invokeWebhook(ctx context.Context, c store.Commit, in functions.Input) ([]changelog.Mutation, error) {
	body, err := functions.BuildRequest(a.d.ID, in.Row, in.Entity, in.Before)
	if err != nil {
		return nil, err
	}
	ans, err := a.send(ctx, c, body)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &functions.CallError{Err: err}
	}
	if ans.Status < 200 || ans.Status > 299 {
		return nil, &functions.CallError{Status: ans.Status}
	}
	ms, err := functions.DecodeResponse(ans.Body)
	if err == nil {
		err = a.cfg.fn.CheckWrites(ms)
	}
	if err != nil {
		return nil, &functions.CallError{Status: ans.Status, Err: err, Refused: true}
	}
	return ms, nil
}
