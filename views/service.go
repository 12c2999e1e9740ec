package views

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/internal/seal"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/watch"
)

// Defaults and limits of the service.
const (
	// DefaultSessionTTL is how long a frozen bootstrap session is kept
	// for retries when Options.SessionTTL is 0.
	DefaultSessionTTL = 10 * time.Minute
	// DefaultPageSize and MaxPageSize bound a bootstrap's pageSize.
	DefaultPageSize = 100
	MaxPageSize     = 1000
	// DefaultBudget and MaxBudget bound a delta's commit budget.
	DefaultBudget = 100
	MaxBudget     = 10_000
	// MaxFrozenRecords bounds what a frozen bootstrap materializes; a
	// larger view is bootstrapped with the keyset strategy.
	MaxFrozenRecords = 1_000_000
	// secretName is the server secret the tokens are authenticated with.
	secretName = "views.tokens"
)

// Event is what the service reports to Options.Observe, for metrics.
type Event struct {
	// Kind is "projected" (Changes view changes were sent), "reset"
	// (Reason says why a client must reset), "stream_open" or
	// "stream_close" (a live view stream began or ended).
	Kind    string
	Space   string
	View    string
	Changes int
	Reason  Reason
}

// Options tune a Service. The zero value is usable.
type Options struct {
	// SessionTTL is the retry window of a frozen bootstrap session
	// (default DefaultSessionTTL).
	SessionTTL time.Duration
	// Hub feeds live view streams; nil answers them unavailable.
	Hub *watch.Hub
	// Observe, if set, hears every Event. It must not block.
	Observe func(Event)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives operational logs (nil = slog.Default()).
	Logger *slog.Logger
}

// Service keeps the views of every space and serves their sync: it is
// safe for concurrent use.
type Service struct {
	log  *changelog.Log
	st   store.Store
	opts Options

	secret *seal.Secret // the tokens' server secret, read on first use

	mu      sync.Mutex
	parsed  map[string]*Definition // by space/name, with the stored JSON; guarded by mu
	raws    map[string][]byte      // guarded by mu
	schemas map[string]schemaEntry // by space; guarded by mu

	feeds feeds
	// catchUps counts the store reads of streams behind their feed's
	// tail (tests read it).
	catchUps atomic.Int64
}

// schemaEntry is a space's type definition hashes at one schema version.
type schemaEntry struct {
	version int64
	hashes  map[string]string
}

// New returns a Service over the log.
func New(lg *changelog.Log, opts Options) *Service {
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Service{log: lg, st: lg.Store(), opts: opts, secret: seal.NewSecret(lg.Store(), secretName),
		parsed: map[string]*Definition{}, raws: map[string][]byte{}, schemas: map[string]schemaEntry{}}
	s.feeds.init(s)
	return s
}

// SessionTTL returns the frozen sessions' retry window.
func (s *Service) SessionTTL() time.Duration { return s.opts.SessionTTL }

func (s *Service) now() time.Time { return s.opts.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) observe(ev Event) {
	if s.opts.Observe != nil {
		s.opts.Observe(ev)
	}
}

// reset returns the reset_required answer for reason and reports it.
func (s *Service) reset(space, view string, reason Reason, format string, args ...any) error {
	s.observe(Event{Kind: "reset", Space: space, View: view, Reason: reason})
	return resetProblem(reason, format, args...)
}

// codec returns the token codec of one view, reading the server secret
// on first use.
func (s *Service) codec(ctx context.Context, space, view string) (codec, error) {
	sec, err := s.secret.Get(ctx)
	if err != nil {
		return codec{}, err
	}
	return newCodec(sec, space, view), nil
}

