package auth

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
)

// BenchmarkAuthenticate compares the per-request token lookup without a
// cache (the baseline) and with it (a generation read per request), on
// both drivers, in one run.
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	drivers := map[string]func(b *testing.B) store.Store{
		"sqlite": func(b *testing.B) store.Store {
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "eddy.db"))
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
		"postgres": func(b *testing.B) store.Store {
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
		_ = st.Close()
	}
}
