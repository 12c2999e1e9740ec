// Package report renders eddybench's results: one Markdown document with
// a table per scenario (eddy's figure, the peer's figure and their ratio,
// against the target of issue 5) and one hand-written SVG bar chart per
// scenario.
package report

import "math"

// Meta describes the run.
type Meta struct {
	Date     string
	Mode     string // "full" or "quick"
	Machine  string
	Go       string
	Postgres string
	NATS     string
	Etcd     string
	Took     string
	Notes    []string
}

// Report is a whole run.
type Report struct {
	Meta     Meta
	Sections []Section
}

// Section is one scenario's results.
type Section struct {
	ID    int
	Title string
	Rows  []Row
	Notes []string
	// Err is set when the scenario failed; its rows are what it got.
	Err string
}

// Row is one comparison: eddy's figure against a peer's, in one unit.
type Row struct {
	Measure string
	Unit    string
	Eddy    string
	EddyVal float64
	Peer    string
	PeerVal float64
	// Lower marks a measure where less is better (latency, memory).
	Lower bool
	// Target is the goal in words ("" for none); Met says whether it was
	// reached.
	Target string
	Met    *bool
}

// Ratio is eddy's figure divided by the peer's (NaN without a peer
// figure).
func (r Row) Ratio() float64 {
	if r.PeerVal == 0 {
		return math.NaN()
	}
	return r.EddyVal / r.PeerVal
}

// RatioAtLeast sets the target "eddy ÷ peer ≥ min".
func (r Row) RatioAtLeast(min float64, text string) Row {
	r.Target = text
	met := r.Ratio() >= min
	r.Met = &met
	return r
}

// RatioAtMost sets the target "eddy ÷ peer ≤ max".
func (r Row) RatioAtMost(max float64, text string) Row {
	r.Target = text
	met := r.Ratio() <= max
	r.Met = &met
	return r
}

// EddyAtLeast sets an absolute target "eddy's figure ≥ min".
func (r Row) EddyAtLeast(min float64, text string) Row {
	r.Target = text
	met := r.EddyVal >= min
	r.Met = &met
	return r
}

// EddyAtMost sets an absolute target on eddy's figure.
func (r Row) EddyAtMost(max float64, text string) Row {
	r.Target = text
	met := r.EddyVal <= max
	r.Met = &met
	return r
}
