package server

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/internal/sortid"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// generatedIDRandom is the number of random characters of a generated
// entity id: the 60 bits the ids had before the time was put first.
const generatedIDRandom = 12

// writeAnswer is the answer to an entity write.
type writeAnswer struct {
	Receipt store.Receipt `json:"receipt"`
	Entity  *store.Record `json:"entity"`
}

// getEntity answers GET .../entities/{type}/{id} with the record and its
// version as ETag.
func (s *Server) getEntity(w http.ResponseWriter, r *http.Request) error {
	space, key, err := entityPath(r)
	if err != nil {
		return err
	}
	rd, err := s.readerType(r, space, key.Type)
	if err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	rec, err := s.log.GetWith(r.Context(), space, key, changelog.GetOptions{Space: knownSpace(rd)})
	if err != nil {
		return err
	}
	if !rd.CanReadRecord(&rec) {
		// Hidden like an absent entity: its existence is not told.
		return problem.New(problem.NotFound, "%s/%s not found", key.Type, key.ID)
	}
	w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(rec.Version, 10)))
	s.writeJSON(w, r, http.StatusOK, recordView(&rec))
	return nil
}

// putEntity answers PUT .../entities/{type}/{id}: replace properties.
func (s *Server) putEntity(w http.ResponseWriter, r *http.Request) error {
	m, p, err := s.entityMutation(r, changelog.OpPut)
	if err != nil {
		return err
	}
	if m.Properties, err = decodeObject(r, "properties"); err != nil {
		return err
	}
	return s.writeOne(w, r, p, m, false)
}

// patchEntity answers PATCH .../entities/{type}/{id}: a JSON merge patch.
func (s *Server) patchEntity(w http.ResponseWriter, r *http.Request) error {
	m, p, err := s.entityMutation(r, changelog.OpPatch)
	if err != nil {
		return err
	}
	if err := patchContentType(r); err != nil {
		return err
	}
	if m.Patch, err = decodeObject(r, "merge patch"); err != nil {
		return err
	}
	return s.writeOne(w, r, p, m, false)
}

// deleteEntity answers DELETE .../entities/{type}/{id} with a tombstone.
func (s *Server) deleteEntity(w http.ResponseWriter, r *http.Request) error {
	m, p, err := s.entityMutation(r, changelog.OpDelete)
	if err != nil {
		return err
	}
	return s.writeOne(w, r, p, m, false)
}

// createEntity answers POST .../entities/{type}: put with a generated id.
func (s *Server) createEntity(w http.ResponseWriter, r *http.Request) error {
	space, typ := r.PathValue("space"), r.PathValue("type")
	p, err := authorizeWrite(r, space, typ)
	if err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	if err := validType(typ); err != nil {
		return err
	}
	m := changelog.Mutation{Op: changelog.OpPut, Type: typ, EntityID: generateID(), MutationID: r.Header.Get("Idempotency-Key")}
	if m.Properties, err = decodeObject(r, "properties"); err != nil {
		return err
	}
	return s.writeOne(w, r, p, m, true)
}

// entityMutation authorizes an entity write and builds its mutation from
// the path and the Idempotency-Key and If-Match headers.
func (s *Server) entityMutation(r *http.Request, op string) (changelog.Mutation, *auth.Principal, error) {
	space, key, err := entityPath(r)
	if err != nil {
		return changelog.Mutation{}, nil, err
	}
	p, err := authorizeWrite(r, space, key.Type)
	if err != nil {
		return changelog.Mutation{}, nil, err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return changelog.Mutation{}, nil, err
	}
	m := changelog.Mutation{Op: op, Type: key.Type, EntityID: key.ID, MutationID: r.Header.Get("Idempotency-Key")}
	if v, ok, err := ifMatch(r); err != nil {
		return changelog.Mutation{}, nil, err
	} else if ok {
		m.IfVersion, m.IfMatch = &v, true
	}
	return m, p, nil
}

// writeOne applies one mutation and answers {"receipt", "entity"}: 201 if
// it created the entity (always for a generated id), 200 otherwise; a
// rejected receipt is the problem of its reason code. With Eddy-Cause the
// write is delivery-authored (see writeProvenance).
func (s *Server) writeOne(w http.ResponseWriter, r *http.Request, p *auth.Principal, m changelog.Mutation, generated bool) error {
	prov, err := s.writeProvenance(r, p, r.PathValue("space"))
	if err != nil {
		return err
	}
	res, err := s.log.Write(r.Context(), changelog.WriteRequest{
		Space:      r.PathValue("space"),
		Mutations:  []changelog.Mutation{m},
		Provenance: prov,
	})
	if err != nil {
		return err
	}
	setSeq(w, res.LastSeq)
	rc := receiptView(res.Receipts[0])
	if rc.Status == store.ReceiptRejected {
		return rejection(rc)
	}
	status := http.StatusOK
	if res.Created[0] || (generated && rc.Status == store.ReceiptApplied) {
		status = http.StatusCreated
	}
	var ent *store.Record
	if res.Entities[0] != nil {
		ent = recordView(res.Entities[0])
		if generated {
			w.Header().Set("Location", entityURL(r.PathValue("space"), ent.Type, ent.ID))
		}
	}
	if ent, err = s.writtenView(r, p, ent); err != nil {
		return err
	}
	s.writeJSON(w, r, status, writeAnswer{Receipt: rc, Entity: ent})
	return nil
}

