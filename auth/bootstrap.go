package auth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/eddy-run/eddy/problem"
)

// BootstrapAdmin makes sure an admin token exists for the file at path. If
// the file holds a secret that authenticates as an admin, that secret is
// returned (created=false). Otherwise, if the store holds no admin token
// for every space yet, a new one (space AllSpaces, role admin, actor
// "owner") is created and written to path with mode 0600 (created=true).
// A store that already holds one is left alone and the file is not
// written: secret is "" and created false, so another process's file
// (or the operator's copy) stays valid.
func BootstrapAdmin(ctx context.Context, s *Service, path string) (secret string, created bool, err error) {
	secret, err = existingAdmin(ctx, s, path)
	if err != nil || secret != "" {
		return secret, false, err
	}
	has, err := s.hasAdmin(ctx)
	if err != nil || has {
		return "", false, err
	}
	_, secret, err = s.Create(ctx, CreateParams{Space: AllSpaces, Role: RoleAdmin, Actor: "owner"})
	if err != nil {
		return "", false, fmt.Errorf("bootstrap admin: %w", err)
	}
	if err := writeSecret(path, secret); err != nil {
		return "", false, err
	}
	return secret, true, nil
}

// hasAdmin reports whether the store holds an admin token for every space.
func (s *Service) hasAdmin(ctx context.Context) (bool, error) {
	ts, err := s.st.TokenList(ctx)
	if err != nil {
		return false, fmt.Errorf("bootstrap admin: %w", err)
	}
	for _, t := range ts {
		if t.Role == RoleAdmin && t.Space == AllSpaces {
			return true, nil
		}
	}
	return false, nil
}

// existingAdmin returns the admin secret stored at path, or "" if there is
// none that authenticates as an admin.
func existingAdmin(ctx context.Context, s *Service, path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read admin token: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	p, err := s.Authenticate(ctx, secret)
	if problem.CodeOf(err) == problem.Unauthorized {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !p.IsAdmin() || p.Space != AllSpaces {
		return "", nil
	}
	return secret, nil
}

// writeSecret replaces the file at path with secret, readable only by its
// owner.
func writeSecret(path, secret string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write admin token: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("write admin token: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("write admin token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write admin token: %w", err)
	}
	return nil
}
