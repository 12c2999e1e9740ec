package client

import (
	"context"
	"net/http"

	"github.com/eddy-run/eddy/changelog"
)

// Mutation is one requested change: ops put, patch, delete, link,
// unlink, merge and split, with the optional preconditions ifVersion and
// baseVersion (see docs/changelog.md#mutations).
type Mutation = changelog.Mutation

// SplitInto names the entity a split creates.
type SplitInto = changelog.SplitInto

// Mutation ops.
const (
	OpPut    = changelog.OpPut
	OpPatch  = changelog.OpPatch
	OpDelete = changelog.OpDelete
	OpLink   = changelog.OpLink
	OpUnlink = changelog.OpUnlink
	OpMerge  = changelog.OpMerge
	OpSplit  = changelog.OpSplit
)

// Batch is the body of POST .../mutations: mutations applied in order in
// one transaction as consecutive commits; with Atomic, all or nothing.
type Batch struct {
	Atomic    bool       `json:"atomic"`
	Mutations []Mutation `json:"mutations"`
	// Cause is an Eddy-Cause token: every commit is then authored by the
	// delivery's trigger.
	Cause string `json:"-"`
}

// MutationsResult answers a Batch: one receipt per mutation, in order.
type MutationsResult struct {
	Receipts []Receipt `json:"receipts"`
	// Seq is the Eddy-Seq header: the seq of the last commit appended, or
	// the head when none was.
	Seq int64 `json:"-"`
}

// Mutate applies a batch (POST .../mutations). Every mutation gets a
// receipt, rejected ones included; the call itself fails only for a
// batch that is not well formed (400, details.index) or not allowed. A
// batch whose every mutation has a MutationID is retried after 429/503
// with Retry-After: the ids make a repeat answer the stored receipts.
func (s *Space) Mutate(ctx context.Context, b Batch) (MutationsResult, error) {
	if b.Mutations == nil {
		b.Mutations = []Mutation{}
	}
	cl := send(http.MethodPost, s.path("mutations"), b)
	cl.retry = allIdentified(b.Mutations)
	if b.Cause != "" {
		cl.header = http.Header{"Eddy-Cause": {b.Cause}}
	}
	var res MutationsResult
	ans, err := s.c.callJSON(ctx, cl, &res)
	if err != nil {
		return MutationsResult{}, err
	}
	res.Seq = seqHeader(ans.header)
	return res, nil
}

// allIdentified reports whether every mutation has a mutation id.
func allIdentified(ms []Mutation) bool {
	for i := range ms {
		if ms[i].MutationID == "" {
			return false
		}
	}
	return len(ms) > 0
}
