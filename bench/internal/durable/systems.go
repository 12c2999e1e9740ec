package durable

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/bench/internal/harness"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
)

// payload is the JSON every system stores per commit.
func payload(i int64) []byte {
	n := strconv.FormatInt(i, 10)
	return []byte(`{"n":` + n + `,"title":"row ` + n + `"}`)
}

// numbered turns a commit of number i into an op that numbers its calls
// itself, across every measurement of the system, so no commit repeats
// an earlier one (eddy would answer a repeated put as a no-op).
func numbered(commit func(ctx context.Context, i int64) error) op {
	var n atomic.Int64
	return func(ctx context.Context, _ int64) error { return commit(ctx, n.Add(1)) }
}

// openEddy opens eddy on a fresh store of kind; each commit puts the new
// note e<i>.
func openEddy(ctx context.Context, c harness.Config, kind string) (instance, error) {
	return openEddyWith(ctx, c, kind, nil)
}

// openEddyWith is openEddy with the configuration tuned (see
// harness.OpenEddyWith).
func openEddyWith(ctx context.Context, c harness.Config, kind string, tune func(*eddy.Config)) (instance, error) {
	e, err := harness.OpenEddyWith(ctx, c, kind, tune)
	if err != nil {
		return instance{}, err
	}
	return instance{op: putNote(e), close: e.Close, served: true}, nil
}

// putNote is the op of eddy e: a put of the new note e<i>.
func putNote(e *harness.Eddy) op {
	return numbered(func(ctx context.Context, i int64) error {
		_, err := e.Put(ctx, "note", "e"+strconv.FormatInt(i, 10), payload(i))
		return err
	})
}

// openTriggered opens eddy on a fresh store of kind (strict) with a
// trigger on every note calling a go handler that writes nothing, the
// commonest trigger:
// each commit is judged in its own transaction and writes its delivery
// there, and each completion is a delivery update of its own. settle
// waits until every delivery so far has run, so no backlog runs on into
// the next system's measurement.
func openTriggered(ctx context.Context, c harness.Config, kind string) (instance, error) {
	e, err := harness.OpenEddy(ctx, c, kind)
	if err != nil {
		return instance{}, err
	}
	var ran atomic.Int64
	progress := make(chan struct{}, 1)
	handler := func(context.Context, functions.Input) ([]changelog.Mutation, error) {
		ran.Add(1)
		select {
		case progress <- struct{}{}:
		default:
		}
		return nil, nil
	}
	if err := e.GoTrigger(ctx, "count", "note", handler); err != nil {
		return instance{}, errors.Join(err, e.Close())
	}
	var wrote atomic.Int64
	put := putNote(e)
	in := instance{close: e.Close, served: true}
	in.op = func(ctx context.Context, i int64) error {
		err := put(ctx, i)
		if err == nil {
			wrote.Add(1)
		}
		return err
	}
	in.settle = func(ctx context.Context) error {
		return settle(ctx, progress, func() bool { return ran.Load() >= wrote.Load() })
	}
	return in, nil
}

// maxSettle bounds how long settle waits for a system's backlog.
const maxSettle = time.Minute

// settle returns once done holds, checking it whenever progress
// signals; it fails after maxSettle.
func settle(ctx context.Context, progress <-chan struct{}, done func() bool) error {
	t := time.NewTimer(maxSettle)
	defer t.Stop()
	for !done() {
		select {
		case <-progress:
		case <-t.C:
			return fmt.Errorf("backlog still running after %v", maxSettle)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// openJetStream starts a fresh server with a stream over bench.>; each
// commit is a synchronous publish to bench.note.
func openJetStream(ctx context.Context, c harness.Config, syncAlways bool) (instance, error) {
	n, err := harness.StartNATS(c, syncAlways)
	if err != nil {
		return instance{}, err
	}
	if _, err := n.Stream(ctx, "BENCH", "bench.>"); err != nil {
		return instance{}, errors.Join(err, n.Close())
	}
	return instance{op: numbered(func(ctx context.Context, i int64) error {
		_, err := n.JS.Publish(ctx, "bench.note", payload(i))
		return err
	}), close: n.Close}, nil
}

// openRaw creates a fresh database with one table; each commit is one
// autocommit INSERT.
func openRaw(ctx context.Context, c harness.Config) (instance, error) {
	raw, err := harness.OpenRawTable(ctx, c.PGAdminURL, 16)
	if err != nil {
		return instance{}, err
	}
	return instance{op: numbered(func(ctx context.Context, i int64) error {
		return raw.Insert(ctx, string(payload(i)))
	}), close: raw.Close}, nil
}
