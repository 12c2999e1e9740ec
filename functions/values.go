package functions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/eddy-run/eddy/store"
)

// rowValue is the wire row as expr sees it: a map with seq, ts (RFC 3339
// string), actor, op, entityId, type and payload.
func rowValue(r store.Row) (map[string]any, error) {
	payload, err := decodeJSON(r.Payload)
	if err != nil {
		return nil, fmt.Errorf("row payload: %w", err)
	}
	return map[string]any{
		"seq": int(r.Seq), "ts": formatTime(r.TS), "actor": r.Actor, "op": r.Op,
		"entityId": r.EntityID, "type": r.Type, "payload": payload,
	}, nil
}

// recordValue is a record as expr sees it, {type, id, version, properties,
// links}, or nil.
func recordValue(r *store.Record) (any, error) {
	if r == nil {
		return nil, nil
	}
	props, err := decodeJSON(r.Properties)
	if err != nil {
		return nil, fmt.Errorf("properties: %w", err)
	}
	if props == nil {
		props = map[string]any{}
	}
	links := make([]any, len(r.Links))
	for i, l := range r.Links {
		links[i] = map[string]any{
			"rel":    l.Rel,
			"target": map[string]any{"type": l.Target.Type, "id": l.Target.ID},
		}
	}
	return map[string]any{
		"type": r.Type, "id": r.ID, "version": int(r.Version),
		"properties": props, "links": links,
	}, nil
}

// decodeJSON decodes raw JSON (nil if empty or null) with numbers as int
// when they are integers that fit, else float64, so expr compares and adds
// them naturally.
func decodeJSON(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

// numbers replaces every json.Number in v.
func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil && i >= math.MinInt && i <= math.MaxInt {
			return int(i)
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	}
	return v
}
