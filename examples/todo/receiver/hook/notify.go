package hook

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Delivery is the body eddy posts to a webhook function.
type Delivery struct {
	Delivery string  `json:"delivery"`
	Row      Row     `json:"row"`
	Entity   *Record `json:"entity"`
	Before   *Record `json:"before"`
}

// Row is a changelog row as webhooks receive it.
type Row struct {
	Seq      int64   `json:"seq"`
	Actor    string  `json:"actor"`
	Op       string  `json:"op"`
	Type     string  `json:"type"`
	EntityID string  `json:"entityId"`
	Payload  Payload `json:"payload"`
}

// Payload is what a row says changed (names, not values).
type Payload struct {
	Created    bool              `json:"created"`
	Deleted    bool              `json:"deleted"`
	Properties []string          `json:"properties"`
	State      map[string]string `json:"state"`
}

// Record is an entity as eddy shows it.
type Record struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Version    int64           `json:"version"`
	Properties json.RawMessage `json:"properties"`
}

// notify serves POST /hook: one log line per delivery, then 204.
func (rc *receiver) notify(w http.ResponseWriter, _ *http.Request, body []byte) {
	var d Delivery
	if err := json.Unmarshal(body, &d); err != nil {
		http.Error(w, "decode delivery: "+err.Error(), http.StatusBadRequest)
		return
	}
	rc.cfg.Logger.Print(Describe(d))
	w.WriteHeader(http.StatusNoContent)
}

// Describe renders a delivery as one readable line, e.g.
// "hook dlv_x: seq 3 patch task/t1 by owner: changed status; status → done".
func Describe(d Delivery) string {
	r := d.Row
	line := fmt.Sprintf("hook %s: seq %d %s %s/%s by %s", d.Delivery, r.Seq, r.Op, r.Type, r.EntityID, r.Actor)
	var parts []string
	switch {
	case r.Payload.Created:
		parts = append(parts, "created")
	case r.Payload.Deleted:
		parts = append(parts, "deleted")
	}
	if len(r.Payload.Properties) > 0 {
		parts = append(parts, "changed "+strings.Join(r.Payload.Properties, ", "))
	}
	if s := states(r.Payload.State); s != "" {
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return line
	}
	return line + ": " + strings.Join(parts, "; ")
}

// states renders the state fields a transition moved, in name order.
func states(m map[string]string) string {
	names := slices.Sorted(maps.Keys(m))
	for i, k := range names {
		names[i] = k + " → " + m[k]
	}
	return strings.Join(names, ", ")
}
