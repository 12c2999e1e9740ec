package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
)

// Function kinds.
const (
	KindExpr    = "expr"
	KindWebhook = "webhook"
	KindGo      = "go"
)

// Limits of a function definition.
const (
	// MaxCodeLen bounds an expr function's code in bytes.
	MaxCodeLen = 16 << 10
	// MaxURLLen bounds a webhook URL in bytes.
	MaxURLLen = 2048
)

// Webhook timeouts.
var (
	// DefaultTimeout is a webhook's timeout when its definition names none.
	DefaultTimeout = 10 * time.Second
	// MaxTimeout bounds a webhook's timeout.
	MaxTimeout = 15 * time.Minute
)

// kindFields are the fields each kind takes beyond name, kind and writes.
var kindFields = map[string][]string{
	KindExpr:    {"code"},
	KindWebhook: {"url", "secret", "timeout"},
	KindGo:      {"handler", "registered"},
}

// Function is a function definition, as stored under
// PUT .../functions/{name}. Only the fields of its Kind are set. Build one
// with ParseFunction; its JSON (MarshalJSON) is canonical, with defaults
// filled in, and round-trips through ParseFunction.
type Function struct {
	// Name is the function's name (a type name: [a-z][a-z0-9-]*...).
	Name string
	// Kind is KindExpr, KindWebhook or KindGo.
	Kind string
	// Writes are the types the function may write, sorted and distinct.
	Writes []string
	// Code is an expr function's source.
	Code string
	// URL is a webhook's absolute http or https URL.
	URL string
	// Secret is a webhook's signing secret, "whsec_" + base64(key); empty
	// means requests are not signed.
	Secret string
	// SecretEnv, when set, names the environment variable of the server
	// the secret is read from when the definition is saved (a definition's
	// "secret": {"fromEnv": NAME}); ResolveSecret reads it. It is shown,
	// the value never is.
	SecretEnv string
	// Timeout bounds one webhook request.
	Timeout time.Duration
	// Handler names a Go function registered through the library.
	Handler string
	// Registered, for a go function, tells whether this process has
	// registered its handler; nil means not known. It is shown (as
	// "registered") but never stored: ParseFunction accepts and ignores
	// it, so a GET answer can be saved back.
	Registered *bool

	program *ExprProgram
}

// functionJSON is the wire form; pointers tell absent fields from empty ones.
type functionJSON struct {
	Name    *string     `json:"name,omitempty"`
	Kind    string      `json:"kind"`
	Writes  []string    `json:"writes"`
	Code    *string     `json:"code,omitempty"`
	URL     *string     `json:"url,omitempty"`
	Secret  *secretJSON `json:"secret,omitempty"`
	Timeout *string     `json:"timeout,omitempty"`
	Handler *string     `json:"handler,omitempty"`
	// Registered is read-only: shown, ignored on input.
	Registered *bool `json:"registered,omitempty"`
}

// ParseFunction strictly decodes and validates the definition raw of the
// function name. An expr function's code is compiled here, once. Every
// error is a bad_request *problem.Error with details.field naming the
// offending field (and details.position {line, column} for code that does
// not compile). The body may carry "name" only if it equals name.
func ParseFunction(name string, raw []byte) (*Function, error) {
	if !changelog.ValidTypeName(name) {
		return nil, fieldError("name", "invalid function name %q (want [a-z][a-z0-9-]*(.[a-z0-9-]+)*)", name)
	}
	w, err := decodeFunction(raw)
	if err != nil {
		return nil, err
	}
	if w.Name != nil && *w.Name != name {
		return nil, fieldError("name", "%q does not match the function's name %q", *w.Name, name)
	}
	if err := checkKindFields(w); err != nil {
		return nil, err
	}
	f := &Function{Name: name, Kind: w.Kind}
	if f.Writes, err = parseWrites(w.Writes); err != nil {
		return nil, err
	}
	switch f.Kind {
	case KindExpr:
		err = f.parseExpr(w)
	case KindWebhook:
		err = f.parseWebhook(w)
	case KindGo:
		err = f.parseGo(w)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

func decodeFunction(raw []byte) (*functionJSON, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var w functionJSON
	if err := dec.Decode(&w); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, problem.New(problem.BadRequest, "empty body: want a function definition")
		}
		return nil, jsonProblem("function", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, problem.New(problem.BadRequest, "function: trailing data after JSON object")
	}
	return &w, nil
}

// jsonProblem turns a decoding error into a bad_request naming the field.
func jsonProblem(what string, err error) *problem.Error {
	var pe *problem.Error
	if errors.As(err, &pe) {
		return pe // a field's own decoder named the field
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return problem.New(problem.BadRequest, "%s must be a JSON object, not %s", what, te.Value)
		}
		return fieldError(te.Field, "unexpected JSON %s", te.Value)
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fieldError(strings.Trim(name, `"`), "unknown field")
	}
	return problem.New(problem.BadRequest, "%s: invalid JSON: %s", what, strings.TrimPrefix(msg, "json: "))
}

