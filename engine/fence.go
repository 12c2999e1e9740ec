package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/triggers"
)

// fencePoll is how often a fence re-checks the store for progress made
// by other processes (progress in this process wakes it at once).
const fencePoll = 50 * time.Millisecond

// Fence waits until the named triggers (every enabled one when names is
// empty) have evaluated every row <= seq and every delivery those rows
// caused is terminal, or until timeout. An unknown trigger is not_found.
func (e *Engine) Fence(ctx context.Context, space string, seq int64, names []string, timeout time.Duration) (FenceResult, error) {
	ts, err := e.fenceTriggers(ctx, space, names)
	if err != nil {
		return FenceResult{}, err
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		progress := e.progressCh()
		waiting, err := e.waiting(ctx, space, seq, ts)
		if err != nil {
			return FenceResult{}, err
		}
		if len(waiting) == 0 {
			return FenceResult{Seq: seq, Done: true}, nil
		}
		poll := time.NewTimer(fencePoll)
		select {
		case <-ctx.Done():
			poll.Stop()
			return FenceResult{}, ctx.Err()
		case <-deadline.C:
			poll.Stop()
			return FenceResult{Seq: seq, Done: false, Waiting: waiting}, nil
		case <-progress:
		case <-poll.C:
		}
		poll.Stop()
	}
}

// fenceTriggers resolves the names a fence waits for.
func (e *Engine) fenceTriggers(ctx context.Context, space string, names []string) ([]*triggers.Trigger, error) {
	if _, err := e.log.Space(ctx, space); err != nil {
		return nil, err
	}
	cat, err := e.catalog(ctx, space)
	if err != nil {
		return nil, err
	}
	var out []*triggers.Trigger
	if len(names) == 0 {
		for _, t := range cat.triggers {
			if t.Enabled {
				out = append(out, t)
			}
		}
	}
	for _, name := range names {
		t := cat.triggers[name]
		if t == nil {
			return nil, problem.New(problem.NotFound, "trigger %q not found", name).With("trigger", name)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *triggers.Trigger) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(out, func(a, b *triggers.Trigger) bool { return a.Name == b.Name }), nil
}

// waiting returns the triggers that have not yet judged every row <= seq
// or still have an open delivery caused by one of them.
func (e *Engine) waiting(ctx context.Context, space string, seq int64, ts []*triggers.Trigger) ([]string, error) {
	var out []string
	for _, t := range ts {
		st, err := e.state(ctx, space, t)
		if err != nil {
			return nil, err
		}
		if t.Source.Changes != nil && st.Cursor < seq {
			out = append(out, t.Name)
			continue
		}
		n, err := e.st.DeliveriesOpenThrough(ctx, space, t.Name, seq)
		if err != nil {
			return nil, fmt.Errorf("open deliveries of %s: %w", t.Name, err)
		}
		if n > 0 {
			out = append(out, t.Name)
		}
	}
	return out, nil
}
