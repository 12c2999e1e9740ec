// Package firstchange holds the driver-neutral half of
// store.Store.FirstChangesAfter: it deduplicates the keys into probes,
// picks each key's change out of the commit a driver's query found, and
// probes again past a commit that names a key without changing it. The
// query itself stays in the drivers.
package firstchange

import (
	"fmt"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// Probe asks for the first change of Key with seq > After.
type Probe struct {
	Key   store.EntityKey
	After int64
}

// Hit is one row of a driver's probe query: the probe at index Probe
// (0-based, into the probes queried) found commit Seq, whose changes
// column is Changes.
type Hit struct {
	Probe   int64
	Seq     int64
	Changes string
}

// Query runs one round of probes and returns what it found, at most one
// hit per probe; a probe without a hit has no such commit.
type Query func(probes []Probe) ([]Hit, error)

// Find returns, for each key that has one, the first change with
// seq > after that touched it, running query until no probe is left.
func Find(keys []store.EntityKey, after int64, query Query) (map[store.EntityKey]store.Change, error) {
	out := make(map[store.EntityKey]store.Change, len(keys))
	probes := make([]Probe, 0, len(keys))
	seen := make(map[store.EntityKey]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			probes = append(probes, Probe{Key: k, After: after})
		}
	}
	for len(probes) > 0 {
		hits, err := query(probes)
		if err != nil {
			return nil, err
		}
		if probes, err = settle(probes, hits, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// settle adds the changes hits found to out and returns the probes to run
// again: keys whose first commit named them but held no change of them.
func settle(probes []Probe, hits []Hit, out map[store.EntityKey]store.Change) ([]Probe, error) {
	var again []Probe
	for _, h := range hits {
		if h.Probe < 0 || h.Probe >= int64(len(probes)) {
			return nil, fmt.Errorf("probe index %d out of range", h.Probe)
		}
		k := probes[h.Probe].Key
		ch, ok, err := rowcodec.ChangeOf(h.Changes, k)
		switch {
		case err != nil:
			return nil, fmt.Errorf("seq %d: %w", h.Seq, err)
		case ok:
			out[k] = ch
		default:
			again = append(again, Probe{Key: k, After: h.Seq})
		}
	}
	return again, nil
}
