package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/eddy-run/eddy/store"
)

// balancer is what the lease manager remembers between rounds.
type balancer struct {
	// procs are the live processes of the last successful beat.
	procs []string
	// freeSince records, per space and trigger, when a round first found
	// the lease free (see planLeases, rule 3).
	freeSince map[string]map[string]time.Time
	// runs are the space runners the rounds used, whose leases the
	// manager releases when it stops (Stop empties e.spaces first).
	runs map[string]*spaceRun
	// prints are, per space, the fingerprint of its definitions and
	// leases as the last round saw them.
	prints map[string]string
}

// manage runs lease rounds every LeaseTTL/3, when poked, and whenever a
// check every Poll finds a space's definitions or leases changed (a
// trigger saved, enabled or disabled in another process, a lease
// released), so a new trigger starts within one poll interval on
// whichever process takes its lease. When ctx ends it gives every lease
// up and leaves the live processes.
func (e *Engine) manage(ctx context.Context) {
	period := e.opts.LeaseTTL / 3
	tick := time.NewTicker(min(e.opts.Poll, period))
	defer tick.Stop()
	b := &balancer{freeSince: map[string]map[string]time.Time{}, runs: map[string]*spaceRun{}, prints: map[string]string{}}
	var last time.Time
	for {
		if time.Since(last) >= period || e.changed(ctx, b) {
			e.round(ctx, b)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			e.releaseAll(b)
			return
		case <-tick.C:
		case <-e.kick:
			last = time.Time{}
		}
	}
}

// changed reports whether a space's fingerprint differs from the last
// round's (or a space appeared).
func (e *Engine) changed(ctx context.Context, b *balancer) bool {
	spaces, err := e.log.Spaces(ctx)
	if err != nil {
		return false
	}
	for _, sp := range spaces {
		cat, err := e.catalog(ctx, sp.ID)
		if err != nil {
			continue
		}
		states, err := e.st.TriggerStateList(ctx, sp.ID)
		if err != nil {
			continue
		}
		if fingerprint(cat, states) != b.prints[sp.ID] {
			return true
		}
	}
	return false
}

// fingerprint sums up what a lease round acts on: every trigger
// definition (its parse, cached while its bytes stand) and function,
// and every lease's owner and epoch.
func fingerprint(cat *catalog, states []store.TriggerState) string {
	states = slices.SortedFunc(slices.Values(states), func(a, b store.TriggerState) int { return strings.Compare(a.Trigger, b.Trigger) })
	var sb strings.Builder
	names := make([]string, 0, len(cat.triggers))
	for name := range cat.triggers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t := cat.triggers[name]
		fmt.Fprintf(&sb, "t %s %p %p\n", name, t, cat.functions[t.Function])
	}
	for _, st := range states {
		fmt.Fprintf(&sb, "s %s %s %d\n", st.Trigger, st.Owner, st.Epoch)
	}
	return sb.String()
}

// round beats, then renews, acquires or releases the leases of every
// space's triggers as planLeases decides and hands the owned ones to
// their space's runner.
func (e *Engine) round(ctx context.Context, b *balancer) {
	e.beat(ctx, b)
	spaces, err := e.log.Spaces(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.logger.Warn("engine: list spaces", "err", err)
		}
		return
	}
	for _, sp := range spaces {
		if err := e.roundSpace(ctx, b, sp); err != nil && ctx.Err() == nil {
			e.logger.Warn("engine: lease round", "space", sp.ID, "err", err)
		}
	}
}

// beat records that this process is alive for another LeaseTTL and
// learns the live processes. When it fails the last list stands (this
// process alone before any succeeded).
func (e *Engine) beat(ctx context.Context, b *balancer) {
	procs, err := e.st.ProcessBeat(ctx, e.opts.Owner, e.now(), e.opts.LeaseTTL)
	if err == nil {
		b.procs = procs
		return
	}
	if ctx.Err() == nil {
		e.logger.Warn("engine: process beat", "err", err)
	}
	if b.procs == nil {
		b.procs = []string{e.opts.Owner}
	}
}

