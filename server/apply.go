package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sync"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
	"github.com/eddy-run/eddy/views"
)

// applyMu serializes applies, so each plans over what the previous one
// wrote (applies are rare: one lock for the process is enough).
var applyMu sync.Mutex

// Apply actions.
const (
	applyCreated   = "created"
	applyChanged   = "changed"
	applyUnchanged = "unchanged"
	applyDeleted   = "deleted"
)

// applyBody is the body of POST .../apply: definitions by section and
// name. A section that is absent is left alone; one that is present
// (even empty) is pruned with prune.
type applyBody struct {
	Types     *map[string]json.RawMessage `json:"types"`
	Functions *map[string]json.RawMessage `json:"functions"`
	Triggers  *map[string]json.RawMessage `json:"triggers"`
	Views     *map[string]json.RawMessage `json:"views"`
	Prune     bool                        `json:"prune"`
	DryRun    bool                        `json:"dryRun"`
}

// applyResult is what apply did, or would do, to one definition.
// Before and After are the definitions as GET shows them (never a
// secret).
type applyResult struct {
	Kind     string          `json:"kind"`
	Name     string          `json:"name"`
	Action   string          `json:"action"`
	Before   json.RawMessage `json:"before,omitempty"`
	After    json.RawMessage `json:"after,omitempty"`
	Warnings []string        `json:"warnings,omitempty"`
}

// applyAnswer answers POST .../apply.
type applyAnswer struct {
	DryRun  bool          `json:"dryRun"`
	Results []applyResult `json:"results"`
}

// defKind is one kind of definition apply manages.
type defKind struct {
	kind    string // type, function, trigger, view
	section string // types, functions, triggers, views
	// parse validates an incoming definition and returns its canonical
	// stored form and its shown form.
	parse func(name string, raw []byte) (canon, shown []byte, err error)
	// shown returns the shown form of a stored definition.
	shown func(name string, stored []byte) ([]byte, error)
	// list returns the stored definitions by name.
	list func(ctx context.Context, space string) (map[string][]byte, error)
	put  func(ctx context.Context, space, name string, raw []byte) ([]string, error)
	del  func(ctx context.Context, space, name string) error
	// warn, if set, says what a change loses that its shown forms hide.
	warn func(name string, canon, stored []byte) []string
}

// defKinds are the kinds in apply order; deletions run in reverse.
func (s *Server) defKinds() []defKind {
	return []defKind{s.typeKind(), s.functionKind(), s.viewKind(), s.triggerKind()}
}

func (s *Server) typeKind() defKind {
	parse := func(name string, raw []byte) ([]byte, []byte, error) {
		if err := validType(name); err != nil {
			return nil, nil, err
		}
		def, err := changelog.ParseTypeDef(raw)
		if err != nil {
			return nil, nil, err
		}
		canon, err := json.Marshal(def)
		return canon, canon, err
	}
	return defKind{
		kind: "type", section: "types", parse: parse,
		shown: func(name string, stored []byte) ([]byte, error) { return stored, nil },
		list: func(ctx context.Context, space string) (map[string][]byte, error) {
			tds, err := s.log.Types(ctx, space)
			out := map[string][]byte{}
			for _, td := range tds {
				out[td.Type] = td.Def
			}
			return out, err
		},
		put: func(ctx context.Context, space, name string, raw []byte) ([]string, error) {
			_, err := s.log.PutType(ctx, space, name, raw)
			return nil, err
		},
		del: s.log.DeleteType,
	}
}

func (s *Server) functionKind() defKind {
	public := func(f *functions.Function) ([]byte, error) { return json.Marshal(f.Public()) }
	return defKind{
		kind: "function", section: "functions",
		parse: func(name string, raw []byte) ([]byte, []byte, error) {
			f, err := s.defs.ParseFunction(name, raw)
			if err != nil {
				return nil, nil, err
			}
			canon, err := json.Marshal(f)
			if err != nil {
				return nil, nil, err
			}
			shown, err := public(f)
			return canon, shown, err
		},
		shown: func(name string, stored []byte) ([]byte, error) {
			f, err := functions.ParseFunction(name, stored)
			if err != nil {
				return nil, err
			}
			return public(f)
		},
		list: s.storedDefinitions(store.DefFunction),
		put: func(ctx context.Context, space, name string, raw []byte) ([]string, error) {
			_, _, err := s.defs.PutFunction(ctx, space, name, raw)
			return nil, err
		},
		del:  s.defs.DeleteFunction,
		warn: secretRemoved,
	}
}

// secretRemoved warns when a change drops a secret set by value: the
// shown forms never carry one, so the diff cannot show it.
func secretRemoved(name string, canon, stored []byte) []string {
	old, err1 := functions.ParseFunction(name, stored)
	f, err2 := functions.ParseFunction(name, canon)
	if err1 != nil || err2 != nil || old.Secret == "" || old.SecretEnv != "" || f.Secret != "" {
		return nil
	}
	return []string{`removes the webhook secret set by value (never shown or exported): declare it as secret: {"fromEnv": NAME} to keep one`}
}

