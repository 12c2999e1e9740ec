package server

import (
	"errors"
	"strings"
	"testing"
)

// TestNewRefusesMissingDependency: New builds nothing silently; a Config
// without a required service is an error naming each one missing.
func TestNewRefusesMissingDependency(t *testing.T) {
	t.Parallel()
	full := withServices(t, Config{})
	if _, err := New(full); err != nil {
		t.Fatalf("complete config: %v", err)
	}
	for _, tc := range []struct {
		name string
		drop func(*Config)
	}{
		{"Log", func(c *Config) { c.Log = nil }},
		{"Auth", func(c *Config) { c.Auth = nil }},
		{"Definitions", func(c *Config) { c.Definitions = nil }},
		{"Views", func(c *Config) { c.Views = nil }},
		{"Journal", func(c *Config) { c.Journal = nil }},
	} {
		cfg := full
		tc.drop(&cfg)
		s, err := New(cfg)
		if s != nil || !errors.Is(err, ErrIncompleteConfig) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("without %s: %v, %v; want ErrIncompleteConfig naming it", tc.name, s, err)
		}
	}
	_, err := New(Config{})
	if err == nil || !strings.Contains(err.Error(), "missing Log, Auth, Definitions, Views, Journal") {
		t.Errorf("empty config: %v, want every dependency named", err)
	}
	// Hub and Engine are optional: their routes answer unavailable.
	full.Hub, full.Engine = nil, nil
	if _, err := New(full); err != nil {
		t.Errorf("without hub and engine: %v", err)
	}
}
