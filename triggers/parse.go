package triggers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
)

// The documents ParseTrigger decodes, one level at a time so that every
// error can name its full JSON path. Pointers tell "absent" from zero.
type (
	triggerDoc struct {
		Name         *string         `json:"name"`
		Source       json.RawMessage `json:"source"`
		Function     string          `json:"function"`
		Enabled      *bool           `json:"enabled"`
		Start        json.RawMessage `json:"start"`
		Echo         bool            `json:"echo"`
		Coalesce     bool            `json:"coalesce"`
		CausalityCap int             `json:"causalityCap"`
		CausalBudget int             `json:"causalBudget"`
		Delivery     json.RawMessage `json:"delivery"`
	}
	sourceDoc struct {
		Changes json.RawMessage `json:"changes"`
		Cron    json.RawMessage `json:"cron"`
	}
	changesDoc struct {
		Types         []string `json:"types"`
		Ops           []string `json:"ops"`
		Actors        []string `json:"actors"`
		ExcludeActors []string `json:"excludeActors"`
		When          string   `json:"when"`
	}
	cronDoc struct {
		Schedule string `json:"schedule"`
		Timezone string `json:"timezone"`
		CatchUp  string `json:"catchUp"`
	}
	deliveryDoc struct {
		Ordering    string          `json:"ordering"`
		Concurrency *int            `json:"concurrency"`
		MaxAttempts *int            `json:"maxAttempts"`
		Backoff     json.RawMessage `json:"backoff"`
		Timeout     string          `json:"timeout"`
	}
	backoffDoc struct {
		Initial string `json:"initial"`
		Max     string `json:"max"`
	}
)