func (s *Server) triggerKind() defKind {
	parse := func(name string, raw []byte) ([]byte, []byte, error) {
		t, err := triggers.ParseTrigger(name, raw)
		if err != nil {
			return nil, nil, err
		}
		canon, err := json.Marshal(t)
		return canon, canon, err
	}
	return defKind{
		kind: "trigger", section: "triggers", parse: parse,
		shown: func(name string, stored []byte) ([]byte, error) {
			_, shown, err := parse(name, stored)
			return shown, err
		},
		list: s.storedDefinitions(store.DefTrigger),
		put: func(ctx context.Context, space, name string, raw []byte) ([]string, error) {
			saved, _, err := s.defs.PutTrigger(ctx, space, name, raw)
			var ws []string
			for _, w := range saved.Warnings {
				ws = append(ws, w.Message)
			}
			return ws, err
		},
		del: s.defs.DeleteTrigger,
	}
}

func (s *Server) viewKind() defKind {
	parse := func(name string, raw []byte) ([]byte, []byte, error) {
		d, err := views.Parse(name, raw)
		if err != nil {
			return nil, nil, err
		}
		canon, err := json.Marshal(d.Spec())
		return canon, canon, err
	}
	return defKind{
		kind: "view", section: "views", parse: parse,
		shown: func(name string, stored []byte) ([]byte, error) {
			_, shown, err := parse(name, stored)
			return shown, err
		},
		list: s.storedDefinitions(store.DefView),
		put: func(ctx context.Context, space, name string, raw []byte) ([]string, error) {
			_, _, err := s.views.Put(ctx, space, name, raw)
			return nil, err
		},
		del: s.views.Delete,
	}
}

// storedDefinitions lists the stored definitions of a kind by name.
func (s *Server) storedDefinitions(kind string) func(ctx context.Context, space string) (map[string][]byte, error) {
	return func(ctx context.Context, space string) (map[string][]byte, error) {
		ds, err := s.log.Store().DefinitionList(ctx, space, kind)
		if err != nil {
			return nil, fmt.Errorf("list %ss: %w", kind, err)
		}
		out := make(map[string][]byte, len(ds))
		for _, d := range ds {
			out[d.Name] = d.Def
		}
		return out, nil
	}
}

// section returns the body's section of a kind (nil when absent).
func (b *applyBody) section(k defKind) *map[string]json.RawMessage {
	switch k.section {
	case "types":
		return b.Types
	case "functions":
		return b.Functions
	case "triggers":
		return b.Triggers
	default:
		return b.Views
	}
}

// applyStep is one planned change.
type applyStep struct {
	k      defKind
	result applyResult
	raw    []byte // the incoming definition (nil for a deletion)
	stored []byte // the stored definition before (nil when new)
}

// applyDefinitions answers POST .../apply (admin): every definition of
// the body is validated before anything is written, so one bad
// definition applies nothing (400 naming its kind, name and field).
// Identical definitions are unchanged and not written; with prune, the
// stored definitions of the sections given that the body no longer
// declares are deleted; with dryRun nothing is written. A write that
// fails midway (the store, a concurrent writer) undoes the writes before
// it, best effort, and answers the failure.
func (s *Server) applyDefinitions(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	var body applyBody
	if err := decodeJSON(r, &body, true); err != nil {
		return err
	}
	if _, err := s.log.Space(r.Context(), space); err != nil {
		return err
	}
	applyMu.Lock()
	defer applyMu.Unlock()
	steps, err := s.planApply(r.Context(), space, &body)
	if err != nil {
		return err
	}
	if !body.DryRun {
		if err := s.runApply(r.Context(), space, steps); err != nil {
			return err
		}
	}
	ans := applyAnswer{DryRun: body.DryRun, Results: make([]applyResult, len(steps))}
	for i, st := range steps {
		ans.Results[i] = st.result
	}
	if err := s.setHead(w, r, space); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}

// planApply validates every definition and decides what happens to each.
func (s *Server) planApply(ctx context.Context, space string, body *applyBody) ([]applyStep, error) {
	var steps, deletions []applyStep
	final := map[string]map[string][]byte{} // kind -> name -> canonical form after the apply
	for _, k := range s.defKinds() {
		stored, err := k.list(ctx, space)
		if err != nil {
			return nil, err
		}
		final[k.kind] = maps.Clone(stored)
		sec := body.section(k)
		if sec == nil {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(*sec)) {
			st, canon, err := planOne(k, name, (*sec)[name], stored[name])
			if err != nil {
				return nil, err
			}
			final[k.kind][name] = canon
			steps = append(steps, st)
		}
		if !body.Prune {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(stored)) {
			if _, kept := (*sec)[name]; kept {
				continue
			}
			shown, err := k.shown(name, stored[name])
			if err != nil {
				return nil, fmt.Errorf("read stored %s %s: %w", k.kind, name, err)
			}
			delete(final[k.kind], name)
			deletions = append(deletions, applyStep{k: k, stored: stored[name],
				result: applyResult{Kind: k.kind, Name: name, Action: applyDeleted, Before: shown}})
		}
	}
	if err := checkTriggerFunctions(final); err != nil {
		return nil, err
	}
	slices.Reverse(deletions) // triggers before the functions they name
	return append(steps, deletions...), nil
}

