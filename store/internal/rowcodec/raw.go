package rowcodec

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"

	"github.com/eddy-run/eddy/store"
)

// RawCommit is a commit row as read, its receipt, provenance and changes
// columns still encoded (an empty Receipt was not read: it decodes as
// the zero receipt).
type RawCommit struct {
	store.Commit
	Receipt, Provenance, Changes string
}

// Decode decodes the encoded columns into the commit.
func (r *RawCommit) Decode() (store.Commit, error) {
	c := r.Commit
	var err error
	if r.Receipt != "" {
		if c.Receipt, err = DecodeReceipt(r.Receipt); err != nil {
			return c, fmt.Errorf("seq %d receipt: %w", c.Seq, err)
		}
	}
	if err := json.Unmarshal([]byte(r.Provenance), &c.Provenance); err != nil {
		return c, fmt.Errorf("seq %d provenance: %w", c.Seq, err)
	}
	if c.Changes, err = DecodeChanges(r.Changes); err != nil {
		return c, fmt.Errorf("seq %d: %w", c.Seq, err)
	}
	return c, nil
}

// parallelFrom is the page size from which DecodeAll spreads the work
// over the CPUs: below it, goroutines cost more than they save.
const parallelFrom = 128

// DecodeAll decodes a page of raw commits in order (a non-nil slice),
// on every CPU for a large page: JSON decoding is most of the cost of
// reading commits.
func DecodeAll(raws []RawCommit) ([]store.Commit, error) {
	out := make([]store.Commit, len(raws))
	workers := min(runtime.GOMAXPROCS(0), len(raws)/parallelFrom+1)
	if workers <= 1 {
		return out, decodeRange(raws, out, 0, len(raws))
	}
	errs := make([]error, workers)
	chunk := (len(raws) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, len(raws))
		wg.Go(func() { errs[w] = decodeRange(raws, out, lo, hi) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func decodeRange(raws []RawCommit, out []store.Commit, lo, hi int) error {
	for i := lo; i < hi; i++ {
		c, err := raws[i].Decode()
		if err != nil {
			return err
		}
		out[i] = c
	}
	return nil
}
