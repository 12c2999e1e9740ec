package auth

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tokenStore keeps tokens in memory; other store methods are not used by
// this package and panic through the nil embedded interface.
type tokenStore struct {
	store.Store
	mu     sync.Mutex
	tokens []store.Token
	gen    int64
}

func (s *tokenStore) TokenGeneration(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen, nil
}

func (s *tokenStore) TokenCreate(_ context.Context, t store.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = append(s.tokens, t)
	return nil
}

func (s *tokenStore) TokenByHash(_ context.Context, h []byte) (store.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		if bytes.Equal(t.Hash, h) {
			return t, nil
		}
	}
	return store.Token{}, store.ErrNotFound
}

func (s *tokenStore) TokenList(context.Context) ([]store.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]store.Token(nil), s.tokens...), nil
}

func (s *tokenStore) TokenDelete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range s.tokens {
		if t.ID == id {
			s.tokens = append(s.tokens[:i], s.tokens[i+1:]...)
			s.gen++
			return nil
		}
	}
	return store.ErrNotFound
}

func TestCreateAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &tokenStore{}
	svc := NewService(st)
	tok, secret, err := svc.Create(ctx, CreateParams{Space: "acme", Role: RoleReader, Types: []string{"task"}, Scopes: []string{ScopeLogRead}, User: "u1", Application: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if !wellFormed(secret) {
		t.Errorf("secret %q is malformed", secret)
	}
	if !strings.HasPrefix(tok.ID, "tok_") || len(tok.ID) != len("tok_")+12 {
		t.Errorf("id = %q", tok.ID)
	}
	if tok.Actor != "token:"+tok.ID {
		t.Errorf("actor = %q, want default", tok.Actor)
	}
	if bytes.Contains(st.tokens[0].Hash, []byte(secret)) || len(st.tokens[0].Hash) != 32 {
		t.Errorf("stored hash %x is not a SHA-256 of the secret", st.tokens[0].Hash)
	}
	p, err := svc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	want := Principal{TokenID: tok.ID, Space: "acme", Role: RoleReader, Actor: tok.Actor, Types: []string{"task"}, Scopes: []string{ScopeLogRead}, User: "u1", Application: "app"}
	if p.TokenID != want.TokenID || p.Space != want.Space || p.Role != want.Role || p.Actor != want.Actor ||
		p.User != want.User || p.Application != want.Application || len(p.Types) != 1 || len(p.Scopes) != 1 {
		t.Errorf("principal = %+v, want %+v", *p, want)
	}
}

func TestAuthenticateRejects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := NewService(&tokenStore{})
	_, secret, err := svc.Create(ctx, CreateParams{Space: AllSpaces, Role: RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	unknown := secret[:len(secret)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(secret, "a")]
	for _, s := range []string{"", "nope", "eddy_", secret + "a", strings.ToUpper(secret), unknown} {
		_, err := svc.Authenticate(ctx, s)
		if problem.CodeOf(err) != problem.Unauthorized {
			t.Errorf("Authenticate(%q) = %v, want unauthorized", s, err)
		}
	}
}

func TestCreateValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		p     CreateParams
		field string
	}{
		{"unknown role", CreateParams{Space: "a", Role: "root"}, "role"},
		{"empty role", CreateParams{Space: "a"}, "role"},
		{"bad space", CreateParams{Space: "Acme", Role: RoleReader}, "space"},
		{"empty space", CreateParams{Role: RoleReader}, "space"},
		{"bad type", CreateParams{Space: "a", Role: RoleReader, Types: []string{"ok", "Bad"}}, "types"},
		{"unknown scope", CreateParams{Space: "a", Role: RoleReader, Scopes: []string{"log:write"}}, "scopes"},
		{"reserved actor", CreateParams{Space: "a", Role: RoleWriter, Actor: "engine"}, "actor"},
		{"trigger actor", CreateParams{Space: "a", Role: RoleWriter, Actor: "trigger:x"}, "actor"},
		{"control actor", CreateParams{Space: "a", Role: RoleWriter, Actor: "a\nb"}, "actor"},
		{"long user", CreateParams{Space: "a", Role: RoleWriter, User: strings.Repeat("u", 129)}, "user"},
		{"application without user", CreateParams{Space: "a", Role: RoleReader, Application: "mail"}, "user"},
		{"admin for a user", CreateParams{Space: "a", Role: RoleAdmin, User: "u1"}, "user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := &tokenStore{}
			_, _, err := NewService(st).Create(context.Background(), tt.p)
			var pe *problem.Error
			if !errors.As(err, &pe) || pe.Code != problem.BadRequest || pe.Details["field"] != tt.field {
				t.Fatalf("Create = %v, want bad_request on %s", err, tt.field)
			}
			if len(st.tokens) != 0 {
				t.Errorf("a rejected token was stored")
			}
		})
	}
}

func TestListRevoke(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := NewService(&tokenStore{})
	tok, secret, err := svc.Create(ctx, CreateParams{Space: "a", Role: RoleWriter, Actor: "bot"})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := svc.List(ctx)
	if err != nil || len(ts) != 1 || ts[0].ID != tok.ID || ts[0].Actor != "bot" {
		t.Fatalf("List = %v, %v", ts, err)
	}
	if err := svc.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, secret); problem.CodeOf(err) != problem.Unauthorized {
		t.Errorf("revoked token authenticates: %v", err)
	}
	if err := svc.Revoke(ctx, tok.ID); problem.CodeOf(err) != problem.NotFound {
		t.Errorf("second Revoke = %v, want not_found", err)
	}
}

