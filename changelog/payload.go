package changelog

import (
	"encoding/json"

	"github.com/eddy-run/eddy/store"
)

// payload is the wire row payload of a commit: it names what changed,
// not the values.
type payload struct {
	created    bool
	deleted    bool
	properties []string          // sorted accepted property names
	state      map[string]string // state fields a transition moved
	rel        string
	target     *store.EntityKey
	merged     *store.EntityKey
	into       *store.EntityKey
}

// encode returns the payload as a canonical JSON object; empty parts are
// omitted.
func (p payload) encode() json.RawMessage {
	m := map[string]any{}
	if p.created {
		m["created"] = true
	}
	if p.deleted {
		m["deleted"] = true
	}
	if len(p.properties) > 0 {
		m["properties"] = sortedCopy(p.properties)
	}
	if len(p.state) > 0 {
		m["state"] = p.state
	}
	if p.rel != "" {
		m["rel"] = p.rel
	}
	setKey(m, "target", p.target)
	setKey(m, "merged", p.merged)
	setKey(m, "into", p.into)
	return marshalCanonical(m)
}

func setKey(m map[string]any, name string, k *store.EntityKey) {
	if k != nil {
		m[name] = k
	}
}
