package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
)

var errCRM = errors.New("crm down")

func noop(context.Context, Input) ([]changelog.Mutation, error) { return nil, nil }

func TestRegistryRegister(t *testing.T) {
	t.Parallel()
	var r Registry
	if err := r.Register("sync-to-crm", noop); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, handler string
		h             Handler
		want          error
	}{
		{"valid id rule", "Sync.CRM:v2", noop, nil},
		{"twice", "sync-to-crm", noop, ErrDuplicateHandler},
		{"empty name", "", noop, ErrInvalidHandler},
		{"space in name", "a b", noop, ErrInvalidHandler},
		{"nil handler", "other", nil, ErrInvalidHandler},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Register(tt.handler, tt.h)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Register(%q) = %v, want %v", tt.handler, err, tt.want)
			}
		})
	}
	if got, want := r.Names(), []string{"Sync.CRM:v2", "sync-to-crm"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	if _, ok := r.Lookup("other"); ok {
		t.Error("Lookup found a handler whose registration failed")
	}
	if h, ok := r.Lookup("sync-to-crm"); !ok || h == nil {
		t.Error("Lookup(sync-to-crm) found nothing")
	}
}

func TestRegistryConcurrent(t *testing.T) {
	t.Parallel()
	var r Registry
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if err := r.Register(fmt.Sprintf("h%d", i), noop); err != nil {
				t.Error(err)
			}
			r.Lookup("h0")
			r.Names()
		})
	}
	wg.Wait()
	if n := len(r.Names()); n != 16 {
		t.Errorf("%d names, want 16", n)
	}
}

// goFunction parses a go function writing task, bound to handler.
func goFunction(t *testing.T, handler string) *Function {
	t.Helper()
	f, err := ParseFunction("f", []byte(`{"kind":"go","handler":"`+handler+`","writes":["task"]}`))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func patchTask(id string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpPatch, Type: "task", EntityID: id, Patch: json.RawMessage(`{"n":1}`)}
}

func TestRunGo(t *testing.T) {
	t.Parallel()
	reg := &Registry{}
	handlers := map[string]Handler{
		"echo": func(_ context.Context, in Input) ([]changelog.Mutation, error) {
			return []changelog.Mutation{patchTask(in.Entity.ID)}, nil
		},
		"none":  noop,
		"fails": func(context.Context, Input) ([]changelog.Mutation, error) { return nil, fmt.Errorf("sync: %w", errCRM) },
		"panics": func(context.Context, Input) ([]changelog.Mutation, error) {
			var actions []changelog.Mutation
			return []changelog.Mutation{actions[3]}, nil // an index out of range: a runtime panic
		},
		"undeclared": func(context.Context, Input) ([]changelog.Mutation, error) {
			return []changelog.Mutation{{Op: changelog.OpDelete, Type: "user", EntityID: "u1"}}, nil
		},
		"invalid": func(context.Context, Input) ([]changelog.Mutation, error) {
			return []changelog.Mutation{{Op: changelog.OpPatch, Type: "task", EntityID: "bad id"}}, nil
		},
		"engine-op": func(context.Context, Input) ([]changelog.Mutation, error) {
			return []changelog.Mutation{{Op: changelog.OpFire, Type: "task", EntityID: "t1"}}, nil
		},
		"too-many": func(context.Context, Input) ([]changelog.Mutation, error) {
			ms := make([]changelog.Mutation, MaxActions+1)
			for i := range ms {
				ms[i] = patchTask(fmt.Sprint("t", i))
			}
			return ms, nil
		},
	}
	for name, h := range handlers {
		if err := reg.Register(name, h); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		handler string
		want    int   // actions, when wantErr is nil
		wantErr error // errors.Is target
	}{
		{"echo", 1, nil},
		{"none", 0, nil},
		{"fails", 0, errCRM},
		{"panics", 0, ErrHandlerPanic},
		{"undeclared", 0, ErrUndeclaredWrite},
		{"invalid", 0, ErrInvalidResult},
		{"engine-op", 0, ErrInvalidResult},
		{"too-many", 0, ErrTooManyActions},
		{"missing", 0, ErrHandlerNotRegistered},
	}
	for _, tt := range tests {
		t.Run(tt.handler, func(t *testing.T) {
			t.Parallel()
			ms, err := goFunction(t, tt.handler).RunGo(context.Background(), reg, testInput())
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("RunGo: %v", err)
			case tt.wantErr == nil && len(ms) != tt.want:
				t.Fatalf("RunGo = %d actions, want %d", len(ms), tt.want)
			case tt.wantErr != nil && err == nil:
				t.Fatalf("RunGo = %v, want error %v", ms, tt.wantErr)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("RunGo error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestRunGoPanicError(t *testing.T) {
	t.Parallel()
	reg := &Registry{}
	if err := reg.Register("boom", func(context.Context, Input) ([]changelog.Mutation, error) { panic("boom") }); err != nil {
		t.Fatal(err)
	}
	_, err := goFunction(t, "boom").RunGo(context.Background(), reg, testInput())
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" || len(pe.Stack) == 0 {
		t.Fatalf("err = %#v, want a *PanicError with value and stack", err)
	}
	if got, want := err.Error(), `handler "boom": handler panicked: boom`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestRunGoInvalidActionDetails(t *testing.T) {
	t.Parallel()
	reg := &Registry{}
	if err := reg.Register("h", func(context.Context, Input) ([]changelog.Mutation, error) {
		return []changelog.Mutation{patchTask("t1"), {Op: "explode", Type: "task", EntityID: "t1"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	_, err := goFunction(t, "h").RunGo(context.Background(), reg, testInput())
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Details["field"] != "op" {
		t.Fatalf("err = %v, want a problem naming op", err)
	}
}

func TestRunGoContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	reg := &Registry{}
	// stubborn ignores its context: RunGo must still return at the deadline.
	if err := reg.Register("stubborn", func(context.Context, Input) ([]changelog.Mutation, error) {
		<-release
		return []changelog.Mutation{patchTask("t1")}, nil
	}); err != nil {
		t.Fatal(err)
	}
	f := goFunction(t, "stubborn")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	ms, err := f.RunGo(ctx, reg, testInput())
	close(release)
	if !errors.Is(err, context.DeadlineExceeded) || ms != nil {
		t.Fatalf("RunGo = %v, %v, want the deadline", ms, err)
	}

	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := f.RunGo(canceled, reg, testInput()); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled RunGo error = %v", err)
	}
}

func TestRunGoNotGo(t *testing.T) {
	t.Parallel()
	f, err := ParseFunction("f", []byte(`{"kind":"expr","code":"nil"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.RunGo(context.Background(), &Registry{}, testInput()); err == nil {
		t.Fatal("RunGo of an expr function succeeded")
	}
}

func TestFunctionRegisteredJSON(t *testing.T) {
	t.Parallel()
	f := goFunction(t, "h")
	yes := true
	f.Registered = &yes
	raw, err := json.Marshal(f.Public())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"f","kind":"go","writes":["task"],"handler":"h","registered":true}`; string(raw) != want {
		t.Fatalf("public JSON = %s, want %s", raw, want)
	}
	back, err := ParseFunction("f", raw)
	if err != nil {
		t.Fatalf("a GET answer does not save back: %v", err)
	}
	if back.Registered != nil {
		t.Error("ParseFunction kept registered; it is read-only")
	}
	if _, err := ParseFunction("f", []byte(`{"kind":"expr","code":"nil","registered":true}`)); err == nil {
		t.Error("registered accepted on an expr function")
	}
}