func TestPrincipal(t *testing.T) {
	t.Parallel()
	admin := &Principal{Space: AllSpaces, Role: RoleAdmin}
	writer := &Principal{Space: "a", Role: RoleWriter, Types: []string{"task"}}
	reader := &Principal{Space: "a", Role: RoleReader, Scopes: []string{ScopeLogRead}}
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"admin any space", admin.CanAccessSpace("zz"), true},
		{"writer own space", writer.CanAccessSpace("a"), true},
		{"writer other space", writer.CanAccessSpace("b"), false},
		{"admin writes", admin.CanWrite(), true},
		{"writer writes", writer.CanWrite(), true},
		{"reader does not write", reader.CanWrite(), false},
		{"admin is admin", admin.IsAdmin(), true},
		{"writer is not admin", writer.IsAdmin(), false},
		{"admin has every scope", admin.Has(ScopeLogRead), true},
		{"writer lacks scope", writer.Has(ScopeLogRead), false},
		{"reader has granted scope", reader.Has(ScopeLogRead), true},
		{"allow-list row", NewReader(writer, nil).JudgeRow(&store.Row{Type: "task"}) == RowReadable, true},
		{"allow-list other row", NewReader(writer, nil).JudgeRow(&store.Row{Type: "user"}) == RowHidden, true},
		{"allow-list record", NewReader(writer, nil).CanReadRecord(&store.Record{Type: "task"}), true},
		{"allow-list other record", NewReader(writer, nil).CanReadRecord(&store.Record{Type: "note"}), false},
		{"no allow-list", NewReader(reader, nil).JudgeRow(&store.Row{Type: "anything"}) == RowReadable, true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestBootstrapAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &tokenStore{}
	svc := NewService(st)
	path := filepath.Join(t.TempDir(), "data", "admin.token")

	secret, created, err := BootstrapAdmin(ctx, svc, path)
	if err != nil || !created {
		t.Fatalf("first BootstrapAdmin = %v, %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	p, err := svc.Authenticate(ctx, secret)
	if err != nil || !p.IsAdmin() || p.Space != AllSpaces || p.Actor != "owner" {
		t.Fatalf("bootstrap principal = %+v, %v", p, err)
	}

	again, created, err := BootstrapAdmin(ctx, svc, path)
	if err != nil || created || again != secret {
		t.Fatalf("second BootstrapAdmin = %q, %v, %v; want the same secret", again, created, err)
	}

	// A file whose secret no longer authenticates is replaced.
	if err := svc.Revoke(ctx, p.TokenID); err != nil {
		t.Fatal(err)
	}
	fresh, created, err := BootstrapAdmin(ctx, svc, path)
	if err != nil || !created || fresh == secret {
		t.Fatalf("after revoke BootstrapAdmin = %v, %v", created, err)
	}
	b, err := os.ReadFile(path)
	if err != nil || strings.TrimSpace(string(b)) != fresh {
		t.Errorf("file holds %q, want the fresh secret", b)
	}
}

func TestBootstrapAdminIgnoresNonAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := NewService(&tokenStore{})
	_, reader, err := svc.Create(ctx, CreateParams{Space: "a", Role: RoleReader})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(path, []byte(reader), 0o644); err != nil {
		t.Fatal(err)
	}
	secret, created, err := BootstrapAdmin(ctx, svc, path)
	if err != nil || !created || secret == reader {
		t.Fatalf("BootstrapAdmin = %v, %v; want a new admin token", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

// TestBootstrapAdminStoreHoldsOne: a store that already holds an admin
// token for every space gets no new one, and the file is not written,
// whatever it held (missing, or another process's stale copy).
func TestBootstrapAdminStoreHoldsOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := NewService(&tokenStore{})
	if _, _, err := svc.Create(ctx, CreateParams{Space: AllSpaces, Role: RoleAdmin, Actor: "owner"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing", "admin.token")
	stale := filepath.Join(dir, "admin.token")
	if err := os.WriteFile(stale, []byte("eddy_stale\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{missing, stale} {
		secret, created, err := BootstrapAdmin(ctx, svc, path)
		if err != nil || created || secret != "" {
			t.Fatalf("%s: BootstrapAdmin = %q, %v, %v; want nothing created", path, secret, created, err)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("missing file was written: %v", err)
	}
	if b, _ := os.ReadFile(stale); string(b) != "eddy_stale\n" {
		t.Errorf("stale file rewritten: %q", b)
	}
	ts, _ := svc.List(ctx)
	if len(ts) != 1 {
		t.Errorf("%d tokens, want the one admin", len(ts))
	}
}

// TestWellFormed: the secret check agrees with the pattern it replaces.
func TestWellFormed(t *testing.T) {
	t.Parallel()
	pattern := regexp.MustCompile(`^eddy_[a-z2-7]{52}$`)
	good := "eddy_" + strings.Repeat("a2z7", 13)
	cases := []string{good, "", "eddy_", good + "a", good[:len(good)-1], "Eddy_" + good[5:], "eddx_" + good[5:],
		good[:10] + "1" + good[11:], good[:10] + "8" + good[11:], good[:10] + "A" + good[11:], good[:10] + "{" + good[11:],
		good[:10] + "`" + good[11:], good[:56] + "\xff", good[:56] + "é"[:1]}
	for _, c := range cases {
		if got, want := wellFormed(c), pattern.MatchString(c); got != want {
			t.Errorf("wellFormed(%q) = %v, want %v", c, got, want)
		}
	}
}
