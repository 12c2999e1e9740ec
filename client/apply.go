package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// Apply actions, as ApplyResult.Action says them.
const (
	ApplyCreated   = "created"
	ApplyChanged   = "changed"
	ApplyUnchanged = "unchanged"
	ApplyDeleted   = "deleted"
)

// Definitions are definitions by section ("types", "functions",
// "triggers", "views") and name: the body of an apply and the answer of
// an export. A definition is its JSON, as PUT takes it.
type Definitions map[string]map[string]json.RawMessage

// ApplyParams are the options of an apply.
type ApplyParams struct {
	// Prune deletes the stored definitions of the sections given that
	// the document no longer declares.
	Prune bool
	// DryRun only reports what would happen.
	DryRun bool
}

// ApplyResult is what an apply did, or would do, to one definition.
// Before and After are the definitions as GET shows them (never a
// secret's value): Before for a change or deletion, After for a creation
// or change.
type ApplyResult struct {
	Kind     string          `json:"kind"`
	Name     string          `json:"name"`
	Action   string          `json:"action"`
	Before   json.RawMessage `json:"before,omitempty"`
	After    json.RawMessage `json:"after,omitempty"`
	Warnings []string        `json:"warnings,omitempty"`
}

// ApplyAnswer answers Apply: one result per definition, in apply order
// (types, functions, views, triggers, then deletions in reverse).
type ApplyAnswer struct {
	DryRun  bool          `json:"dryRun"`
	Results []ApplyResult `json:"results"`
}

// Apply saves the definitions of doc at once (POST .../apply, admin):
// every one is validated before any is written, so a bad one applies
// nothing (its *Error's details name the section, name and field);
// identical definitions are reported unchanged and not written. A dry
// run writes nothing and is retried like a GET.
func (s *Space) Apply(ctx context.Context, doc Definitions, p ApplyParams) (ApplyAnswer, error) {
	body := map[string]any{"prune": p.Prune, "dryRun": p.DryRun}
	for sec, defs := range doc {
		body[sec] = defs
	}
	cl := send(http.MethodPost, s.path("apply"), body)
	cl.retry = p.DryRun
	var ans ApplyAnswer
	_, err := s.c.callJSON(ctx, cl, &ans)
	return ans, err
}

// Export returns the space's definitions as an apply document (GET
// .../apply, admin): applied back, it changes nothing. Secret values are
// never included; a webhook secret read from the environment shows as
// {"fromEnv": NAME}.
func (s *Space) Export(ctx context.Context) (Definitions, error) {
	var doc Definitions
	_, err := s.c.callJSON(ctx, get(s.path("apply"), nil), &doc)
	return doc, err
}
