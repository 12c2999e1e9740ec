package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// secretPrefix starts every token secret.
const secretPrefix = "eddy_"

// secretBytes is the entropy of a secret.
const secretBytes = 32

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// secretLen is the length of a secret: the prefix and 32 bytes in
// lowercase unpadded base32.
const secretLen = len(secretPrefix) + 52

// notB32 is 1 for every byte outside lowercase base32 ([a-z2-7]).
var notB32 = func() (t [256]byte) {
	for c := range t {
		if !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			t[c] = 1
		}
	}
	return t
}()

// wellFormed reports whether secret is the prefix and 52 characters of
// [a-z2-7]. It reads every character without branching on any, so its
// time depends on the length alone.
func wellFormed(secret string) bool {
	if len(secret) != secretLen {
		return false
	}
	bad := byte(subtle.ConstantTimeCompare([]byte(secret[:len(secretPrefix)]), []byte(secretPrefix)) ^ 1)
	for i := len(secretPrefix); i < secretLen; i++ {
		bad |= notB32[secret[i]]
	}
	return bad == 0
}

// maxLabel bounds actor, user and application names.
const maxLabel = 128

// Service creates, authenticates, lists and revokes tokens, and keeps the
// access policies of every space.
type Service struct {
	st       store.Store
	now      func() time.Time
	policies *Policies
	cache    *tokenCache // nil: every request looks its token up
}

// NewService returns a Service over st that caches up to
// DefaultCacheSize authenticated tokens.
func NewService(st store.Store) *Service { return NewServiceCached(st, DefaultCacheSize) }

// NewServiceCached returns a Service over st that caches up to size
// authenticated tokens (none when size < 1). A cached token is trusted
// only while the store's token generation is the one it was read at, so
// a revocation in any process sharing the store takes effect at the next
// request.
func NewServiceCached(st store.Store, size int) *Service {
	s := &Service{st: st, now: time.Now, policies: NewPolicies(st)}
	if size > 0 {
		s.cache = newTokenCache(size)
	}
	return s
}

// Policies returns the service's cache of space policies: every read path
// of one process shares it.
func (s *Service) Policies() *Policies { return s.policies }

// Reader returns the Reader of p in space under the space's current
// policy: what every read path asks.
func (s *Service) Reader(ctx context.Context, p *Principal, space string) (*Reader, error) {
	return s.policies.Reader(ctx, p, space)
}

// CreateParams describe a token to create.
type CreateParams struct {
	// Space is a space name or AllSpaces.
	Space string
	Role  string
	// Actor authors the token's writes (default "token:<id>").
	Actor       string
	Types       []string
	Scopes      []string
	User        string
	Application string
}

// Create validates p and stores a new token. It returns the stored token
// and its secret, which is never shown again. Invalid parameters are a
// bad_request *problem.Error naming the field.
func (s *Service) Create(ctx context.Context, p CreateParams) (store.Token, string, error) {
	if err := validate(&p); err != nil {
		return store.Token{}, "", err
	}
	secret, err := newSecret()
	if err != nil {
		return store.Token{}, "", err
	}
	id, err := randomBase32(12)
	if err != nil {
		return store.Token{}, "", err
	}
	t := store.Token{
		ID:          "tok_" + id,
		Hash:        hashSecret(secret),
		Space:       p.Space,
		Role:        p.Role,
		Actor:       p.Actor,
		Types:       p.Types,
		Scopes:      p.Scopes,
		User:        p.User,
		Application: p.Application,
		CreatedAt:   s.now().UTC().Truncate(time.Microsecond),
	}
	if t.Actor == "" {
		t.Actor = "token:" + t.ID
	}
	if err := s.st.TokenCreate(ctx, t); err != nil {
		return store.Token{}, "", fmt.Errorf("create token: %w", err)
	}
	return t, secret, nil
}