// writtenView is the entity a write answers with: null when the writer
// may not read what it left (a type's access rule), so a patch never
// shows properties others wrote.
func (s *Server) writtenView(r *http.Request, p *auth.Principal, ent *store.Record) (*store.Record, error) {
	if ent == nil || p.IsAdmin() {
		return ent, nil
	}
	space := r.PathValue("space")
	pol := s.auth.Policies().Latest(space)
	if pol == nil {
		var err error
		if pol, err = s.auth.Policies().For(r.Context(), space); err != nil {
			return nil, err
		}
	}
	if !auth.NewReader(p, pol).CanReadRecord(ent) {
		return nil, nil
	}
	return ent, nil
}

// rejection is the problem answer of a rejected receipt: its reason code,
// with the receipt in details.receipt.
func rejection(rc store.Receipt) error {
	code, msg := problem.Conflict, "mutation rejected"
	if rc.Reason != nil {
		code, msg = rc.Reason.Code, rc.Reason.Message
	}
	return problem.New(code, "%s", msg).With("receipt", rc)
}

// provenance is the provenance template of an API write (depth 0, no
// cause).
func provenance(r *http.Request, p *auth.Principal) store.Provenance {
	return store.Provenance{
		Actor:       p.Actor,
		Via:         "api",
		RequestID:   requestID(r.Context()),
		Traceparent: traceparent(r),
	}
}

// entityPath reads and checks {space}, {type} and {id}.
func entityPath(r *http.Request) (string, store.EntityKey, error) {
	key := store.EntityKey{Type: r.PathValue("type"), ID: r.PathValue("id")}
	if err := validType(key.Type); err != nil {
		return "", key, err
	}
	if !changelog.ValidID(key.ID) {
		return "", key, problem.Param("id", "%q is not a valid entity id (want [A-Za-z0-9._:-]{1,128})", key.ID)
	}
	return r.PathValue("space"), key, nil
}

// validType checks a type name.
func validType(typ string) error {
	if !changelog.ValidTypeName(typ) {
		return problem.Param("type", "%q is not a valid type name (want [a-z][a-z0-9-]*, dot-separated)", typ)
	}
	return nil
}

// ifMatch parses If-Match: a version, bare (7), quoted ("7") or weak
// (W/"7").
func ifMatch(r *http.Request) (int64, bool, error) {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	if h == "" {
		return 0, false, nil
	}
	v := strings.TrimPrefix(h, "W/")
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false, badRequest("If-Match %q is not an entity version (want 7, \"7\" or W/\"7\")", h).With("header", "If-Match")
	}
	return n, true, nil
}

// patchContentType accepts application/merge-patch+json and
// application/json.
func patchContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/merge-patch+json" || mt == "application/json") {
		return nil
	}
	return badRequest("PATCH needs Content-Type application/merge-patch+json (or application/json), got %q", ct).With("header", "Content-Type")
}

// generateID returns a fresh entity id: the time in milliseconds as ten
// characters of lowercase base32 whose order is the time's, then twelve
// random ones (sortid). Ids made later sort later, so the entities made
// through POST .../entities/{type} land at the end of the entities table
// and of the entity history index, beside the ones made with them: on
// SQLite a group commit of 16 of them writes a few pages where random ids
// wrote 16 of each (docs/storage.md, "Entity ids").
func generateID() string { return sortid.New("", generatedIDRandom) }

func entityURL(space, typ, id string) string {
	return "/api/v1/spaces/" + url.PathEscape(space) + "/entities/" + url.PathEscape(typ) + "/" + url.PathEscape(id)
}

// recordView returns a copy of rec with empty links and properties shown
// as [] and {} rather than null.
func recordView(rec *store.Record) *store.Record {
	c := *rec
	if c.Links == nil {
		c.Links = []store.Link{}
	}
	if len(c.Properties) == 0 {
		c.Properties = json.RawMessage("{}")
	}
	return &c
}

// receiptView returns rc with empty lists shown as [].
func receiptView(rc store.Receipt) store.Receipt {
	if rc.Accepted == nil {
		rc.Accepted = []string{}
	}
	if rc.Rejected == nil {
		rc.Rejected = []store.RejectedProperty{}
	}
	return rc
}
