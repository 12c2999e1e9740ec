package functions

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/problem"
)

func TestSecretFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOOK_SECRET": testSecret, "NOT_A_SECRET": "hunter2"}
	getenv := func(k string) string { return env[k] }

	f, err := ParseFunction("hook", []byte(`{"kind":"webhook","url":"https://x.example/h","secret":{"fromEnv":"HOOK_SECRET"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Secret != "" || f.SecretEnv != "HOOK_SECRET" {
		t.Fatalf("parsed secret %q from %q", f.Secret, f.SecretEnv)
	}
	if err := f.ResolveSecret(getenv); err != nil || f.Secret != testSecret {
		t.Fatalf("resolve: %v, secret %q", err, f.Secret)
	}

	// Stored, the value travels with its source; shown, only the source.
	stored, err := json.Marshal(f)
	if err != nil || !strings.Contains(string(stored), `"secret":{"fromEnv":"HOOK_SECRET","value":"`+testSecret+`"}`) {
		t.Fatalf("stored form %s (%v)", stored, err)
	}
	shown, _ := json.Marshal(f.Public())
	if strings.Contains(string(shown), "whsec_") || !strings.Contains(string(shown), `"secret":{"fromEnv":"HOOK_SECRET"}`) {
		t.Fatalf("public form %s", shown)
	}
	back, err := ParseFunction("hook", stored)
	if err != nil || back.Secret != testSecret || back.SecretEnv != "HOOK_SECRET" {
		t.Fatalf("stored form parses to %+v, %v", back, err)
	}

	// A literal secret is unchanged by ResolveSecret.
	lit, err := ParseFunction("hook", []byte(`{"kind":"webhook","url":"https://x.example/h","secret":"`+testSecret+`"}`))
	if err != nil || lit.ResolveSecret(getenv) != nil || lit.Secret != testSecret || lit.SecretEnv != "" {
		t.Fatalf("literal: %+v %v", lit, err)
	}

	for _, tt := range []struct {
		name, body, env string
	}{
		{"unset variable", `{"fromEnv":"MISSING"}`, ""},
		{"not a secret", `{"fromEnv":"NOT_A_SECRET"}`, ""},
		{"bad name", `{"fromEnv":"1X"}`, "parse"},
		{"unknown key", `{"fromEnv":"X","other":1}`, "parse"},
		{"no fromEnv", `{"value":"` + testSecret + `"}`, "parse"},
		{"a number", `7`, "parse"},
	} {
		f, err := ParseFunction("hook", []byte(`{"kind":"webhook","url":"https://x.example/h","secret":`+tt.body+`}`))
		if tt.env == "" && err == nil {
			err = f.ResolveSecret(getenv)
		}
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Code != problem.BadRequest || pe.Details["field"] != "secret" {
			t.Errorf("%s: err = %v, want bad_request on field secret", tt.name, err)
		}
	}
}