// roundSpace runs one lease round over a space's triggers.
func (e *Engine) roundSpace(ctx context.Context, b *balancer, sp store.Space) error {
	cat, err := e.catalog(ctx, sp.ID)
	if err != nil {
		return err
	}
	sr := e.spaceFor(ctx, sp.ID, len(cat.triggers) > 0)
	if sr == nil {
		return nil
	}
	b.runs[sp.ID] = sr
	states, err := e.st.TriggerStateList(ctx, sp.ID)
	if err != nil {
		return fmt.Errorf("list trigger states of %s: %w", sp.ID, err)
	}
	now := e.now()
	names := make([]string, 0, len(cat.triggers))
	for name := range cat.triggers {
		names = append(names, name)
	}
	slices.Sort(names)
	views := leaseViews(names, states, now)
	stale := b.stale(sp.ID, views, now, e.opts.LeaseTTL/3)
	held, err := sr.renew(ctx, cat, planLeases(sp.ID, e.opts.Owner, b.procs, views, stale))
	// The fingerprint holds this round's own leases as the store answered
	// them: taken before them, it made the next check run a second round
	// that changed nothing but reloaded every dispatcher's queue.
	b.prints[sp.ID] = fingerprint(cat, withHeld(states, held))
	return err
}

// withHeld returns states with those of the leases a round took or
// renewed (held, by trigger) as the store answered them, and any held
// state missing from states (a trigger whose state the round created),
// in no particular order (fingerprint sorts them).
func withHeld(states []store.TriggerState, held map[string]store.TriggerState) []store.TriggerState {
	byName := make(map[string]store.TriggerState, len(states)+len(held))
	for _, st := range states {
		byName[st.Trigger] = st
	}
	maps.Copy(byName, held)
	return slices.Collect(maps.Values(byName))
}

// stale returns the free leases of a space first found free at least
// period ago, and remembers when this round found each free lease free.
func (b *balancer) stale(space string, views []leaseView, now time.Time, period time.Duration) map[string]bool {
	prev := b.freeSince[space]
	next := map[string]time.Time{}
	out := map[string]bool{}
	for _, v := range views {
		if v.owner != "" {
			continue
		}
		since, ok := prev[v.name]
		if !ok {
			since = now
		}
		next[v.name] = since
		out[v.name] = now.Sub(since) >= period
	}
	b.freeSince[space] = next
	return out
}

// release gives up the surplus leases of a round: the trigger stops here
// first (its deliveries under way end, in the background: the drainer),
// then the lease expires at once so another process takes it in its next
// round. The caller holds sr.mu.
func (sr *spaceRun) release(ls []lease) {
	for _, l := range ls {
		t := sr.trigs[l.name]
		if t == nil {
			sr.releaseAfterDrain(l)()
			continue
		}
		delete(sr.trigs, l.name)
		sr.e.drains.stop(t.disp, sr.releaseAfterDrain(l))
	}
}

// spaceFor returns the runner of a space, starting one when create is
// set and there is none; nil when there is none and create is false.
func (e *Engine) spaceFor(ctx context.Context, space string, create bool) *spaceRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	sr := e.spaces[space]
	if sr == nil && create && e.cancel != nil {
		sr = newSpaceRun(e, space)
		e.spaces[space] = sr
		e.liveMu.Lock()
		e.live[space] = sr
		e.liveMu.Unlock()
		sr.start(ctx)
	}
	return sr
}

// releaseAll stops every space runner of the rounds: their dispatchers
// drain in parallel, each then giving up its lease so another process
// takes over at once instead of after the TTL; then the process leaves
// the live processes.
func (e *Engine) releaseAll(b *balancer) {
	e.mu.Lock()
	e.spaces = map[string]*spaceRun{}
	e.mu.Unlock()
	e.liveMu.Lock()
	e.live = map[string]*spaceRun{}
	e.liveMu.Unlock()
	for _, sr := range b.runs {
		sr.stop(true)
	}
	e.drains.wait()
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := e.st.ProcessGone(ctx, e.opts.Owner); err != nil {
		e.logger.Warn("engine: leave processes", "err", err)
	}
}
