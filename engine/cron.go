package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// maxCatchUp bounds the missed slots one round fires under catchUp "all".
const maxCatchUp = 1000

// fireCron fires every due slot of the owned, enabled cron triggers and
// returns when the next slot comes due (zero if there is no cron
// trigger).
func (sr *spaceRun) fireCron(ctx context.Context) time.Time {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	var next time.Time
	for name, t := range sr.trigs {
		src := t.def.Source.Cron
		if src == nil || !t.def.Enabled {
			continue
		}
		if err := sr.fireDue(ctx, t); err != nil && ctx.Err() == nil {
			sr.e.logger.Warn("engine: cron", "space", sr.id, "trigger", name, "err", err)
		}
		if t := sr.trigs[name]; t != nil {
			n := src.Next(t.state.Fired)
			if next.IsZero() || n.Before(next) {
				next = n
			}
		}
	}
	return next
}

// fireDue fires the trigger's due slots under its catch-up policy.
func (sr *spaceRun) fireDue(ctx context.Context, t *trig) error {
	src := t.def.Source.Cron
	now := sr.e.now()
	due := dueSlots(src, t.state.Fired, now)
	if len(due) == 0 {
		return nil
	}
	switch src.CatchUp {
	case triggers.CatchUpAll:
	case triggers.CatchUpNone:
		last := due[len(due)-1]
		if now.Sub(last) > sr.cronGrace() {
			return sr.skipSlot(ctx, t, last)
		}
		due = due[len(due)-1:]
	default:
		due = due[len(due)-1:]
	}
	for _, slot := range due {
		if err := sr.fire(ctx, t, slot); err != nil {
			return err
		}
		if sr.trigs[t.def.Name] == nil {
			return nil // the lease was lost
		}
	}
	return nil
}

// cronGrace is how late a slot may fire and still count as on time for
// catchUp "none".
func (sr *spaceRun) cronGrace() time.Duration { return 2*sr.e.opts.Poll + time.Second }

// dueSlots lists the scheduled times after last and not after now, at
// most maxCatchUp of the latest.
func dueSlots(src *triggers.CronSource, last, now time.Time) []time.Time {
	var out []time.Time
	for s := src.Next(last); !s.IsZero() && !s.After(now); s = src.Next(s) {
		out = append(out, s)
		if len(out) > maxCatchUp {
			out = out[1:]
		}
	}
	return out
}

// fire appends the slot's engine fire row and its delivery in one
// transaction fenced by the lease; a slot another process fired already
// is taken as fired.
func (sr *spaceRun) fire(ctx context.Context, t *trig, slot time.Time) error {
	name := t.def.Name
	now := sr.e.now()
	d := store.Delivery{
		ID: fireID(name, slot), Space: sr.id, Trigger: name,
		Entity: store.EntityKey{Type: causality.TypeTrigger, ID: name},
		Status: store.DeliveryPending, Depth: 1, CreatedAt: now, UpdatedAt: now,
	}
	epoch := t.state.Epoch
	_, err := sr.e.log.Write(ctx, changelog.WriteRequest{
		Space: sr.id, Engine: []changelog.EngineRow{causality.NewFire(name, slot)},
		Effects: func(ctx context.Context, tx store.WriteTx, res changelog.WriteResult) error {
			d.Seq = res.EngineSeqs[0]
			if err := tx.DeliveryInsert(ctx, d); err != nil {
				return err
			}
			return tx.TriggerFiredTx(ctx, name, epoch, slot)
		},
	})
	switch {
	case errors.Is(err, store.ErrExists), errors.Is(err, store.ErrFenced):
		sr.reload(ctx, []string{name})
		if t := sr.trigs[name]; t != nil {
			st, err := sr.e.st.TriggerStateGet(ctx, sr.id, name)
			if err == nil {
				t.state = st
			}
		}
		return nil
	case err != nil:
		return err
	}
	t.state.Fired = slot
	t.disp.add([]store.Delivery{d}, nil)
	return nil
}

// skipSlot records a missed slot as fired without firing it (catchUp
// "none").
func (sr *spaceRun) skipSlot(ctx context.Context, t *trig, slot time.Time) error {
	err := sr.e.st.TriggerFired(ctx, sr.id, t.def.Name, t.state.Epoch, slot)
	if errors.Is(err, store.ErrFenced) {
		sr.reload(ctx, []string{t.def.Name})
		return nil
	}
	if err != nil {
		return err
	}
	t.state.Fired = slot
	return nil
}

// fireID is the delivery id of a trigger's firing at slot: the same in
// every process, so a slot fires once.
func fireID(trigger string, slot time.Time) string {
	sum := sha256.Sum256([]byte(trigger + "\x00" + strconv.FormatInt(slot.UnixMicro(), 10)))
	return "fire_" + hex.EncodeToString(sum[:10])
}
