package engine

import (
	"cmp"
	"slices"
	"time"

	"github.com/eddy-run/eddy/store"
)

// Spreading leases over processes.
//
// Every lease round a process beats (store.TriggerStore.ProcessBeat) and
// learns the live processes P. In each space with n triggers its fair
// share is share = ceil(n / |P|), and planLeases decides, from the
// trigger states every process reads alike:
//
//  1. Renew: a lease the process holds (live) is renewed, unless it
//     holds more than share; then it keeps the share leases with the
//     highest rendezvous weight for it and releases the others, so
//     another process takes them in its next round.
//  2. Hand out: the free leases (never held, released or expired) are
//     handed out by bounded-load rendezvous hashing: in trigger-name
//     order, each goes to the live process with the highest
//     weight(space, trigger, process) among those holding fewer than
//     share, counting the leases handed out before it. Every process
//     computes the same hand-out and takes the leases handed to itself.
//  3. Fall back: a lease found free for at least a round period (the
//     process it was handed to did not take it, say because its view of
//     P differed) is taken by any process still holding fewer than
//     share, highest weight for it first.
//
// A process never takes a lease beyond its share, and never takes a live
// lease from another: leases change hands only when released or expired.
// A process releases only above its share, which changes only when the
// set of processes or the number of triggers changes, so with both
// stable no lease moves (no ping-pong). A lone process's share is every
// trigger. A process that dies stops beating and renewing: after the TTL
// it leaves P and its leases expire, and rule 2 hands them to the
// others.

// leaseView is what a lease round knows of one trigger's lease.
type leaseView struct {
	name string
	// owner is the live holder ("" when the lease is free: never held,
	// released or expired).
	owner string
	epoch int64
}

// leasePlan is one lease round's decision for a space.
type leasePlan struct {
	// keep lists the held leases to renew, take the free ones to acquire.
	keep, take []string
	// release lists the held leases to give up.
	release []lease
}

// hold returns the leases the plan renews or acquires.
func (p leasePlan) hold() []string {
	return append(slices.Clone(p.keep), p.take...)
}

// fairShare is how many of n triggers each of k processes holds at most:
// ceil(n/k) (n when k < 1).
func fairShare(n, k int) int {
	if k < 1 {
		return n
	}
	return (n + k - 1) / k
}

// weight is the rendezvous weight of a process for a trigger: FNV-1a of
// space, trigger and owner, finished with the splitmix64 mixer so close
// names spread evenly.
func weight(space, trigger, owner string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i, s := range [...]string{space, trigger, owner} {
		if i > 0 {
			h *= prime // a zero byte between parts: ("ab","c") is not ("a","bc")
		}
		for j := 0; j < len(s); j++ {
			h = (h ^ uint64(s[j])) * prime
		}
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// byWeight sorts names by descending weight for owner, then by name.
func byWeight(space, owner string, names []string) {
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(weight(space, b, owner), weight(space, a, owner)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

// leaseViews reads the lease of every trigger of names from states at
// now; a trigger without a state is free.
func leaseViews(names []string, states []store.TriggerState, now time.Time) []leaseView {
	byName := make(map[string]store.TriggerState, len(states))
	for _, st := range states {
		byName[st.Trigger] = st
	}
	out := make([]leaseView, 0, len(names))
	for _, name := range names {
		v := leaseView{name: name}
		if st, ok := byName[name]; ok {
			v.epoch = st.Epoch
			// The store grants a lease only once it expired before now.
			if st.Owner != "" && !st.LeaseExpires.Before(now) {
				v.owner = st.Owner
			}
		}
		out = append(out, v)
	}
	return out
}

// planLeases decides a lease round of self in a space (see the rules
// above): procs are the live processes, views the space's leases, stale
// the free leases found free for at least a round period.
func planLeases(space, self string, procs []string, views []leaseView, stale map[string]bool) leasePlan {
	if !slices.Contains(procs, self) {
		procs = append(slices.Clone(procs), self)
	}
	share := fairShare(len(views), len(procs))
	load := make(map[string]int, len(procs))
	for _, p := range procs {
		load[p] = 0
	}
	var mine, free []string
	epochs := map[string]int64{}
	for _, v := range views {
		switch _, live := load[v.owner]; {
		case v.owner == "":
			free = append(free, v.name)
		case v.owner == self:
			mine = append(mine, v.name)
			epochs[v.name] = v.epoch
		case live:
			load[v.owner]++
		}
	}
	var plan leasePlan
	byWeight(space, self, mine)
	plan.keep = mine[:min(len(mine), share)]
	for _, name := range mine[len(plan.keep):] {
		plan.release = append(plan.release, lease{name: name, epoch: epochs[name]})
	}
	load[self] = len(plan.keep)
	plan.take = handOut(space, self, procs, free, load, share)
	return fallBack(space, self, plan, free, stale, load[self], share)
}

// handOut gives each free lease, in name order, to the live process with
// the highest weight among those below share (updating load), and
// returns the ones given to self.
func handOut(space, self string, procs, free []string, load map[string]int, share int) []string {
	free = slices.Clone(free)
	slices.Sort(free)
	var mine []string
	for _, name := range free {
		to, best := "", uint64(0)
		for _, p := range procs {
			if load[p] >= share {
				continue
			}
			if w := weight(space, name, p); to == "" || w > best || (w == best && p < to) {
				to, best = p, w
			}
		}
		if to == "" {
			continue
		}
		load[to]++
		if to == self {
			mine = append(mine, name)
		}
	}
	return mine
}

// fallBack adds to plan the stale free leases not taken yet while self
// holds fewer than share (held counts the leases it keeps and takes).
func fallBack(space, self string, plan leasePlan, free []string, stale map[string]bool, held, share int) leasePlan {
	var rest []string
	for _, name := range free {
		if stale[name] && !slices.Contains(plan.take, name) {
			rest = append(rest, name)
		}
	}
	byWeight(space, self, rest)
	for _, name := range rest {
		if held >= share {
			break
		}
		plan.take = append(plan.take, name)
		held++
	}
	return plan
}
