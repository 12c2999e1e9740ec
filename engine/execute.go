package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
)

// causeTokenTTL is how long a webhook's Eddy-Cause token stays valid.
const causeTokenTTL = time.Hour

// attempt is one run of a delivery.
type attempt struct {
	e     *Engine
	space string
	cfg   runConfig
	d     store.Delivery
	n     int // this attempt's number (1 for the first)
	start time.Time
	c     *store.Commit // the causing commit, if the evaluator handed it over
	// free gives the attempt's concurrency slot back once only an outcome
	// that writes nothing is left to record (settle).
	free func()
}

// execute runs one attempt of a delivery and records its outcome:
// succeeded (with the function's writes, in the same transaction for
// in-process functions), retrying with a backoff, or failed. It returns
// the delivery as stored afterwards. An error means nothing was recorded
// (ErrFenced: the lease or the delivery's status changed). free is
// called, at most once, when the function has returned and the outcome
// left to record writes nothing (see dispatcher.launch).
func (e *Engine) execute(ctx context.Context, space string, cfg runConfig, d store.Delivery, c *store.Commit, free func()) (store.Delivery, error) {
	a := &attempt{e: e, space: space, cfg: cfg, d: d, n: d.Attempts + 1, start: time.Now(), c: c, free: free}
	opts := append(causeLink(c), trace.WithAttributes(
		attribute.String("eddy.space", space), attribute.String("eddy.trigger", d.Trigger),
		attribute.String("eddy.delivery", d.ID), attribute.Int64("eddy.seq", d.Seq), attribute.Int("eddy.attempt", a.n)))
	ctx, span := tracer().Start(ctx, "eddy.delivery", opts...)
	defer span.End()
	res, err := a.run(ctx)
	outcome := string(res.Status)
	if err != nil {
		outcome = "error"
		span.SetStatus(codes.Error, err.Error())
	}
	span.SetAttributes(attribute.String("eddy.outcome", outcome))
	if err == nil {
		e.logOutcome(space, res)
	}
	e.observe(Event{Space: space, Trigger: d.Trigger, Kind: "delivery", Outcome: outcome, Duration: time.Since(a.start)})
	return res, err
}

func (a *attempt) run(ctx context.Context) (store.Delivery, error) {
	if a.cfg.fn == nil {
		return a.fail(ctx, fmt.Sprintf("function %q does not exist", a.cfg.def.Function), 0, false)
	}
	c, err := a.causeCommit(ctx)
	var gone *changelog.HistoryUnavailableError
	if errors.As(err, &gone) {
		return a.fail(ctx, fmt.Sprintf("the causing row %d was pruned", a.d.Seq), 0, true)
	}
	if err != nil {
		return store.Delivery{}, err
	}
	in := a.input(c)
	if a.cfg.fn.Kind == functions.KindWebhook {
		return a.webhook(ctx, c, in)
	}
	ctx2, cancel := context.WithTimeout(ctx, a.timeout())
	ctx2, span := tracer().Start(ctx2, "eddy.function", trace.WithAttributes(
		attribute.String("eddy.function", a.cfg.fn.Name), attribute.String("eddy.function.kind", a.cfg.fn.Kind)))
	ms, err := a.callInProcess(ctx2, in)
	span.End()
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return store.Delivery{}, ctx.Err()
		}
		return a.fail(ctx, err.Error(), 0, false)
	}
	return a.complete(ctx, c, ms)
}

// cause0 returns the causing commit, reading it unless it was handed
// over.
func (a *attempt) causeCommit(ctx context.Context) (store.Commit, error) {
	if a.c != nil && a.c.Seq == a.d.Seq {
		return *a.c, nil
	}
	return a.e.log.Commit(ctx, a.space, a.d.Seq)
}

// callInProcess runs an expr or go function.
func (a *attempt) callInProcess(ctx context.Context, in functions.Input) ([]changelog.Mutation, error) {
	switch a.cfg.fn.Kind {
	case functions.KindExpr:
		return a.cfg.fn.RunExpr(ctx, in)
	case functions.KindGo:
		return a.cfg.fn.RunGo(ctx, a.e.reg, in)
	}
	return nil, fmt.Errorf("function %q has unknown kind %q", a.cfg.fn.Name, a.cfg.fn.Kind)
}

