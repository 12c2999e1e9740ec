package auth

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
)

// BenchmarkAuthenticate compares the per-request token lookup without a
// cache (the baseline) and with it, on both drivers, in one run. On
// PostgreSQL the store listens for notifications, as a served eddy's
// does, so the cache answers the token generation from memory.
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	drivers := map[string]func(b *testing.B) store.Store{
		"sqlite": func(b *testing.B) store.Store {
			b.Helper()
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "eddy.db"))
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
		"postgres": func(b *testing.B) store.Store {
			b.Helper()
			st, err := postgres.Open(ctx, pgtest.NewDatabase(b))
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
	}
	for _, name := range []string{"sqlite", "postgres"} {
		st := drivers[name](b)
		if err := st.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		stopListen := listen(b, st)
		_, secret, err := NewService(st).Create(ctx, CreateParams{Space: "s", Role: RoleWriter, Types: []string{"a", "b"}})
		if err != nil {
			b.Fatal(err)
		}
		for _, mode := range []struct {
			name string
			size int
		}{{"uncached", 0}, {"cached", DefaultCacheSize}} {
			svc := NewServiceCached(st, mode.size)
			b.Run(name+"/"+mode.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := svc.Authenticate(ctx, secret); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		stopListen()
		_ = st.Close()
	}
}

// listen runs st's notification listener, when it has one, until the
// returned stop is called; it returns once the listener is connected.
func listen(b *testing.B, st store.Store) (stop func()) {
	b.Helper()
	n, ok := st.(store.Notifier)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	connected, done := make(chan struct{}), make(chan struct{})
	var once sync.Once
	go func() {
		defer close(done)
		_ = n.Listen(ctx, func(space string, _ int64) {
			if space == "" {
				once.Do(func() { close(connected) })
			}
		})
	}()
	select {
	case <-connected:
	case <-done:
		b.Fatal("listener stopped before it connected")
	}
	return func() { cancel(); <-done }
}
