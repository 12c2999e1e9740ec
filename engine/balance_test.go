package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

func TestFairShare(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ n, k, want int }{
		{0, 1, 0}, {0, 3, 0}, {1, 3, 1}, {9, 3, 3}, {10, 3, 4}, {9, 1, 9}, {7, 0, 7}, {2, 5, 1},
	} {
		if got := fairShare(c.n, c.k); got != c.want {
			t.Errorf("fairShare(%d, %d) = %d, want %d", c.n, c.k, got, c.want)
		}
	}
}

// The weight is a pure function of its parts, separates them, and its
// top owner per trigger spreads triggers about evenly.
func TestWeight(t *testing.T) {
	t.Parallel()
	if w1, w2 := weight("s", "t", "a"), weight("s", "t", "a"); w1 != w2 {
		t.Fatal("weight is not deterministic")
	}
	if weight("s", "ab", "c") == weight("s", "a", "bc") {
		t.Fatal("weight does not separate its parts")
	}
	owners := []string{"a", "b", "c"}
	top := map[string]int{}
	const n = 3000
	for i := range n {
		name := fmt.Sprintf("trigger-%d", i)
		best := slices.MaxFunc(owners, func(x, y string) int {
			return cmpUint(weight("s", name, x), weight("s", name, y))
		})
		top[best]++
	}
	for _, o := range owners {
		if top[o] < n/3*9/10 || top[o] > n/3*11/10 {
			t.Fatalf("rendezvous preferences %v are not even", top)
		}
	}
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// A process above its share releases its lowest-weight leases and keeps
// the others; below it, it takes the free leases handed to it.
func TestPlanLeases(t *testing.T) {
	t.Parallel()
	names := []string{"t0", "t1", "t2", "t3", "t4"}
	var views []leaseView
	for i, n := range names {
		views = append(views, leaseView{name: n, owner: "a", epoch: int64(i + 1)})
	}
	plan := planLeases("s", "a", []string{"a", "b"}, views, nil)
	byW := slices.Clone(names)
	byWeight("s", "a", byW)
	if !slices.Equal(plan.keep, byW[:3]) || len(plan.take) != 0 || len(plan.release) != 2 {
		t.Fatalf("plan %+v, want keep %v and release the rest", plan, byW[:3])
	}
	for i, l := range plan.release {
		if l.name != byW[3+i] || l.epoch != int64(slices.Index(names, l.name)+1) {
			t.Fatalf("release %+v, want %v with their epochs", plan.release, byW[3:])
		}
	}
	// b sees what a released: it takes exactly those (its share is 3,
	// and a holds 3).
	for i := range views {
		if !slices.Contains(plan.keep, views[i].name) {
			views[i].owner = ""
		}
	}
	got := planLeases("s", "b", []string{"a", "b"}, views, nil)
	if len(got.keep) != 0 || len(got.release) != 0 || !sameSet(got.take, byW[3:]) {
		t.Fatalf("b's plan %+v, want to take %v", got, byW[3:])
	}
}

// A process that is not in the list (its beat failed) still plans as
// one of the live processes.
func TestPlanLeasesAddsSelf(t *testing.T) {
	t.Parallel()
	views := []leaseView{{name: "x"}, {name: "y"}}
	plan := planLeases("s", "a", nil, views, nil)
	if !sameSet(plan.take, []string{"x", "y"}) {
		t.Fatalf("plan %+v, want every lease", plan)
	}
}

// leaseViews reads live holders; expired, released and missing leases are
// free; expiring exactly now is still held (the store refuses it).
func TestLeaseViews(t *testing.T) {
	t.Parallel()
	now := time.Unix(100, 0)
	states := []store.TriggerState{
		{Trigger: "live", Owner: "a", Epoch: 2, LeaseExpires: now.Add(time.Second)},
		{Trigger: "edge", Owner: "a", Epoch: 3, LeaseExpires: now},
		{Trigger: "expired", Owner: "b", Epoch: 4, LeaseExpires: now.Add(-time.Microsecond)},
		{Trigger: "released", Owner: "b", Epoch: 5},
		{Trigger: "never", Epoch: 0},
		{Trigger: "other", Owner: "c", LeaseExpires: now.Add(time.Hour)},
	}
	got := leaseViews([]string{"edge", "expired", "live", "missing", "never", "released"}, states, now)
	want := []leaseView{{"edge", "a", 3}, {"expired", "", 4}, {"live", "a", 2}, {"missing", "", 0},
		{"never", "", 0}, {"released", "", 5}}
	if !slices.Equal(got, want) {
		t.Fatalf("views %+v, want %+v", got, want)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// sim simulates lease rounds of processes over one space's leases. Time
// counts in rounds: a lease or a beat lasts ttl rounds.
type sim struct {
	t      *testing.T
	names  []string
	leases map[string]*simLease
	beats  map[string]int // process → expiry
	since  map[string]map[string]int
	now    int
	// moves counts leases taken by a process other than their last
	// holder.
	moves int
}

type simLease struct {
	owner   string
	epoch   int64
	expires int
}

const simTTL = 3

func newSim(t *testing.T, n int) *sim {
	t.Helper()
	s := &sim{t: t, leases: map[string]*simLease{}, beats: map[string]int{}, since: map[string]map[string]int{}}
	for i := range n {
		name := fmt.Sprintf("trigger-%02d", i)
		s.names = append(s.names, name)
		s.leases[name] = &simLease{expires: -1}
	}
	return s
}

// tick advances time by one round and runs a round of every process of
// order, in that order.
func (s *sim) tick(order ...string) {
	s.now++
	for _, p := range order {
		s.round(p)
	}
}

// round is one lease round of p, as Engine.round runs it.
func (s *sim) round(p string) {
	s.beats[p] = s.now + simTTL
	var procs []string
	for q, exp := range s.beats {
		if exp >= s.now {
			procs = append(procs, q)
		}
	}
	slices.Sort(procs)
	views := make([]leaseView, 0, len(s.names))
	for _, n := range s.names {
		l := s.leases[n]
		v := leaseView{name: n, epoch: l.epoch}
		if l.owner != "" && l.expires >= s.now {
			v.owner = l.owner
		}
		views = append(views, v)
	}
	plan := planLeases("s", p, procs, views, s.stale(p, views))
	for _, r := range plan.release {
		if l := s.leases[r.name]; l.owner == p && l.epoch == r.epoch {
			l.expires = -1
		}
	}
	for _, n := range plan.hold() {
		l := s.leases[n]
		if l.owner != p && l.owner != "" && l.expires >= s.now {
			continue // refused: another holder is live
		}
		if l.owner != p {
			if l.owner != "" {
				s.moves++
			}
			l.owner = p
			l.epoch++
		}
		l.expires = s.now + simTTL
	}
}

// stale mirrors balancer.stale with a period of one round.
func (s *sim) stale(p string, views []leaseView) map[string]bool {
	prev, next, out := s.since[p], map[string]int{}, map[string]bool{}
	for _, v := range views {
		if v.owner != "" {
			continue
		}
		since, ok := prev[v.name]
		if !ok {
			since = s.now
		}
		next[v.name], out[v.name] = since, s.now-since >= 1
	}
	s.since[p] = next
	return out
}

// held returns how many live leases each process holds, and how many
// leases nobody holds live.
func (s *sim) held() (map[string]int, int) {
	out, free := map[string]int{}, 0
	for _, l := range s.leases {
		if l.owner != "" && l.expires >= s.now {
			out[l.owner]++
		} else {
			free++
		}
	}
	return out, free
}

// balanced fails unless every lease is held live and each of procs
// holds its fair share or one less.
func (s *sim) balanced(what string, procs ...string) {
	s.t.Helper()
	held, free := s.held()
	share := fairShare(len(s.names), len(procs))
	if free != 0 {
		s.t.Fatalf("%s: %d leases free, held %v", what, free, held)
	}
	for _, p := range procs {
		if held[p] > share || (len(s.names)%len(procs) == 0 && held[p] != share) {
			s.t.Fatalf("%s: held %v, share %d", what, held, share)
		}
	}
}

// still runs rounds and fails if any lease changes hands or epoch.
func (s *sim) still(what string, rng *rand.Rand, rounds int, procs ...string) {
	s.t.Helper()
	epochs := map[string]int64{}
	for n, l := range s.leases {
		epochs[n] = l.epoch
	}
	moves := s.moves
	for range rounds {
		order := slices.Clone(procs)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		s.tick(order...)
	}
	for n, l := range s.leases {
		if l.epoch != epochs[n] || s.moves != moves {
			s.t.Fatalf("%s: lease %s changed hands while nothing changed (epoch %d → %d)", what, n, epochs[n], l.epoch)
		}
	}
	s.balanced(what, procs...)
}

func TestLoneProcessTakesAll(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 9, 50} {
		s := newSim(t, n)
		s.tick("a")
		if held, free := s.held(); free != 0 || held["a"] != n {
			t.Fatalf("%d triggers: held %v, %d free after one round", n, held, free)
		}
		s.still("alone", rand.New(rand.NewPCG(1, 2)), 10, "a")
	}
}

// Processes joining one by one converge to their shares in a few rounds
// and then never move a lease.
func TestSpreadConverges(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	s := newSim(t, 9)
	s.tick("a")
	s.tick("a", "b")
	s.tick("a", "b")
	s.tick("b", "a")
	s.balanced("a and b", "a", "b")
	s.still("a and b", rng, 10, "a", "b")
	s.tick("c", "a", "b")
	s.tick("b", "a", "c")
	s.tick("a", "c", "b")
	s.balanced("a, b and c", "a", "b", "c")
	s.still("a, b and c", rng, 20, "a", "b", "c")
}

// Processes starting together split the leases at once, without a lease
// changing hands.
func TestSpreadSimultaneousStart(t *testing.T) {
	t.Parallel()
	s := newSim(t, 9)
	s.now++
	for _, p := range []string{"a", "b", "c"} {
		s.beats[p] = s.now + simTTL
	}
	s.round("b")
	s.round("c")
	s.round("a")
	s.balanced("first round", "a", "b", "c")
	if s.moves != 0 {
		t.Fatalf("%d leases changed hands", s.moves)
	}
}

// A second process takes over about half of a lone process's leases: the
// first one's lowest-weight half.
func TestAddProcessMovesHalf(t *testing.T) {
	t.Parallel()
	s := newSim(t, 100)
	s.tick("a")
	for range 4 {
		s.tick("a", "b")
	}
	s.balanced("two", "a", "b")
	if s.moves < 40 || s.moves > 60 {
		t.Fatalf("%d of 100 leases moved, want about half", s.moves)
	}
	kept := []string{}
	for _, n := range s.names {
		if s.leases[n].owner == "a" {
			kept = append(kept, n)
		}
	}
	byW := slices.Clone(s.names)
	byWeight("s", "a", byW)
	if !sameSet(kept, byW[:50]) {
		t.Fatal("a did not keep its highest-weight leases")
	}
}

// A dead process's leases move to the others after the TTL; nobody
// else's do.
func TestDeadProcessLeasesMove(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	s := newSim(t, 9)
	for range 6 {
		s.tick("a", "b", "c")
	}
	s.balanced("three", "a", "b", "c")
	before := map[string]string{}
	for n, l := range s.leases {
		before[n] = l.owner
	}
	moves := s.moves
	for range simTTL + 2 {
		s.tick("a", "b") // c is dead
	}
	s.balanced("after c died", "a", "b")
	for n, l := range s.leases {
		if before[n] != "c" && l.owner != before[n] {
			t.Fatalf("lease %s moved from %s to %s", n, before[n], l.owner)
		}
	}
	if s.moves-moves != 3 {
		t.Fatalf("%d leases moved, want c's 3", s.moves-moves)
	}
	s.still("a and b", rng, 10, "a", "b")
}

// Random sizes, arrivals and round orders always converge, then stay.
func TestSpreadRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	all := []string{"p1", "p2", "p3", "p4", "p5"}
	for i := range 200 {
		n, k := rng.IntN(30), 1+rng.IntN(len(all))
		procs := all[:k]
		s := newSim(t, n)
		joined := 0
		for joined < k || s.now < 30 {
			if joined < k && rng.IntN(2) == 0 {
				joined++
			}
			order := slices.Clone(procs[:max(joined, 1)])
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			s.tick(order...)
		}
		s.balanced(fmt.Sprintf("case %d (%d triggers, %d processes)", i, n, k), procs...)
		s.still(fmt.Sprintf("case %d", i), rng, 10, procs...)
	}
}

// A process that beats but takes nothing (its space round keeps
// failing, say) strands no lease the others have room for: leases
// handed to it are taken by the others a round later.
func TestFallBackTakesStrandedLeases(t *testing.T) {
	t.Parallel()
	s := newSim(t, 10) // share 4: a and b have room for 8
	for range 4 {
		s.now++
		s.beats["z"] = s.now + simTTL
		s.round("a")
		s.round("b")
	}
	held, free := s.held()
	if free != 2 || held["a"] != 4 || held["b"] != 4 {
		t.Fatalf("held %v, %d free; want a and b at their share of 4", held, free)
	}
}