// input is what the function sees: the causing row and the snapshots of
// the delivery's entity in that commit.
func (a *attempt) input(c store.Commit) functions.Input {
	in := functions.Input{Row: c.Row, Trigger: a.d.Trigger, Now: a.e.now()}
	for i := range c.Changes {
		ch := &c.Changes[i]
		if ch.Type == a.d.Entity.Type && ch.ID == a.d.Entity.ID {
			in.Entity, in.Before = ch.After, ch.Before
		}
	}
	return in
}

// timeout bounds one attempt: the trigger's delivery timeout, else the
// function's, else functions.DefaultTimeout.
func (a *attempt) timeout() time.Duration {
	if t := time.Duration(a.cfg.def.Delivery.Timeout); t > 0 {
		return t
	}
	if a.cfg.fn != nil && a.cfg.fn.Timeout > 0 {
		return a.cfg.fn.Timeout
	}
	return functions.DefaultTimeout
}

// cause returns the delivery as the causality package sees it.
func (a *attempt) cause(c store.Commit) causality.Effect {
	return causality.Effect{Trigger: a.d.Trigger, ID: a.d.ID, Cause: causality.CauseOf(&c)}
}

// complete records success. With actions, they are written atomically
// with the delivery's completion; a rejected action rolls the writes
// back and the attempt fails instead.
func (a *attempt) complete(ctx context.Context, c store.Commit, ms []changelog.Mutation) (store.Delivery, error) {
	if len(ms) == 0 {
		return a.settle(ctx, a.succeeded())
	}
	var final store.DeliveryUpdate
	_, err := a.e.log.Write(ctx, changelog.WriteRequest{
		Space: a.space, Mutations: ms, Atomic: true,
		Provenance: a.cause(c).Provenance(a.d.ID, traceparent(ctx)),
		Effects: func(ctx context.Context, tx store.WriteTx, res changelog.WriteResult) error {
			final = a.succeeded()
			if r := firstRejected(res.Receipts); r != nil {
				final = a.failure(rejectionText(r), 0, false)
			}
			return tx.DeliveryComplete(ctx, final)
		},
	})
	if err != nil {
		return store.Delivery{}, err
	}
	return a.applied(final), nil
}

// fail records a failed attempt: retrying after a backoff (at least
// retryAfter), or failed when permanent or out of attempts.
func (a *attempt) fail(ctx context.Context, reason string, retryAfter time.Duration, permanent bool) (store.Delivery, error) {
	return a.settle(ctx, a.failure(reason, retryAfter, permanent))
}

// settle records u, the attempt's outcome, which writes nothing: the
// function is done, so its concurrency slot is freed first.
func (a *attempt) settle(ctx context.Context, u store.DeliveryUpdate) (store.Delivery, error) {
	if a.free != nil {
		a.free()
	}
	return a.update(ctx, u)
}

// update records u through the engine's shared delivery transactions
// and returns the delivery as it left it.
func (a *attempt) update(ctx context.Context, u store.DeliveryUpdate) (store.Delivery, error) {
	if err := a.e.completions.update(ctx, u); err != nil {
		return store.Delivery{}, err
	}
	return a.applied(u), nil
}

func (a *attempt) base(status store.DeliveryStatus) store.DeliveryUpdate {
	return store.DeliveryUpdate{
		Space: a.space, ID: a.d.ID, Epoch: a.cfg.epoch, From: store.OpenDeliveryStatuses,
		Status: status, Attempts: a.n,
	}
}

func (a *attempt) succeeded() store.DeliveryUpdate { return a.base(store.DeliverySucceeded) }

func (a *attempt) failure(reason string, retryAfter time.Duration, permanent bool) store.DeliveryUpdate {
	del := a.cfg.def.Delivery
	if permanent || a.n >= max(del.MaxAttempts, 1) {
		u := a.base(store.DeliveryFailed)
		u.LastError = reason
		return u
	}
	u := a.base(store.DeliveryRetrying)
	u.LastError = reason
	wait := max(functions.Backoff(a.n, time.Duration(del.Backoff.Initial), time.Duration(del.Backoff.Max), nil), retryAfter)
	u.NextAttemptAt = a.e.now().Add(wait)
	return u
}