// View is a saved view as the API shows it.
type View struct {
	Name string `json:"name"`
	Spec
	FilterSignature string    `json:"filterSignature"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

func viewOf(d *Definition, updated time.Time) View {
	return View{Name: d.Name(), Spec: d.Spec(), FilterSignature: d.Signature(), UpdatedAt: updated}
}

// Put validates and saves the view name of a space and reports whether
// it created it. Live streams of a changed view end with a reset.
func (s *Service) Put(ctx context.Context, space, name string, raw []byte) (View, bool, error) {
	if _, err := s.log.Space(ctx, space); err != nil {
		return View{}, false, err
	}
	d, err := Parse(name, raw)
	if err != nil {
		return View{}, false, err
	}
	body, err := jsonMarshal(d.Spec())
	if err != nil {
		return View{}, false, err
	}
	updated := s.now()
	created, err := s.st.DefinitionPut(ctx, space, store.DefView, store.Definition{Name: name, Def: body, UpdatedAt: updated})
	if err != nil {
		return View{}, false, fmt.Errorf("put view: %w", err)
	}
	s.remember(space, name, body, d)
	s.feeds.changed(space)
	return viewOf(d, updated), created, nil
}

// Get returns the view name of a space (not_found if absent).
func (s *Service) Get(ctx context.Context, space, name string) (View, error) {
	d, updated, err := s.definition(ctx, space, name)
	if err != nil {
		return View{}, err
	}
	return viewOf(d, updated), nil
}

// List returns a space's views ordered by name.
func (s *Service) List(ctx context.Context, space string) ([]View, error) {
	if _, err := s.log.Space(ctx, space); err != nil {
		return nil, err
	}
	defs, err := s.st.DefinitionList(ctx, space, store.DefView)
	if err != nil {
		return nil, fmt.Errorf("list views: %w", err)
	}
	out := make([]View, 0, len(defs))
	for _, sd := range defs {
		d, err := s.parse(space, sd)
		if err != nil {
			return nil, err
		}
		out = append(out, viewOf(d, sd.UpdatedAt))
	}
	return out, nil
}

// Delete removes the view name of a space (not_found if absent). Its live
// streams end; its cursors answer not_found from then on.
func (s *Service) Delete(ctx context.Context, space, name string) error {
	if !validName(name) {
		return problem.Param("view", "%q is not a valid view name", name)
	}
	if _, err := s.log.Space(ctx, space); err != nil {
		return err
	}
	err := s.st.DefinitionDelete(ctx, space, store.DefView, name)
	if errors.Is(err, store.ErrNotFound) {
		return viewNotFound(space, name)
	}
	if err != nil {
		return fmt.Errorf("delete view: %w", err)
	}
	s.forget(space, name)
	s.feeds.changed(space)
	return nil
}

func validName(name string) bool { return changelog.ValidTypeName(name) }

func viewNotFound(space, name string) error {
	return problem.New(problem.NotFound, "view %q not found in space %q", name, space)
}

// definition loads and parses a saved view, reusing the parse of an
// unchanged definition.
func (s *Service) definition(ctx context.Context, space, name string) (*Definition, time.Time, error) {
	if !validName(name) {
		return nil, time.Time{}, problem.Param("view", "%q is not a valid view name", name)
	}
	sd, err := s.st.DefinitionGet(ctx, space, store.DefView, name)
	if errors.Is(err, store.ErrNotFound) {
		if _, err := s.log.Space(ctx, space); err != nil {
			return nil, time.Time{}, err
		}
		return nil, time.Time{}, viewNotFound(space, name)
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("get view: %w", err)
	}
	d, err := s.parse(space, sd)
	return d, sd.UpdatedAt, err
}

// parse returns the Definition of a stored view, cached by its bytes.
func (s *Service) parse(space string, sd store.Definition) (*Definition, error) {
	key := space + "/" + sd.Name
	s.mu.Lock()
	d, raw := s.parsed[key], s.raws[key]
	s.mu.Unlock()
	if d != nil && bytes.Equal(raw, sd.Def) {
		return d, nil
	}
	d, err := Parse(sd.Name, sd.Def)
	if err != nil {
		return nil, fmt.Errorf("stored view %s/%s: %w", space, sd.Name, err)
	}
	s.remember(space, sd.Name, sd.Def, d)
	return d, nil
}

func (s *Service) remember(space, name string, raw []byte, d *Definition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parsed[space+"/"+name], s.raws[space+"/"+name] = d, slices.Clone(raw)
}

func (s *Service) forget(space, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.parsed, space+"/"+name)
	delete(s.raws, space+"/"+name)
}

// context returns a view's current context in sp.
func (s *Service) context(ctx context.Context, sp store.Space, d *Definition) (Context, error) {
	sv, err := s.schemaVersion(ctx, sp, d.Types())
	if err != nil {
		return Context{}, err
	}
	return NewContext(sp.ID, d, sv, sp.Epoch), nil
}

// schemaVersion is the view's schema version: a hash of the stored
// definitions of the types it reads (absent ones included as absent). It
// changes when one of those definitions changes, and only then; changes
// to other types of the space leave it.
func (s *Service) schemaVersion(ctx context.Context, sp store.Space, types []string) (string, error) {
	hashes, err := s.typeHashes(ctx, sp)
	if err != nil {
		return "", err
	}
	parts := make([]string, 0, 2*len(types))
	for _, t := range types {
		parts = append(parts, t, hashes[t])
	}
	return hex.EncodeToString(seal.Digest(parts...)[:8]), nil
}

// typeHashes returns a hash of every type definition of a space, cached
// per schema version (which every type definition change bumps).
func (s *Service) typeHashes(ctx context.Context, sp store.Space) (map[string]string, error) {
	s.mu.Lock()
	e, ok := s.schemas[sp.ID]
	s.mu.Unlock()
	if ok && e.version == sp.SchemaVersion {
		return e.hashes, nil
	}
	tds, err := s.st.TypeDefList(ctx, sp.ID)
	if err != nil {
		return nil, fmt.Errorf("list types: %w", err)
	}
	hashes := make(map[string]string, len(tds))
	for _, td := range tds {
		hashes[td.Type] = hex.EncodeToString(seal.Digest(string(td.Def))[:8])
	}
	// Cache only what certainly belongs to this version: the list may
	// have seen a later change.
	if again, err := s.st.SpaceGet(ctx, sp.ID); err == nil && again.SchemaVersion == sp.SchemaVersion {
		s.mu.Lock()
		s.schemas[sp.ID] = schemaEntry{version: sp.SchemaVersion, hashes: hashes}
		s.mu.Unlock()
	}
	return hashes, nil
}

// authorize refuses a reader that may not read every type of the view:
// it asks the reader's one rule (auth) about each type.
func authorize(d *Definition, r Reader) error {
	for _, t := range d.Types() {
		if !r.CanReadTypes([]string{t}) {
			return problem.New(problem.Forbidden, "token may not read type %q, which view %q reads", t, d.Name())
		}
	}
	return nil
}

// load returns an authorized view with its space and current context.
func (s *Service) load(ctx context.Context, space, name string, r Reader) (*Definition, store.Space, Context, error) {
	d, _, err := s.definition(ctx, space, name)
	if err != nil {
		return nil, store.Space{}, Context{}, err
	}
	if err := authorize(d, r); err != nil {
		return nil, store.Space{}, Context{}, err
	}
	sp, err := s.log.Space(ctx, space)
	if err != nil {
		return nil, store.Space{}, Context{}, err
	}
	c, err := s.context(ctx, sp, d)
	return d, sp, c, err
}

// RotateEpoch gives a space a new epoch: every view cursor and bootstrap
// token of the space then answers epoch_changed, and its live view
// streams end with that reset.
func (s *Service) RotateEpoch(ctx context.Context, space string) (store.Space, error) {
	if _, err := s.log.Space(ctx, space); err != nil {
		return store.Space{}, err
	}
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		return store.Space{}, fmt.Errorf("new epoch: %w", err)
	}
	sp, err := s.st.SpaceEpochRotate(ctx, space, hex.EncodeToString(b))
	if err != nil {
		return store.Space{}, fmt.Errorf("rotate epoch: %w", err)
	}
	s.feeds.changed(space)
	return sp, nil
}
