package changelog

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/eddy-run/eddy/store"
)

// engineTypes maps each engine op to the one type its rows carry (the
// causality package names them TypeTrigger and TypeDelivery).
var engineTypes = map[string]string{
	OpFire: "eddy.trigger",
	OpPark: "eddy.delivery",
}

// validateEngineRow checks an engine row: op fire with type eddy.trigger
// or op park with type eddy.delivery, a valid entity id, an actor and a
// JSON object payload. A bad row is a programming error, not a client's.
func validateEngineRow(r *EngineRow) error {
	typ, ok := engineTypes[r.Op]
	switch {
	case !ok:
		return fmt.Errorf("op %q is not an engine op", r.Op)
	case r.Type != typ:
		return fmt.Errorf("op %s wants type %s, got %q", r.Op, typ, r.Type)
	case !ValidID(r.EntityID):
		return fmt.Errorf("invalid entity id %q", r.EntityID)
	case r.Provenance.Actor == "":
		return fmt.Errorf("provenance actor required")
	}
	if _, err := decodeObject(r.Payload); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	return nil
}

// validateEngine checks every engine row of a request.
func validateEngine(rows []EngineRow) error {
	for i := range rows {
		if err := validateEngineRow(&rows[i]); err != nil {
			return fmt.Errorf("changelog: engine row %d: %w", i, err)
		}
	}
	return nil
}

// appendEngine queues a request's engine rows as consecutive commits and
// returns their seqs.
func (g *groupState) appendEngine(rows []EngineRow) []int64 {
	seqs := make([]int64, 0, len(rows))
	for _, r := range rows {
		g.head++
		prov := r.Provenance
		prov.MutationID = ""
		c := store.Commit{
			Row: store.Row{
				Seq: g.head, TS: g.now, Actor: prov.Actor, Op: r.Op,
				EntityID: r.EntityID, Type: r.Type, Payload: compact(r.Payload),
			},
			Changes:    []store.Change{},
			Receipt:    store.Receipt{Status: store.ReceiptApplied, Seq: g.head, Accepted: []string{}, Rejected: []store.RejectedProperty{}},
			Provenance: prov,
		}
		g.commits = append(g.commits, pendingCommit{commit: c})
		seqs = append(seqs, g.head)
	}
	return seqs
}

// compact returns a validated engine payload without insignificant
// whitespace: every stored payload is compact, so readers forward it as
// stored (store.RawCommit.AppendJSON, the watch stream's rows).
func compact(payload json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, payload); err != nil {
		return payload // validated before; cannot happen
	}
	return buf.Bytes()
}