// ParseTrigger strictly decodes and validates the body of
// PUT .../triggers/{name}, compiling its CEL and its schedule, and fills
// in the defaults. name comes from the URL. Every error is a bad_request
// *problem.Error whose details.field is the JSON path of the offending
// field (e.g. "source.changes.when"); CEL errors also carry
// details.position {line, column}.
//
// Checks that need storage (the function exists, the trigger graph) are
// the caller's.
func ParseTrigger(name string, raw []byte) (*Trigger, error) {
	if !changelog.ValidTypeName(name) {
		return nil, fieldError("name", "invalid trigger name %q (want [a-z][a-z0-9-]*(.[a-z0-9-]+)*)", name)
	}
	var doc triggerDoc
	if err := decodeStrict(raw, "", &doc); err != nil {
		return nil, err
	}
	if doc.Name != nil && *doc.Name != name {
		return nil, fieldError("name", "body names %q but the URL names %q", *doc.Name, name)
	}
	t := &Trigger{Name: name, Function: doc.Function, Enabled: true,
		Echo: doc.Echo, Coalesce: doc.Coalesce, CausalityCap: doc.CausalityCap, CausalBudget: doc.CausalBudget}
	if doc.Enabled != nil {
		t.Enabled = *doc.Enabled
	}
	steps := []func() error{
		func() error { return parseSource(doc.Source, &t.Source) },
		func() error { return checkFunction(t.Function) },
		func() error { return parseStart(doc.Start, &t.Start) },
		func() error { return checkCap(t.CausalityCap) },
		func() error { return checkBudget(t.CausalBudget) },
		func() error { return parseDelivery(doc.Delivery, &t.Delivery) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func checkFunction(name string) error {
	if name == "" {
		return fieldError("function", "required")
	}
	if !changelog.ValidTypeName(name) {
		return fieldError("function", "invalid function name %q", name)
	}
	return nil
}

func checkCap(c int) error {
	if c < 0 || c > MaxCausalityCap {
		return fieldError("causalityCap", "must be 1..%d (0 or absent: the space default), not %d", MaxCausalityCap, c)
	}
	return nil
}

func checkBudget(b int) error {
	if b < 0 || b > MaxCausalBudget {
		return fieldError("causalBudget", "must be 1..%d (0 or absent: the space default), not %d", MaxCausalBudget, b)
	}
	return nil
}

func parseStart(raw json.RawMessage, s *Start) error {
	*s = Start{Policy: StartHead}
	if !present(raw) {
		return nil
	}
	if err := s.UnmarshalJSON(raw); err != nil {
		return fieldError("start", "%v", err)
	}
	return nil
}

func parseSource(raw json.RawMessage, s *Source) error {
	if !present(raw) {
		return fieldError("source", "required: {\"changes\": {...}} or {\"cron\": {...}}")
	}
	var doc sourceDoc
	if err := decodeStrict(raw, "source", &doc); err != nil {
		return err
	}
	switch {
	case present(doc.Changes) && present(doc.Cron):
		return fieldError("source", "exactly one of changes and cron, not both")
	case present(doc.Changes):
		c, err := parseChanges(doc.Changes)
		s.Changes = c
		return err
	case present(doc.Cron):
		c, err := parseCron(doc.Cron)
		s.Cron = c
		return err
	}
	return fieldError("source", "exactly one of changes and cron is required")
}

func parseChanges(raw json.RawMessage) (*ChangeSource, error) {
	var doc changesDoc
	if err := decodeStrict(raw, "source.changes", &doc); err != nil {
		return nil, err
	}
	c := &ChangeSource{When: doc.When}
	var err error
	if c.Types, err = nameList("source.changes.types", doc.Types, checkType); err != nil {
		return nil, err
	}
	if c.Ops, err = nameList("source.changes.ops", doc.Ops, checkOp); err != nil {
		return nil, err
	}
	if c.Actors, err = nameList("source.changes.actors", doc.Actors, checkActor); err != nil {
		return nil, err
	}
	if c.ExcludeActors, err = nameList("source.changes.excludeActors", doc.ExcludeActors, checkActor); err != nil {
		return nil, err
	}
	if strings.TrimSpace(c.When) != "" {
		if c.prg, err = Compile("source.changes.when", c.When); err != nil {
			return nil, err
		}
	} else {
		c.When = ""
	}
	return c, nil
}

// nameList checks every item, then sorts and deduplicates the list.
func nameList(field string, items []string, check func(string) error) ([]string, error) {
	for i, s := range items {
		if err := check(s); err != nil {
			return nil, problem.New(problem.BadRequest, "%s[%d]: %v", field, i, err).With("field", field)
		}
	}
	if len(items) == 0 {
		return nil, nil
	}
	out := slices.Clone(items)
	slices.Sort(out)
	return slices.Compact(out), nil
}

func checkType(s string) error {
	if !changelog.ValidTypeName(s) {
		return fmt.Errorf("invalid type name %q", s)
	}
	return nil
}

func checkOp(s string) error {
	if !knownOps[s] {
		return fmt.Errorf("unknown op %q (want put, patch, delete, link, unlink, merge, split, fire or park)", s)
	}
	return nil
}

func checkActor(s string) error {
	if s == "" || len(s) > changelog.MaxNameLen || strings.ContainsAny(s, " \t\r\n,") {
		return fmt.Errorf("invalid actor %q", s)
	}
	return nil
}

func parseCron(raw json.RawMessage) (*CronSource, error) {
	var doc cronDoc
	if err := decodeStrict(raw, "source.cron", &doc); err != nil {
		return nil, err
	}
	var cu CatchUp
	if doc.CatchUp != "" {
		if err := cu.UnmarshalText([]byte(doc.CatchUp)); err != nil {
			return nil, fieldError("source.cron.catchUp", "%v", err)
		}
	}
	return newCronSource(doc.Schedule, doc.Timezone, cu)
}

func parseDelivery(raw json.RawMessage, d *DeliveryPolicy) error {
	*d = DeliveryPolicy{
		Ordering: OrderingEntity, Concurrency: DefaultConcurrency, MaxAttempts: DefaultMaxAttempts,
		Backoff: Backoff{Initial: Duration(DefaultBackoffInitial), Max: Duration(DefaultBackoffMax)},
	}
	if !present(raw) {
		return nil
	}
	var doc deliveryDoc
	if err := decodeStrict(raw, "delivery", &doc); err != nil {
		return err
	}
	if doc.Ordering != "" {
		if err := d.Ordering.UnmarshalText([]byte(doc.Ordering)); err != nil {
			return fieldError("delivery.ordering", "%v", err)
		}
	}
	if err := intField("delivery.concurrency", doc.Concurrency, MaxConcurrency, &d.Concurrency); err != nil {
		return err
	}
	if err := intField("delivery.maxAttempts", doc.MaxAttempts, MaxAttemptsLimit, &d.MaxAttempts); err != nil {
		return err
	}
	if err := durationField("delivery.timeout", doc.Timeout, &d.Timeout); err != nil {
		return err
	}
	return parseBackoff(doc.Backoff, &d.Backoff)
}

func parseBackoff(raw json.RawMessage, b *Backoff) error {
	if !present(raw) {
		return nil
	}
	var doc backoffDoc
	if err := decodeStrict(raw, "delivery.backoff", &doc); err != nil {
		return err
	}
	if err := durationField("delivery.backoff.initial", doc.Initial, &b.Initial); err != nil {
		return err
	}
	if err := durationField("delivery.backoff.max", doc.Max, &b.Max); err != nil {
		return err
	}
	if b.Initial > b.Max {
		return fieldError("delivery.backoff", "initial %s is longer than max %s", b.Initial, b.Max)
	}
	return nil
}

// intField sets *dst from an optional value that must be 1..max.
func intField(field string, v *int, maxVal int, dst *int) error {
	if v == nil {
		return nil
	}
	if *v < 1 || *v > maxVal {
		return fieldError(field, "must be 1..%d, not %d", maxVal, *v)
	}
	*dst = *v
	return nil
}

// durationField sets *dst from an optional duration string that must be
// positive and at most MaxDuration.
func durationField(field, s string, dst *Duration) error {
	if s == "" {
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fieldError(field, "want a duration such as \"10s\", not %q", s)
	}
	if d <= 0 || d > MaxDuration {
		return fieldError(field, "must be positive and at most %s, not %s", Duration(MaxDuration), s)
	}
	*dst = Duration(d)
	return nil
}

// present reports whether a raw field was given (null counts as absent).
func present(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// decodeStrict decodes one JSON object into v, refusing unknown fields
// and trailing data. Errors name fields under path ("" for the body).
func decodeStrict(raw []byte, path string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return locError(path, "trailing data after the JSON object")
	}
	return nil
}

func jsonError(path string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return locError(path, "must be a JSON object, not %s", te.Value)
		}
		return fieldError(join(path, te.Field), "unexpected JSON %s (want %s)", te.Value, te.Type)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fieldError(join(path, strings.Trim(name, `"`)), "unknown field")
	}
	if errors.Is(err, io.EOF) {
		return locError(path, "empty body: want a JSON object")
	}
	return locError(path, "invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// locError is a fieldError for path, or a plain bad_request for the body.
func locError(path, format string, args ...any) error {
	if path == "" {
		return problem.New(problem.BadRequest, "trigger: %s", fmt.Sprintf(format, args...))
	}
	return fieldError(path, format, args...)
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func fieldError(field, format string, args ...any) *problem.Error {
	return problem.New(problem.BadRequest, "%s: %s", field, fmt.Sprintf(format, args...)).With("field", field)
}