// checkKindFields checks the kind and refuses fields of other kinds.
func checkKindFields(w *functionJSON) error {
	switch {
	case w.Kind == "":
		return fieldError("kind", "required (expr, webhook or go)")
	case kindFields[w.Kind] == nil:
		return fieldError("kind", "unknown kind %q (want expr, webhook or go)", w.Kind)
	}
	present := map[string]bool{
		"code": w.Code != nil, "url": w.URL != nil, "secret": w.Secret != nil,
		"timeout": w.Timeout != nil, "handler": w.Handler != nil, "registered": w.Registered != nil,
	}
	for _, field := range []string{"code", "url", "secret", "timeout", "handler", "registered"} {
		if present[field] && !slices.Contains(kindFields[w.Kind], field) {
			return fieldError(field, "not allowed with kind %q", w.Kind)
		}
	}
	return nil
}

// parseWrites validates the written types and returns them sorted and
// distinct (never nil).
func parseWrites(writes []string) ([]string, error) {
	out := make([]string, 0, len(writes))
	for _, t := range writes {
		if !changelog.ValidTypeName(t) {
			return nil, fieldError("writes", "invalid type name %q", t)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (f *Function) parseExpr(w *functionJSON) error {
	if w.Code == nil || strings.TrimSpace(*w.Code) == "" {
		return fieldError("code", "required (an expr expression)")
	}
	p, err := CompileExpr(*w.Code)
	if err != nil {
		return err
	}
	f.Code, f.program = *w.Code, p
	return nil
}

func (f *Function) parseWebhook(w *functionJSON) error {
	if w.URL == nil || *w.URL == "" {
		return fieldError("url", "required (an absolute http or https URL)")
	}
	if err := checkURL(*w.URL); err != nil {
		return err
	}
	f.URL = *w.URL
	if w.Secret != nil {
		f.SecretEnv = w.Secret.FromEnv
		if w.Secret.FromEnv == "" || w.Secret.Value != "" {
			if _, err := ParseSecret(w.Secret.Value); err != nil {
				return fieldError("secret", "want %q followed by a base64 key, or {\"fromEnv\": NAME}", SecretPrefix)
			}
			f.Secret = w.Secret.Value
		}
	}
	f.Timeout = DefaultTimeout
	if w.Timeout != nil {
		d, err := time.ParseDuration(*w.Timeout)
		if err != nil {
			return fieldError("timeout", "invalid duration %q (want e.g. \"10s\")", *w.Timeout)
		}
		if d <= 0 || d > MaxTimeout {
			return fieldError("timeout", "must be positive and at most %s", MaxTimeout)
		}
		f.Timeout = d
	}
	return nil
}

func checkURL(s string) error {
	if len(s) > MaxURLLen {
		return fieldError("url", "longer than %d bytes", MaxURLLen)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fieldError("url", "invalid URL %q", s)
	case u.Scheme != "http" && u.Scheme != "https":
		return fieldError("url", "scheme must be http or https")
	case u.Host == "" || u.Hostname() == "":
		return fieldError("url", "must be absolute, with a host")
	case u.User != nil:
		return fieldError("url", "must not carry credentials (they would be shown); sign with the secret")
	}
	return nil
}

func (f *Function) parseGo(w *functionJSON) error {
	if w.Handler == nil || *w.Handler == "" {
		return fieldError("handler", "required (the name of a registered Go handler)")
	}
	if !changelog.ValidID(*w.Handler) {
		return fieldError("handler", "invalid handler name %q (want [A-Za-z0-9._:-]{1,128})", *w.Handler)
	}
	f.Handler = *w.Handler
	return nil
}

// MarshalJSON writes the canonical definition: name, kind, writes (always
// a list) and the fields of its kind, with the timeout filled in, plus
// "registered" for a go function whose Registered is set. The secret is
// included; marshal Public() for anything shown to clients.
func (f *Function) MarshalJSON() ([]byte, error) {
	name := f.Name
	w := functionJSON{Name: &name, Kind: f.Kind, Writes: f.Writes}
	if w.Writes == nil {
		w.Writes = []string{}
	}
	switch f.Kind {
	case KindExpr:
		w.Code = &f.Code
	case KindWebhook:
		timeout := f.Timeout.String()
		w.URL, w.Timeout = &f.URL, &timeout
		switch {
		case f.SecretEnv != "":
			w.Secret = &secretJSON{FromEnv: f.SecretEnv, Value: f.Secret}
		case f.Secret != "":
			w.Secret = &secretJSON{Value: f.Secret}
		}
	case KindGo:
		w.Handler, w.Registered = &f.Handler, f.Registered
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes a definition with ParseFunction. The name is the
// receiver's Name if set, else the body's "name".
func (f *Function) UnmarshalJSON(raw []byte) error {
	name := f.Name
	if name == "" {
		var peek struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &peek)
		name = peek.Name
	}
	g, err := ParseFunction(name, raw)
	if err != nil {
		return err
	}
	*f = *g
	return nil
}

// Public returns a copy of f without its secret, to be shown to clients
// (GET answers and listings). It shares the compiled program.
func (f *Function) Public() *Function {
	c := *f
	c.Writes = slices.Clone(f.Writes)
	c.Secret = ""
	return &c
}

// Program returns an expr function's compiled program (nil for other
// kinds).
func (f *Function) Program() *ExprProgram { return f.program }

// CheckWrites returns an error wrapping ErrUndeclaredWrite if an action
// touches a type that f does not declare in its writes.
func (f *Function) CheckWrites(actions []changelog.Mutation) error {
	return CheckWrites(f.Writes, actions)
}

// RunExpr runs an expr function's program (see ExprProgram.Run) and checks
// its actions against the declared writes.
func (f *Function) RunExpr(ctx context.Context, in Input) ([]changelog.Mutation, error) {
	if f.program == nil {
		return nil, fmt.Errorf("function %q is not an expr function", f.Name)
	}
	ms, err := f.program.Run(ctx, in)
	if err != nil {
		return nil, err
	}
	if err := f.CheckWrites(ms); err != nil {
		return nil, err
	}
	return ms, nil
}

// CheckWrites returns an error wrapping ErrUndeclaredWrite, naming the
// action's index, if an action touches a type not in writes. Every entity
// an action names counts (for link and unlink, the source entity: links
// are stored on it).
func CheckWrites(writes []string, actions []changelog.Mutation) error {
	for i := range actions {
		for _, k := range actions[i].Keys() {
			if !slices.Contains(writes, k.Type) {
				return fmt.Errorf("action %d: %w: %q (declared: %s)", i, ErrUndeclaredWrite, k.Type, strings.Join(writes, ", "))
			}
		}
	}
	return nil
}

// ResolveSecret reads a webhook's secret from the environment variable
// SecretEnv names (through getenv), for a definition whose secret is
// {"fromEnv": NAME}; the value must be a valid secret. Other definitions
// are left as they are.
func (f *Function) ResolveSecret(getenv func(string) string) error {
	if f.SecretEnv == "" {
		return nil
	}
	v := getenv(f.SecretEnv)
	if v == "" {
		return fieldError("secret", "environment variable %s is not set on the server", f.SecretEnv)
	}
	if _, err := ParseSecret(v); err != nil {
		return fieldError("secret", "environment variable %s does not hold a secret (want %q followed by a base64 key)", f.SecretEnv, SecretPrefix)
	}
	f.Secret = v
	return nil
}

// secretJSON is a webhook secret on the wire: a string, or
// {"fromEnv": NAME} (stored with the "value" read from it; shown without).
type secretJSON struct {
	Value   string
	FromEnv string
}

// UnmarshalJSON reads a string or {"fromEnv": NAME[, "value": SECRET]}.
func (s *secretJSON) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &s.Value); err == nil {
		return nil
	}
	var o struct {
		FromEnv *string `json:"fromEnv"`
		Value   string  `json:"value"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil || o.FromEnv == nil {
		return fieldError("secret", "want a string or {\"fromEnv\": NAME}")
	}
	if !validEnvName(*o.FromEnv) {
		return fieldError("secret", "fromEnv: %q is not an environment variable name (want [A-Za-z_][A-Za-z0-9_]*)", *o.FromEnv)
	}
	s.FromEnv, s.Value = *o.FromEnv, o.Value
	return nil
}

// MarshalJSON writes a string, or the fromEnv object.
func (s secretJSON) MarshalJSON() ([]byte, error) {
	if s.FromEnv == "" {
		return json.Marshal(s.Value)
	}
	o := struct {
		FromEnv string `json:"fromEnv"`
		Value   string `json:"value,omitempty"`
	}{s.FromEnv, s.Value}
	return json.Marshal(o)
}

// validEnvName reports whether s is a portable environment variable name.
func validEnvName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