// Authenticate returns the principal of a secret. An unknown or malformed
// secret is an unauthorized *problem.Error.
func (s *Service) Authenticate(ctx context.Context, secret string) (*Principal, error) {
	if !wellFormed(secret) {
		return nil, problem.New(problem.Unauthorized, "malformed token")
	}
	key := sha256.Sum256([]byte(secret))
	var gen int64
	if s.cache != nil {
		var err error
		if gen, err = s.st.TokenGeneration(ctx); err != nil {
			return nil, fmt.Errorf("authenticate: %w", err)
		}
		if t, ok := s.cache.get(key, gen); ok {
			return principalOf(t), nil
		}
	}
	t, err := s.st.TokenByHash(ctx, key[:])
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem.New(problem.Unauthorized, "unknown token")
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	s.cache.put(key, gen, t)
	return principalOf(t), nil
}

// List returns every token (hashes are never serialized).
func (s *Service) List(ctx context.Context) ([]store.Token, error) {
	ts, err := s.st.TokenList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return ts, nil
}

// Revoke deletes a token; an unknown id is a not_found *problem.Error.
func (s *Service) Revoke(ctx context.Context, id string) error {
	err := s.st.TokenDelete(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return problem.New(problem.NotFound, "token %q not found", id)
	}
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	return nil
}

func principalOf(t store.Token) *Principal {
	return &Principal{
		TokenID:     t.ID,
		Space:       t.Space,
		Role:        t.Role,
		Actor:       t.Actor,
		Types:       t.Types,
		Scopes:      t.Scopes,
		User:        t.User,
		Application: t.Application,
	}
}

func validate(p *CreateParams) error {
	if !slices.Contains(roles, p.Role) {
		return fieldError("role", "must be one of %s", strings.Join(roles, ", "))
	}
	if p.Space != AllSpaces && !changelog.ValidTypeName(p.Space) {
		return fieldError("space", "%q is not a valid space name (want %q or [a-z][a-z0-9-]*, dot-separated)", p.Space, AllSpaces)
	}
	for _, t := range p.Types {
		if !changelog.ValidTypeName(t) {
			return fieldError("types", "%q is not a valid type name", t)
		}
	}
	for _, sc := range p.Scopes {
		if !slices.Contains(scopes, sc) {
			return fieldError("scopes", "unknown scope %q (known: %s)", sc, strings.Join(scopes, ", "))
		}
	}
	if err := validateActor(p.Actor); err != nil {
		return err
	}
	return validateJournal(p)
}

// validateJournal checks the user and application of a token: an
// application belongs to a user, and an admin (which no access rule
// limits) acts for no user.
func validateJournal(p *CreateParams) error {
	if err := validateLabel("user", p.User); err != nil {
		return err
	}
	if err := validateLabel("application", p.Application); err != nil {
		return err
	}
	switch {
	case p.Application != "" && p.User == "":
		return fieldError("user", "a token with an application needs the user it acts for")
	case p.User != "" && p.Role == RoleAdmin:
		return fieldError("user", "an admin token reads everything and acts for no user")
	}
	return nil
}

// validateActor refuses actor names eddy reserves for its own writes.
func validateActor(actor string) error {
	if actor == "engine" || strings.HasPrefix(actor, "trigger:") {
		return fieldError("actor", "%q is reserved", actor)
	}
	return validateLabel("actor", actor)
}

func validateLabel(field, v string) error {
	if len(v) > maxLabel {
		return fieldError(field, "longer than %d bytes", maxLabel)
	}
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return fieldError(field, "contains control characters")
	}
	return nil
}

func fieldError(field, format string, args ...any) *problem.Error {
	return problem.New(problem.BadRequest, "%s: %s", field, fmt.Sprintf(format, args...)).With("field", field)
}

func newSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate secret: %w", err)
	}
	return secretPrefix + strings.ToLower(b32.EncodeToString(b)), nil
}

// randomBase32 returns n random characters of lowercase base32.
func randomBase32(n int) (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate id: %w", err)
	}
	for i := range b {
		b[i] = alphabet[b[i]&31]
	}
	return string(b), nil
}

func hashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}
