package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
)

// PushMutation is one mutation of a push with its ordinal: the client's
// ordinals run 1, 2, 3, ... and each is sent until the server admitted it
// (DESIGN.md section 8b).
type PushMutation struct {
	Ordinal  int64
	Mutation Mutation
}

// PushResult answers a push: the client's last admitted ordinal and one
// receipt per mutation (a replayed ordinal answers its stored receipt; a
// rejected one advanced the ordinal all the same).
type PushResult struct {
	ClientID    string    `json:"clientId"`
	LastOrdinal int64     `json:"lastOrdinal"`
	Receipts    []Receipt `json:"receipts"`
	// Seq is the Eddy-Seq header.
	Seq int64 `json:"-"`
}

// GapError is a 409 mutation_gap answer: the push skipped an ordinal.
// The mutations before the gap were processed (Receipts, LastOrdinal);
// nothing from Got on was. A client resends from Expected.
type GapError struct {
	Expected, Got, LastOrdinal int64
	Receipts                   []Receipt
	Err                        *Error
}

// Error implements error.
func (e *GapError) Error() string {
	return fmt.Sprintf("mutation gap: the server expects ordinal %d, got %d", e.Expected, e.Got)
}

// Unwrap returns the server's problem.
func (e *GapError) Unwrap() error { return e.Err }

// gapOf turns a mutation_gap problem into a *GapError.
func gapOf(err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Code != problem.MutationGap {
		return err
	}
	g := &GapError{Err: e}
	g.Expected, _ = e.DetailInt("expected")
	g.Got, _ = e.DetailInt("got")
	g.LastOrdinal, _ = e.DetailInt("lastOrdinal")
	if raw, ok := e.Details["receipts"]; ok {
		if b, merr := json.Marshal(raw); merr == nil {
			_ = json.Unmarshal(b, &g.Receipts)
		}
	}
	return g
}

// Push sends a client's mutations with their ordinals (POST .../push).
// Repeating a push is always safe: ordinals the server admitted answer
// their stored receipts and append nothing, so a lost answer is retried
// as is (it is, after 429 and 503 with Retry-After). A skipped ordinal is
// a *GapError; a client id of another principal a 403 *Error.
func (s *Space) Push(ctx context.Context, clientID string, ms []PushMutation) (PushResult, error) {
	body := changelog.PushBody{ClientID: clientID, Mutations: make([]changelog.PushMutation, len(ms))}
	for i := range ms {
		o := ms[i].Ordinal
		body.Mutations[i] = changelog.PushMutation{Ordinal: &o, Mutation: ms[i].Mutation}
	}
	cl := send(http.MethodPost, s.path("push"), body)
	cl.retry = true
	var res PushResult
	ans, err := s.c.callJSON(ctx, cl, &res)
	if err != nil {
		return PushResult{}, gapOf(err)
	}
	res.Seq = seqHeader(ans.header)
	return res, nil
}

// PushClient is a push client as the server keeps it.
type PushClient struct {
	ClientID    string    `json:"clientId"`
	LastOrdinal int64     `json:"lastOrdinal"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// PushClient returns a push client of the token's principal (GET
// .../clients/{clientId}): not_found for an unknown (or forgotten) id,
// forbidden for another principal's.
func (s *Space) PushClient(ctx context.Context, clientID string) (PushClient, error) {
	var out PushClient
	_, err := s.c.callJSON(ctx, get(s.path("clients", clientID), nil), &out)
	return out, err
}
