package server

import (
	"context"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/triggers"
)

// definitionScopes knows, for one request, which entity types each
// trigger and function of a space touches, so auth can say whether a
// principal may see a definition, its deliveries or its stances.
type definitionScopes struct {
	writes   map[string][]string          // by function name
	triggers map[string]*triggers.Trigger // by name
}

// scopesFor returns the definition scopes rd's checks need: none for a
// reader nothing limits (every check passes without them), else the
// space's, read once.
func (s *Server) scopesFor(ctx context.Context, rd *auth.Reader, space string) (*definitionScopes, error) {
	if rd.UnlimitedEverywhere() {
		return &definitionScopes{}, nil
	}
	return s.definitionScopes(ctx, space)
}

// definitionScopes reads a space's functions and triggers once.
func (s *Server) definitionScopes(ctx context.Context, space string) (*definitionScopes, error) {
	fs, err := s.defs.Functions(ctx, space)
	if err != nil {
		return nil, err
	}
	ts, err := s.defs.Triggers(ctx, space)
	if err != nil {
		return nil, err
	}
	sc := &definitionScopes{writes: make(map[string][]string, len(fs)), triggers: make(map[string]*triggers.Trigger, len(ts))}
	for _, f := range fs {
		sc.writes[f.Name] = f.Writes
	}
	for _, t := range ts {
		sc.triggers[t.Name] = t
	}
	return sc, nil
}

// function is the scope of a function: the types it writes.
func (sc *definitionScopes) function(name string) auth.Scope {
	return auth.Scope{Types: sc.writes[name]}
}

// trigger is the scope of a trigger: the types its change source reads
// (every type when it names none) and the types its function writes. A
// cron trigger reads no entity.
func (sc *definitionScopes) trigger(t *triggers.Trigger) auth.Scope {
	out := auth.Scope{Types: append([]string(nil), sc.writes[t.Function]...)}
	if c := t.Source.Changes; c != nil {
		out.Every = len(c.Types) == 0
		out.Types = append(out.Types, c.Types...)
	}
	return out
}

// triggerNamed is the scope of a trigger by name; a trigger that no
// longer exists (deliveries outlive it) touches every type, so only
// principals limited by nothing see what it left.
func (sc *definitionScopes) triggerNamed(name string) auth.Scope {
	t, ok := sc.triggers[name]
	if !ok {
		return auth.Scope{Every: true}
	}
	return sc.trigger(t)
}
