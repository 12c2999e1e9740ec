package changelog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/eddy-run/eddy/internal/ijson"
	"github.com/eddy-run/eddy/problem"
)

// PushMutation is one mutation of a push body: a Mutation with its
// ordinal (and no mutationId: a pushed mutation's id is
// <clientId>:<ordinal>).
type PushMutation struct {
	Ordinal *int64 `json:"ordinal"`
	Mutation
}

// PushBody is the body of POST .../push.
type PushBody struct {
	ClientID  string         `json:"clientId"`
	Mutations []PushMutation `json:"mutations"`
}

// DecodePush strictly decodes a push body: unknown fields, trailing
// data, a missing or malformed clientId, an empty list, more than
// MaxMutations mutations, a missing ordinal or one below 1, a
// mutationId, and any mutation ValidateMutation refuses are bad_request
// (details.index names the mutation). It returns the request to Write,
// without its Owner.
func DecodePush(r io.Reader) (Push, []Mutation, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return Push{}, nil, fmt.Errorf("read push body: %w", err)
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := ijson.Check(raw); err != nil {
			return Push{}, nil, ijsonProblem("push body", err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var body PushBody
	if err := dec.Decode(&body); err != nil {
		if errors.Is(err, io.EOF) {
			return Push{}, nil, problem.New(problem.BadRequest, `empty body: want {"clientId": "...", "mutations": [...]}`)
		}
		return Push{}, nil, jsonProblem("push body", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Push{}, nil, problem.New(problem.BadRequest, "push body: trailing data after JSON object")
	}
	if !ValidClientID(body.ClientID) {
		return Push{}, nil, fieldError("clientId", "a push needs a clientId of 1 to %d printable characters without spaces", MaxClientID)
	}
	p := Push{ClientID: body.ClientID, Ordinals: make([]int64, len(body.Mutations))}
	ms := make([]Mutation, len(body.Mutations))
	for i, pm := range body.Mutations {
		switch {
		case pm.Ordinal == nil:
			return Push{}, nil, fieldError("ordinal", "mutations[%d]: no ordinal", i).With("index", i)
		case *pm.Ordinal < 1:
			return Push{}, nil, fieldError("ordinal", "mutations[%d]: ordinal %d is below 1", i, *pm.Ordinal).With("index", i)
		case pm.MutationID != "":
			return Push{}, nil, fieldError("mutationId", "mutations[%d]: a pushed mutation's id is <clientId>:<ordinal>; send no mutationId", i).With("index", i)
		}
		p.Ordinals[i], ms[i] = *pm.Ordinal, pm.Mutation
	}
	if err := checkBatch(ms); err != nil {
		return Push{}, nil, err
	}
	return p, ms, nil
}
