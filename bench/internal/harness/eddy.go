package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/watch"
)

// The stores eddy runs on.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Space is the space every scenario writes to.
const Space = "bench"

// Eddy is an eddy opened for one measurement (eddy.Open, as `eddy serve`
// does, with its engine, watch hub and telemetry) on a fresh store.
type Eddy struct {
	*eddy.Eddy
	// Kind is SQLite or Postgres.
	Kind string
	// DB is the PostgreSQL database (nil on SQLite).
	DB  *Database
	dir string
}

// OpenEddy opens eddy on a fresh store of kind and creates Space.
func OpenEddy(ctx context.Context, c Config, kind string) (*Eddy, error) {
	return OpenEddyWith(ctx, c, kind, nil)
}

// OpenEddyWith is OpenEddy with tune (when not nil) applied to the
// configuration before eddy opens (to choose eddy.Config.Durability, say).
func OpenEddyWith(ctx context.Context, c Config, kind string, tune func(*eddy.Config)) (*Eddy, error) {
	dir, err := os.MkdirTemp(c.Dir, "eddy-"+kind+"-")
	if err != nil {
		return nil, fmt.Errorf("eddy: data dir: %w", err)
	}
	e := &Eddy{Kind: kind, dir: dir}
	cfg := eddy.Config{DataDir: dir, Logger: Discard(), Engine: engine.Options{Logger: Discard(), LeaseTTL: 10 * time.Second},
		// The scenarios open up to 10,000 watch streams with one token:
		// lift serve's default stream caps (2,048 in all, 256 per token).
		Watch: watch.Options{MaxStreams: 1 << 20, MaxStreamsPerKey: 1 << 20}}
	if kind == Postgres {
		if e.DB, err = NewDatabase(ctx, c.PGAdminURL); err != nil {
			return nil, err
		}
		cfg.DatabaseURL = e.DB.URL
	} else {
		cfg.DatabaseURL = "sqlite:" + filepath.Join(dir, eddy.SQLiteFile)
	}
	if tune != nil {
		tune(&cfg)
	}
	if e.Eddy, err = eddy.Open(ctx, cfg); err != nil {
		return nil, errors.Join(fmt.Errorf("eddy: open %s: %w", kind, err), e.drop())
	}
	if _, err := e.Log().EnsureSpace(ctx, Space); err != nil {
		return nil, errors.Join(fmt.Errorf("eddy: space: %w", err), e.Close())
	}
	return e, nil
}

// Put appends one commit: a put of entity id of type typ with props (a
// JSON object), authored by "bench". It returns the commit's seq.
func (e *Eddy) Put(ctx context.Context, typ, id string, props []byte) (int64, error) {
	res, err := e.Log().Write(ctx, changelog.WriteRequest{
		Space:      Space,
		Mutations:  []changelog.Mutation{{Op: changelog.OpPut, Type: typ, EntityID: id, Properties: props}},
		Provenance: store.Provenance{Actor: "bench", Via: "api"},
	})
	if err != nil {
		return 0, fmt.Errorf("eddy: write: %w", err)
	}
	return res.LastSeq, nil
}

// GoTrigger registers handler as the go function name and saves a
// function and a trigger of that name calling it for every change of typ
// (delivery ordering none, concurrency 16).
func (e *Eddy) GoTrigger(ctx context.Context, name, typ string, handler functions.Handler) error {
	return errors.Join(
		e.Functions().Register(name, handler),
		e.Define(ctx, "function", name, `{"kind":"go","handler":"`+name+`"}`),
		e.Define(ctx, "trigger", name, `{"source":{"changes":{"types":["`+typ+`"]}},"function":"`+name+`","delivery":{"ordering":"none","concurrency":16}}`),
	)
}

// Close closes eddy and removes its store.
func (e *Eddy) Close() error {
	var err error
	if e.Eddy != nil {
		err = e.Eddy.Close()
	}
	return errors.Join(err, e.drop())
}

func (e *Eddy) drop() error {
	var err error
	if e.DB != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = e.DB.Drop(ctx)
	}
	return errors.Join(err, os.RemoveAll(e.dir))
}
