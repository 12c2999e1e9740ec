package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// startSeq resolves a trigger's start policy against the space's head:
// the last seq it does not evaluate.
func startSeq(s triggers.Start, head int64) int64 {
	switch s.Policy {
	case triggers.StartBeginning:
		return 0
	case triggers.StartSeq:
		return s.Seq
	default:
		return head
	}
}

// InitState gives a trigger its state if it has none: the cursor at its
// start (the head, 0 or the seq it names) and, for a cron trigger, the
// time it starts counting slots from. Saving a trigger calls it, so
// "start": "head" means the head at save time.
func (e *Engine) InitState(ctx context.Context, space string, t *triggers.Trigger) (store.TriggerState, error) {
	sp, err := e.log.Space(ctx, space)
	if err != nil {
		return store.TriggerState{}, err
	}
	start := startSeq(t.Start, sp.Head)
	now := e.now()
	s := store.TriggerState{Space: space, Trigger: t.Name, Cursor: start, Start: start, Skipped: []store.SeqRange{}, UpdatedAt: now}
	if t.Source.Cron != nil {
		s.Fired = now
	}
	st, _, err := e.st.TriggerStateInit(ctx, s)
	if err != nil {
		return st, fmt.Errorf("init state of trigger %s: %w", t.Name, err)
	}
	e.poke()
	return st, nil
}

// TriggerSaved is called after a trigger definition was stored: it
// initializes a new trigger's state and wakes the lease manager so the
// definition takes effect at once.
func (e *Engine) TriggerSaved(ctx context.Context, space string, t *triggers.Trigger) error {
	_, err := e.InitState(ctx, space, t)
	return err
}

// TriggerDeleted is called after a trigger definition was removed: it
// drops the trigger's state and deliveries.
func (e *Engine) TriggerDeleted(ctx context.Context, space, name string) error {
	err := e.st.TriggerStateDelete(ctx, space, name)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete state of trigger %s: %w", name, err)
	}
	e.poke()
	return nil
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
