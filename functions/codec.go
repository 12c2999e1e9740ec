package functions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// MaxResponseBytes bounds the body of a webhook answer that DecodeResponse
// reads; the executor should read at most one byte more.
var MaxResponseBytes = 1 << 20

// Request is the JSON body POSTed to a webhook: the delivery id (also the
// webhook-id header and the idempotency key), the wire row, and the
// entity's after and before snapshots (null when absent).
type Request struct {
	Delivery string        `json:"delivery"`
	Row      store.Row     `json:"row"`
	Entity   *store.Record `json:"entity"`
	Before   *store.Record `json:"before"`
}

// BuildRequest encodes the body of a webhook delivery. Absent payloads,
// properties and links are written as {} and [] rather than null.
func BuildRequest(delivery string, row store.Row, entity, before *store.Record) ([]byte, error) {
	if len(row.Payload) == 0 {
		row.Payload = json.RawMessage("{}")
	}
	b, err := json.Marshal(Request{Delivery: delivery, Row: row, Entity: normalRecord(entity), Before: normalRecord(before)})
	if err != nil {
		return nil, fmt.Errorf("encode webhook request: %w", err)
	}
	return b, nil
}

func normalRecord(r *store.Record) *store.Record {
	if r == nil {
		return nil
	}
	c := *r
	if len(c.Properties) == 0 {
		c.Properties = json.RawMessage("{}")
	}
	if c.Links == nil {
		c.Links = []store.Link{}
	}
	return &c
}

// response is the answer a webhook may give with a 2xx status.
type response struct {
	Actions json.RawMessage `json:"actions"`
}

// DecodeResponse decodes the body of a 2xx webhook answer into validated
// mutations. A body that is empty or not a JSON object carries no actions,
// nor does an object without "actions" (other fields are ignored). If
// present, "actions" must be a list of at most MaxActions mutation objects
// ({"op", "type", "entityId", ...} as in POST .../mutations) with op put,
// patch, delete, link or unlink; unknown fields are refused. Errors wrap
// ErrInvalidResponse and, for one action, the *problem.Error that refused
// it (or ErrTooManyActions).
func DecodeResponse(body []byte) ([]changelog.Mutation, error) {
	if len(body) > MaxResponseBytes {
		return nil, fmt.Errorf("%w: body larger than %d bytes", ErrInvalidResponse, MaxResponseBytes)
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return nil, nil
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidResponse, err)
	}
	if len(r.Actions) == 0 || string(r.Actions) == "null" {
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(r.Actions, &raws); err != nil {
		return nil, fmt.Errorf("%w: actions must be a list", ErrInvalidResponse)
	}
	if len(raws) > MaxActions {
		return nil, fmt.Errorf("%w: %w: %d actions, at most %d", ErrInvalidResponse, ErrTooManyActions, len(raws), MaxActions)
	}
	ms := make([]changelog.Mutation, len(raws))
	for i, raw := range raws {
		if err := decodeAction(raw, &ms[i]); err != nil {
			return nil, fmt.Errorf("%w: actions[%d]: %w", ErrInvalidResponse, i, err)
		}
	}
	return ms, nil
}

// decodeAction strictly decodes and validates one action.
func decodeAction(raw json.RawMessage, m *changelog.Mutation) error {
	if raw[0] != '{' {
		return errors.New("must be an object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return jsonProblem("action", err)
	}
	if m.Op == changelog.OpMerge || m.Op == changelog.OpSplit {
		return fieldError("op", "%q is not allowed in an action (want put, patch, delete, link or unlink)", m.Op)
	}
	return changelog.ValidateMutation(m)
}
