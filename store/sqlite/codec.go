package sqlite

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/eddy-run/eddy/store"
)

// micros encodes t as unix microseconds.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros decodes unix microseconds as a UTC time.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// utcMicro normalizes t to UTC at microsecond precision.
func utcMicro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// now is the current time, UTC, microseconds.
func now() time.Time { return utcMicro(time.Now()) }

// marshal encodes v as compact JSON without HTML escaping, so embedded raw
// JSON (properties, payloads) keeps its exact bytes.
func marshal(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// rawText stores a raw JSON document as exact text; empty becomes def.
func rawText(raw json.RawMessage, def string) string {
	if len(raw) == 0 {
		return def
	}
	return string(raw)
}

// snapshot is the stored form of a record inside a change or receipt: the
// JSON encoding of store.Record (Kind and GroupVersions excluded).
func snapshot(r *store.Record) (any, error) {
	if r == nil {
		return nil, nil
	}
	c := *r
	c.Properties = json.RawMessage(rawText(c.Properties, "{}"))
	if c.Links == nil {
		c.Links = []store.Link{}
	}
	c.CreatedAt = utcMicro(c.CreatedAt)
	c.UpdatedAt = utcMicro(c.UpdatedAt)
	return marshal(&c)
}

// unsnapshot decodes a snapshot column; SQL NULL gives nil.
func unsnapshot(col sql.NullString) (*store.Record, error) {
	if !col.Valid {
		return nil, nil
	}
	var r store.Record
	if err := json.Unmarshal([]byte(col.String), &r); err != nil {
		return nil, err
	}
	if r.Links == nil {
		r.Links = []store.Link{}
	}
	r.CreatedAt = utcMicro(r.CreatedAt)
	r.UpdatedAt = utcMicro(r.UpdatedAt)
	return &r, nil
}

// normReceipt gives nil slices their empty form so JSON shows [].
func normReceipt(r store.Receipt) store.Receipt {
	if r.Accepted == nil {
		r.Accepted = []string{}
	}
	if r.Rejected == nil {
		r.Rejected = []store.RejectedProperty{}
	}
	return r
}

func encodeReceipt(r store.Receipt) (string, error) { return marshal(normReceipt(r)) }

func decodeReceipt(text string) (store.Receipt, error) {
	var r store.Receipt
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return r, err
	}
	return normReceipt(r), nil
}

func encodeStrings(s []string) (string, error) {
	if s == nil {
		s = []string{}
	}
	return marshal(s)
}

func decodeStrings(text string) ([]string, error) {
	s := []string{}
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return nil, err
	}
	if s == nil {
		s = []string{}
	}
	return s, nil
}

// recordCols are the entities columns every record query selects, in
// the order scanRecord reads them.
const recordCols = `type, id, version, kind, properties, links, group_versions, created_at, updated_at`

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanRecord reads one row of recordCols.
func scanRecord(sc scanner) (store.Record, error) {
	var (
		r             store.Record
		props         string
		links, groups string
		created, upd  int64
	)
	err := sc.Scan(&r.Type, &r.ID, &r.Version, &r.Kind, &props, &links, &groups, &created, &upd)
	if err != nil {
		return r, err
	}
	r.Properties = json.RawMessage(props)
	r.CreatedAt, r.UpdatedAt = fromMicros(created), fromMicros(upd)
	if err := json.Unmarshal([]byte(links), &r.Links); err != nil {
		return r, err
	}
	if r.Links == nil {
		r.Links = []store.Link{}
	}
	if err := json.Unmarshal([]byte(groups), &r.GroupVersions); err != nil {
		return r, err
	}
	return r, nil
}

// recordArgs are the insert arguments of an entities row after space.
func recordArgs(r *store.Record) ([]any, error) {
	links := r.Links
	if links == nil {
		links = []store.Link{}
	}
	lt, err := marshal(links)
	if err != nil {
		return nil, err
	}
	gt, err := marshal(r.GroupVersions)
	if err != nil {
		return nil, err
	}
	kind := r.Kind
	if kind == "" {
		kind = store.KindLive
	}
	return []any{r.Type, r.ID, r.Version, kind, rawText(r.Properties, "{}"), lt, gt,
		micros(r.CreatedAt), micros(r.UpdatedAt)}, nil
}

// keysJSON encodes entity keys as a JSON array of [type, id] pairs for
// json_each, so one statement serves any number of keys.
func keysJSON(keys []store.EntityKey) (string, error) {
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		pairs[i] = [2]string{k.Type, k.ID}
	}
	return marshal(pairs)
}
