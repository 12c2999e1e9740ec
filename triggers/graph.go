package triggers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/eddy-run/eddy/changelog"
)

// The trigger graph (DESIGN.md section 7): its nodes are triggers, and an
// edge A → B means a delivery of A can write a row that B matches. It is
// built from declarations only, so it over-approximates: B's `when` is not
// consulted, and a function is assumed to use every op on every type it
// declares. A function that declares no writes is taken to write nothing
// and so feeds no trigger; such a function (a webhook writing back through
// the API, a Go handler) cannot be checked.

// WarningCycle is the code of a cycle warning.
const WarningCycle = "cycle"

// Limits of the cycle search. MaxCycles bounds the cycles reported for one
// trigger; maxSteps bounds the search itself, which is exponential in the
// worst case.
const (
	MaxCycles = 10
	maxSteps  = 100_000
)

// writeOps are the ops a function's writes can produce.
var writeOps = []string{changelog.OpPut, changelog.OpPatch, changelog.OpDelete, changelog.OpLink, changelog.OpUnlink}

// Warning is a non-fatal finding about a saved definition. Cycle, for a
// cycle warning, names the triggers in order, closing at the start.
type Warning struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Cycle   []string `json:"cycle,omitempty"`
}

// Feeds reports whether a delivery of from, whose function declares the
// types writes, can write a row that to matches: to is a change trigger
// whose types admit one of writes (no types admits every type), whose ops
// admit put, patch, delete, link or unlink (no ops admits them all), and
// whose actor lists admit the delivery's actor "trigger:<from>". A
// trigger feeds itself only with echo set; cron triggers are fed by
// nothing.
func Feeds(from *Trigger, writes []string, to *Trigger) bool {
	c := to.Source.Changes
	switch {
	case c == nil || len(writes) == 0:
		return false
	case from.Name == to.Name && !to.Echo:
		return false
	}
	actor := "trigger:" + from.Name
	if (len(c.Actors) > 0 && !slices.Contains(c.Actors, actor)) || slices.Contains(c.ExcludeActors, actor) {
		return false
	}
	return admitsAny(c.Types, writes) && admitsAny(c.Ops, writeOps)
}

// admitsAny reports whether the list (empty: everything) holds one of vs.
func admitsAny(list, vs []string) bool {
	if len(list) == 0 {
		return true
	}
	for _, v := range vs {
		if slices.Contains(list, v) {
			return true
		}
	}
	return false
}

// Graph is the trigger graph of a set of triggers. Build it with
// NewGraph; it is immutable.
type Graph struct {
	names []string         // sorted
	out   map[string][]int // trigger name -> indexes of the triggers it feeds, ascending
}

// NewGraph builds the graph of ts, given the types each function writes
// (keyed by function name; a function absent from writes writes nothing).
// Triggers are identified by name; a later duplicate replaces an earlier
// one.
func NewGraph(ts []*Trigger, writes map[string][]string) *Graph {
	byName := make(map[string]*Trigger, len(ts))
	for _, t := range ts {
		byName[t.Name] = t
	}
	g := &Graph{out: make(map[string][]int, len(byName))}
	for name := range byName {
		g.names = append(g.names, name)
	}
	slices.Sort(g.names)
	for _, a := range g.names {
		from := byName[a]
		for j, b := range g.names {
			if Feeds(from, writes[from.Function], byName[b]) {
				g.out[a] = append(g.out[a], j)
			}
		}
	}
	return g
}

// Next returns the names of the triggers name feeds, sorted.
func (g *Graph) Next(name string) []string {
	out := make([]string, 0, len(g.out[name]))
	for _, j := range g.out[name] {
		out = append(out, g.names[j])
	}
	return out
}

// CyclesThrough returns the elementary cycles through the trigger name,
// each as trigger names starting and ending with name (a self-loop is
// [name, name]), in lexicographic order of their paths, at most
// MaxCycles of them. truncated reports that more may exist.
func (g *Graph) CyclesThrough(name string) (cycles [][]string, truncated bool) {
	start, ok := slices.BinarySearch(g.names, name)
	if !ok {
		return nil, false
	}
	s := &cycleSearch{g: g, start: start, back: g.reachesStart(start), onPath: make([]bool, len(g.names))}
	s.walk(start, []int{start})
	return s.cycles, s.truncated
}

// reachesStart marks the triggers from which start can be reached.
func (g *Graph) reachesStart(start int) []bool {
	in := make([][]int, len(g.names))
	for i, a := range g.names {
		for _, j := range g.out[a] {
			in[j] = append(in[j], i)
		}
	}
	back := make([]bool, len(g.names))
	stack := []int{start}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range in[n] {
			if !back[p] {
				back[p] = true
				stack = append(stack, p)
			}
		}
	}
	return back
}

// cycleSearch is one depth-first enumeration of the cycles through start.
type cycleSearch struct {
	g         *Graph
	start     int
	back      []bool // can reach start
	onPath    []bool
	steps     int
	cycles    [][]string
	truncated bool
}

func (s *cycleSearch) walk(n int, path []int) {
	s.onPath[n] = true
	defer func() { s.onPath[n] = false }()
	for _, m := range s.g.out[s.g.names[n]] {
		if s.truncated {
			return
		}
		if s.steps++; s.steps > maxSteps || len(s.cycles) == MaxCycles {
			s.truncated = true
			return
		}
		switch {
		case m == s.start:
			s.cycles = append(s.cycles, s.namesOf(append(path, m)))
		case !s.onPath[m] && s.back[m]:
			s.walk(m, append(path, m))
		}
	}
}

func (s *cycleSearch) namesOf(path []int) []string {
	out := make([]string, len(path))
	for i, n := range path {
		out[i] = s.g.names[n]
	}
	return out
}

// CycleWarnings returns a cycle warning for each cycle of the trigger
// graph of ts (with writes as in NewGraph) through the trigger name, plus
// one saying the list was cut short if the search was. The result is
// never nil.
func CycleWarnings(ts []*Trigger, writes map[string][]string, name string) []Warning {
	cycles, truncated := NewGraph(ts, writes).CyclesThrough(name)
	out := make([]Warning, 0, len(cycles)+1)
	for _, c := range cycles {
		out = append(out, Warning{Code: WarningCycle, Cycle: c, Message: cycleMessage(c)})
	}
	if truncated {
		out = append(out, Warning{Code: WarningCycle, Message: fmt.Sprintf(
			"the search for cycles through trigger %q stopped after %d; there may be more", name, len(cycles))})
	}
	return out
}

func cycleMessage(c []string) string {
	if len(c) == 2 {
		return fmt.Sprintf("trigger %q can match rows its own deliveries write (echo is on); "+
			"the causality cap parks the chain at its depth limit", c[0])
	}
	return fmt.Sprintf("triggers form a cycle %s: each one's function writes rows the next one can match; "+
		"the causality cap parks the chain at its depth limit", strings.Join(c, " → "))
}
