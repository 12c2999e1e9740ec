package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Function kinds.
const (
	FunctionExpr    = "expr"
	FunctionWebhook = "webhook"
	FunctionGo      = "go"
)

// Function is a function definition: the body of PUT .../functions/{name}
// and the answer of GET (never with its secret). Only the fields of its
// Kind are set.
type Function struct {
	// Name comes from the URL; a body may repeat it.
	Name string `json:"name,omitempty"`
	// Kind is FunctionExpr, FunctionWebhook or FunctionGo.
	Kind string `json:"kind"`
	// Writes are the types the function may write.
	Writes []string `json:"writes,omitempty"`
	// Code is an expr function's program.
	Code string `json:"code,omitempty"`
	// URL, Secret ("whsec_" + base64 key, never shown) and Timeout (a Go
	// duration such as "10s") configure a webhook.
	URL     string `json:"url,omitempty"`
	Secret  string `json:"-"`
	Timeout string `json:"timeout,omitempty"`
	// SecretFromEnv names the server's environment variable the secret
	// is read from when the function is saved ("secret": {"fromEnv":
	// NAME}); GET shows it, never the value. Set Secret or SecretFromEnv.
	SecretFromEnv string `json:"-"`
	// Handler names a go function registered through the library;
	// Registered (shown, ignored on input) says whether the answering
	// process has registered it.
	Handler    string `json:"handler,omitempty"`
	Registered *bool  `json:"registered,omitempty"`
}

// functionWire is Function with its secret as the wire has it.
type functionWire struct {
	functionFields
	Secret json.RawMessage `json:"secret,omitempty"`
}

// functionFields is Function without its methods.
type functionFields Function

// secretFromEnv is the wire form of Function.SecretFromEnv.
type secretFromEnv struct {
	FromEnv string `json:"fromEnv"`
}

// MarshalJSON writes the secret as a string or {"fromEnv": NAME}.
func (f Function) MarshalJSON() ([]byte, error) {
	w := functionWire{functionFields: functionFields(f)}
	var err error
	switch {
	case f.SecretFromEnv != "":
		w.Secret, err = json.Marshal(secretFromEnv{f.SecretFromEnv})
	case f.Secret != "":
		w.Secret, err = json.Marshal(f.Secret)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the secret as a string or {"fromEnv": NAME}.
func (f *Function) UnmarshalJSON(b []byte) error {
	var w functionWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*f = Function(w.functionFields)
	if len(w.Secret) == 0 || string(w.Secret) == "null" {
		return nil
	}
	if err := json.Unmarshal(w.Secret, &f.Secret); err == nil {
		return nil
	}
	var env secretFromEnv
	if err := json.Unmarshal(w.Secret, &env); err != nil {
		return fmt.Errorf("function secret: want a string or {\"fromEnv\": NAME}: %w", err)
	}
	f.SecretFromEnv = env.FromEnv
	return nil
}

// PutFunction saves the function name (admin). def is a Function, or
// anything that encodes to a function definition. created reports a new
// function (201). A bad definition is 400 with details.field (and
// details.position for code that does not compile).
func (s *Space) PutFunction(ctx context.Context, name string, def any) (f Function, created bool, err error) {
	cl := send(http.MethodPut, s.path("functions", name), def)
	cl.retry = true // a PUT replaces: repeating it changes nothing more
	ans, err := s.c.callJSON(ctx, cl, &f)
	if err != nil {
		return Function{}, false, err
	}
	return f, ans.status == http.StatusCreated, nil
}

// GetFunction returns the function name.
func (s *Space) GetFunction(ctx context.Context, name string) (Function, error) {
	var f Function
	_, err := s.c.callJSON(ctx, get(s.path("functions", name), nil), &f)
	return f, err
}

// Functions returns the space's functions.
func (s *Space) Functions(ctx context.Context) ([]Function, error) {
	var out struct {
		Functions []Function `json:"functions"`
	}
	_, err := s.c.callJSON(ctx, get(s.path("functions"), nil), &out)
	return out.Functions, err
}

// DeleteFunction removes the function name (409 conflict while a
// trigger names it).
func (s *Space) DeleteFunction(ctx context.Context, name string) error {
	_, err := s.c.do(ctx, send(http.MethodDelete, s.path("functions", name), nil))
	return err
}

// TestParams is the body of a dry run.
type TestParams struct {
	// Seq is the committed row to run the function on.
	Seq int64 `json:"seq"`
	// Trigger, if set, is the name the expr variable trigger holds.
	Trigger string `json:"trigger,omitempty"`
}

// TestResult is what a dry run found: the actions an expr or go
// function would apply, or the request a webhook would be sent. Nothing
// is written or sent. Stance, when the trigger named in TestParams is a
// saved change trigger, is its live stance on the row (StanceError the
// error of an "error" stance).
type TestResult struct {
	Function    string          `json:"function"`
	Kind        string          `json:"kind"`
	Seq         int64           `json:"seq"`
	Stance      string          `json:"stance,omitempty"`
	StanceError string          `json:"stanceError,omitempty"`
	Actions     []Mutation      `json:"actions,omitempty"`
	Request     *WebhookRequest `json:"request,omitempty"`
}

// WebhookRequest is the request a webhook delivery would send (the
// signature is a placeholder).
type WebhookRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// TestFunction dry-runs the function name on the row p.Seq (admin). A
// failing run is 422 unprocessable (details.position for expr).
func (s *Space) TestFunction(ctx context.Context, name string, p TestParams) (TestResult, error) {
	var res TestResult
	cl := send(http.MethodPost, s.path("functions", name, "test"), p)
	cl.retry = true // a dry run writes nothing
	_, err := s.c.callJSON(ctx, cl, &res)
	return res, err
}