// applied returns the delivery as u left it.
func (a *attempt) applied(u store.DeliveryUpdate) store.Delivery {
	d := a.d
	d.Status, d.Attempts, d.LastError, d.NextAttemptAt = u.Status, u.Attempts, u.LastError, u.NextAttemptAt
	d.UpdatedAt = a.e.now()
	return d
}

// firstRejected returns the rejection that failed the delivery's atomic
// write: the rejected receipt that is not a rollback of the others.
func firstRejected(rs []store.Receipt) *store.Receipt {
	var first *store.Receipt
	for i := range rs {
		if rs[i].Status != store.ReceiptRejected {
			continue
		}
		if rs[i].Reason == nil || !strings.HasPrefix(rs[i].Reason.Message, changelog.AtomicRollback) {
			return &rs[i]
		}
		if first == nil {
			first = &rs[i]
		}
	}
	return first
}

func rejectionText(r *store.Receipt) string {
	if r.Reason == nil {
		return "an action was rejected"
	}
	return fmt.Sprintf("action rejected: %s: %s", r.Reason.Code, r.Reason.Message)
}

// webhook marks the delivery running, then sends the signed request
// with the delivery's cause token and records what the answer means.
// The mark comes first: a delivery discarded, reset or fenced (its lease
// released) before it is refused, and such a delivery is never sent.
func (a *attempt) webhook(ctx context.Context, c store.Commit, in functions.Input) (store.Delivery, error) {
	body, err := functions.BuildRequest(a.d.ID, in.Row, in.Entity, in.Before)
	if err != nil {
		return a.fail(ctx, err.Error(), 0, true)
	}
	running := a.base(store.DeliveryRunning)
	running.From = []store.DeliveryStatus{store.DeliveryPending, store.DeliveryRetrying, store.DeliveryRunning}
	running.LastError = a.d.LastError
	if _, err := a.update(ctx, running); err != nil {
		// Fenced: the lease or the delivery moved; it is not this
		// process's to send.
		return store.Delivery{}, err
	}
	ans, err := a.send(ctx, c, body)
	if ctx.Err() != nil {
		return store.Delivery{}, ctx.Err()
	}
	return a.answered(ctx, c, functions.ClassifyAt(ans.Status, ans.Header, err, a.e.now()), ans.Body)
}

// answered records what a webhook's answer means.
func (a *attempt) answered(ctx context.Context, c store.Commit, dec functions.Decision, raw []byte) (store.Delivery, error) {
	switch dec.Outcome {
	case functions.Success:
		ms, err := functions.DecodeResponse(raw)
		if err == nil {
			err = a.cfg.fn.CheckWrites(ms)
		}
		if err != nil {
			return a.fail(ctx, "answer refused: "+err.Error(), 0, true)
		}
		return a.complete(ctx, c, ms)
	case functions.Retry:
		return a.fail(ctx, dec.Reason, dec.RetryAfter, false)
	default:
		return a.fail(ctx, dec.Reason, 0, true)
	}
}

// send posts body to the webhook with the delivery's cause token and
// the trace context.
func (a *attempt) send(ctx context.Context, c store.Commit, body []byte) (functions.Answer, error) {
	token, err := a.causeToken(ctx, c)
	if err != nil {
		a.e.logger.Warn("engine: cause token", "delivery", a.d.ID, "err", err)
	}
	trace := http.Header{}
	traceContext.Inject(ctx, propagation.HeaderCarrier(trace))
	return a.cfg.fn.Post(ctx, a.e.opts.Client, a.d.ID, token, body, trace, a.timeout())
}

// causeToken mints the token a webhook sends back in Eddy-Cause so its
// writes through the API are authored by this delivery.
func (a *attempt) causeToken(ctx context.Context, c store.Commit) (string, error) {
	key, err := a.e.keys.Key(ctx)
	if err != nil {
		return "", err
	}
	return causality.Mint(key, a.cause(c).Claims(a.space, a.e.now().Add(causeTokenTTL)))
}