// planOne validates one incoming definition and compares it with the
// stored one.
func planOne(k defKind, name string, raw, stored []byte) (applyStep, []byte, error) {
	canon, shown, err := k.parse(name, raw)
	if err != nil {
		return applyStep{}, nil, applyProblem(k, name, err)
	}
	st := applyStep{k: k, raw: raw, stored: stored, result: applyResult{Kind: k.kind, Name: name, After: shown}}
	switch {
	case stored == nil:
		st.result.Action = applyCreated
	case sameJSON(canon, stored):
		st.result.Action = applyUnchanged
	default:
		st.result.Action = applyChanged
		if st.result.Before, err = k.shown(name, stored); err != nil {
			return applyStep{}, nil, fmt.Errorf("read stored %s %s: %w", k.kind, name, err)
		}
		if k.warn != nil {
			st.result.Warnings = k.warn(name, canon, stored)
		}
	}
	return st, canon, nil
}

// checkTriggerFunctions refuses an apply after which a trigger would
// name a function that does not exist.
func checkTriggerFunctions(final map[string]map[string][]byte) error {
	for _, name := range slices.Sorted(maps.Keys(final["trigger"])) {
		var t struct {
			Function string `json:"function"`
		}
		if err := json.Unmarshal(final["trigger"][name], &t); err != nil {
			return fmt.Errorf("read trigger %s: %w", name, err)
		}
		if _, ok := final["function"][t.Function]; !ok {
			return problem.New(problem.BadRequest, "trigger %s: function: unknown function %q (declare it, or keep it)", name, t.Function).
				With("section", "triggers").With("name", name).With("field", "function")
		}
	}
	return nil
}

// runApply writes the planned changes in order; on a failure it undoes
// the writes before it, newest first.
func (s *Server) runApply(ctx context.Context, space string, steps []applyStep) error {
	var done []applyStep
	for i := range steps {
		st := &steps[i]
		var err error
		switch st.result.Action {
		case applyUnchanged:
			continue
		case applyDeleted:
			err = st.k.del(ctx, space, st.result.Name)
		default:
			var ws []string
			ws, err = st.k.put(ctx, space, st.result.Name, st.raw)
			st.result.Warnings = append(st.result.Warnings, ws...)
		}
		if err != nil {
			undoErr := s.undoApply(context.WithoutCancel(ctx), space, done)
			return errors.Join(applyProblem(st.k, st.result.Name, err), undoErr)
		}
		done = append(done, *st)
	}
	return nil
}

// undoApply restores what steps changed, newest first.
func (s *Server) undoApply(ctx context.Context, space string, steps []applyStep) error {
	var errs []error
	for _, st := range slices.Backward(steps) {
		var err error
		if st.stored == nil {
			err = st.k.del(ctx, space, st.result.Name)
		} else {
			_, err = st.k.put(ctx, space, st.result.Name, st.stored)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("undo %s %s: %w", st.k.kind, st.result.Name, err))
		}
	}
	return errors.Join(errs...)
}

// applyProblem names the definition a problem is about: its message
// starts with kind and name, and its details carry section and name.
func applyProblem(k defKind, name string, err error) error {
	var pe *problem.Error
	if !errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", k.kind, name, err)
	}
	out := &problem.Error{Code: pe.Code, Message: k.kind + " " + name + ": " + pe.Message, Details: maps.Clone(pe.Details)}
	return out.With("section", k.section).With("name", name)
}

// sameJSON reports whether two JSON documents hold the same value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// exportDefinitions answers GET .../apply (admin) with the space's
// definitions as an apply body: each section maps names to definitions
// as GET shows them (no "name", no secret values), so applying the answer
// back changes nothing.
func (s *Server) exportDefinitions(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	if _, err := s.log.Space(r.Context(), space); err != nil {
		return err
	}
	out := map[string]map[string]json.RawMessage{}
	for _, k := range s.defKinds() {
		stored, err := k.list(r.Context(), space)
		if err != nil {
			return err
		}
		sec := make(map[string]json.RawMessage, len(stored))
		for name, raw := range stored {
			shown, err := k.shown(name, raw)
			if err != nil {
				return fmt.Errorf("read stored %s %s: %w", k.kind, name, err)
			}
			if sec[name], err = withoutKeys(shown, "name", "registered"); err != nil {
				return err
			}
		}
		out[k.section] = sec
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// withoutKeys returns the JSON object b without the given keys.
func withoutKeys(b []byte, keys ...string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode definition: %w", err)
	}
	for _, k := range keys {
		delete(m, k)
	}
	return json.Marshal(m)
}
