package definitions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// TestParams name what a dry run runs a function on.
type TestParams struct {
	// Seq is the committed row to run on (1..head, above the horizon).
	Seq int64 `json:"seq"`
	// Trigger, if set, is the name the expr variable trigger holds. The
	// trigger need not exist; when it is a saved change trigger, the
	// result carries its stance on the row.
	Trigger string `json:"trigger,omitempty"`
}

// TestResult is what a dry run found. Actions is set for an expr or go
// function (never nil: the mutations it would apply, in order); Request
// for a webhook (what would be sent). Stance, when TestParams.Trigger
// names a saved change trigger, is its live stance on the row (the one
// judge, triggers.Judge), and StanceError the error of an error stance.
type TestResult struct {
	Function    string               `json:"function"`
	Kind        string               `json:"kind"`
	Seq         int64                `json:"seq"`
	Stance      triggers.Stance      `json:"stance,omitempty"`
	StanceError string               `json:"stanceError,omitempty"`
	Actions     []changelog.Mutation `json:"actions,omitempty"`
	Request     *WebhookRequest      `json:"request,omitempty"`
}

// WebhookRequest is the request a webhook delivery would send. The
// signature is not computed: when the function has a secret, the
// webhook-signature header shows a placeholder.
type WebhookRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// redactedSignature stands in for the signature of a dry run.
const redactedSignature = "v1,<signed with the function's secret when sent>"

// TestFunction dry-runs the function name on the commit at p.Seq: an expr
// function is run and its actions returned (nothing is written); for a
// webhook the request it would be sent is returned (nothing is sent). A
// go function's handler is called like an expr program; one this process
// has not registered is unprocessable with details.handler. A seq outside
// 1..head is a bad_request naming "seq"; a pruned one is a
// *changelog.HistoryUnavailableError. A run that fails, yields something
// other than valid actions, or writes a type it does not declare is
// unprocessable, with details.position {line, column} when an expr
// failure has one.
func (s *Service) TestFunction(ctx context.Context, space, name string, p TestParams) (TestResult, error) {
	f, err := s.Function(ctx, space, name)
	if err != nil {
		return TestResult{}, err
	}
	if p.Trigger != "" && !changelog.ValidTypeName(p.Trigger) {
		return TestResult{}, problem.New(problem.BadRequest, "trigger: %q is not a valid trigger name", p.Trigger).With("field", "trigger")
	}
	if f.Kind == functions.KindGo && !*f.Registered {
		return TestResult{}, problem.New(problem.Unprocessable, "go handler %q is not registered in this process", f.Handler).
			With("handler", f.Handler)
	}
	c, err := s.commitAt(ctx, space, p.Seq)
	if err != nil {
		return TestResult{}, err
	}
	in := functions.Input{Row: c.Row, Trigger: p.Trigger, Now: s.now()}
	if ch := triggers.PrimaryChange(&c); ch != nil {
		in.Entity, in.Before = ch.After, ch.Before
	}
	res := TestResult{Function: name, Kind: f.Kind, Seq: p.Seq}
	t, err := s.judgeRow(ctx, space, p.Trigger, &c, &res)
	if err != nil {
		return TestResult{}, err
	}
	if f.Kind == functions.KindWebhook {
		res.Request, err = webhookRequest(f, p.Seq, in)
		return res, err
	}
	d := causality.Effect{Trigger: p.Trigger, ID: testID(p.Seq), Cause: causality.CauseOf(&c)}
	ms, err := s.runOnce(ctx, t, f, space, d, &c, in)
	if err != nil {
		return TestResult{}, err
	}
	res.Actions = ms
	if res.Actions == nil {
		res.Actions = []changelog.Mutation{}
	}
	return res, nil
}

// judgeRow sets the stance of the saved change trigger name (if any) on
// c and returns that trigger (nil if there is none, or if its saved
// definition no longer parses, as one saved by another version may not:
// the function is then tested alone).
func (s *Service) judgeRow(ctx context.Context, space, name string, c *store.Commit, res *TestResult) (*triggers.Trigger, error) {
	if name == "" {
		return nil, nil
	}
	d, err := s.st.DefinitionGet(ctx, space, store.DefTrigger, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trigger %s: %w", name, err)
	}
	t, err := triggers.ParseTrigger(name, d.Def)
	if err != nil {
		return nil, nil //nolint:nilerr // see the doc comment: no trigger to judge with
	}
	if t.Source.Changes != nil {
		v := triggers.Judge(t, c, triggers.Context{})
		res.Stance, res.StanceError = v.Stance, v.ErrorText()
	}
	return t, nil
}

// testID is the delivery id of a dry run on the row seq.
func testID(seq int64) string { return "test_" + strconv.FormatInt(seq, 10) }

// commitAt returns the commit at seq.
func (s *Service) commitAt(ctx context.Context, space string, seq int64) (store.Commit, error) {
	sp, err := s.log.Space(ctx, space)
	if err != nil {
		return store.Commit{}, err
	}
	if seq < 1 || seq > sp.Head {
		return store.Commit{}, problem.New(problem.BadRequest, "seq: %d is not a committed seq (want 1..%d)", seq, sp.Head).
			With("field", "seq").With("head", sp.Head)
	}
	return s.log.Commit(ctx, space, seq)
}

// webhookRequest builds what a delivery of in to the webhook f would send.
func webhookRequest(f *functions.Function, seq int64, in functions.Input) (*WebhookRequest, error) {
	id := testID(seq)
	body, err := functions.BuildRequest(id, in.Row, in.Entity, in.Before)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if err := functions.SetHeaders(h, "", id, in.Now, body); err != nil {
		return nil, err
	}
	headers := map[string]string{
		"content-type":            "application/json",
		functions.HeaderID:        h.Get(functions.HeaderID),
		functions.HeaderTimestamp: h.Get(functions.HeaderTimestamp),
	}
	if f.Secret != "" {
		headers[functions.HeaderSignature] = redactedSignature
	}
	return &WebhookRequest{Method: http.MethodPost, URL: f.URL, Headers: headers, Body: body}, nil
}

// runError maps a failed run onto the catalogue: unprocessable, with the
// position of an *functions.EvalError. A canceled request stays as is.
func runError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ce *functions.CallError
	if errors.As(err, &ce) {
		return callProblem(ce)
	}
	var ee *functions.EvalError
	if errors.As(err, &ee) {
		return problem.New(problem.Unprocessable, "function failed at line %d, column %d: %s", ee.Line, ee.Column, ee.Message).
			With("position", map[string]int{"line": ee.Line, "column": ee.Column})
	}
	if errors.Is(err, functions.ErrInvalidResult) || errors.Is(err, functions.ErrTooManyActions) ||
		errors.Is(err, functions.ErrUndeclaredWrite) {
		return problem.New(problem.Unprocessable, "function result refused: %s", err.Error())
	}
	return problem.New(problem.Unprocessable, "function failed: %s", err.Error())
}

// callProblem is the unprocessable problem of a webhook call that
// yielded no actions.
func callProblem(ce *functions.CallError) error {
	switch {
	case ce.Refused:
		return problem.New(problem.Unprocessable, "webhook answer refused: %s", ce.Err.Error()).With("error", ce.Err.Error())
	case ce.Err != nil:
		return problem.New(problem.Unprocessable, "webhook failed: %s", ce.Err.Error()).With("error", ce.Err.Error())
	}
	return problem.New(problem.Unprocessable, "webhook answered %d", ce.Status).With("status", ce.Status)
}
