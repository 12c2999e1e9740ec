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
// omitted. It builds the decoded form encodeCanonical takes directly,
// with no encoding/json round trip.
func (p payload) encode() json.RawMessage {
	m := map[string]any{}
	if p.created {
		m["created"] = true
	}
	if p.deleted {
		m["deleted"] = true
	}
	if len(p.properties) > 0 {
		names := make([]any, len(p.properties))
		for i, n := range sortedCopy(p.properties) {
			names[i] = n
		}
		m["properties"] = names
	}
	if len(p.state) > 0 {
		st := make(map[string]any, len(p.state))
		for k, v := range p.state {
			st[k] = v
		}
		m["state"] = st
	}
	if p.rel != "" {
		m["rel"] = p.rel
	}
	setKey(m, "target", p.target)
	setKey(m, "merged", p.merged)
	setKey(m, "into", p.into)
	return encodeCanonical(m)
}

func setKey(m map[string]any, name string, k *store.EntityKey) {
	if k != nil {
		m[name] = map[string]any{"type": k.Type, "id": k.ID}
	}
}
