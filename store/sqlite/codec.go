package sqlite

import (
	"time"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// micros encodes t as unix microseconds.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros decodes unix microseconds as a UTC time.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// utcMicro normalizes t to UTC at microsecond precision.
func utcMicro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// now is the current time, UTC, microseconds.
func now() time.Time { return utcMicro(time.Now()) }

// recordCols are the entities columns every record query selects, in
// the order scanRecord reads them.
const recordCols = `type, id, version, kind, properties, links, group_versions, created_at, updated_at`

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanRecord reads one row of recordCols, then the columns after them
// into extra.
func scanRecord(sc scanner, extra ...any) (store.Record, error) {
	var (
		r            store.Record
		c            rowcodec.RecordColumns
		created, upd int64
	)
	dest := append([]any{&r.Type, &r.ID, &r.Version, &r.Kind, &c.Properties, &c.Links, &c.GroupVersions, &created, &upd}, extra...)
	err := sc.Scan(dest...)
	if err != nil {
		return r, err
	}
	r.CreatedAt, r.UpdatedAt = fromMicros(created), fromMicros(upd)
	return r, rowcodec.DecodeRecord(&r, c)
}

// recordArgs are the insert arguments of an entities row numbered num
// (an int64, or nil for none).
func recordArgs(space string, r *store.Record, num any) ([]any, error) {
	c, err := rowcodec.EncodeRecord(r)
	if err != nil {
		return nil, err
	}
	kind := r.Kind
	if kind == "" {
		kind = store.KindLive
	}
	return []any{space, r.Type, r.ID, r.Version, kind, c.Properties, c.Links, c.GroupVersions,
		micros(r.CreatedAt), micros(r.UpdatedAt), num}, nil
}

// keysJSON encodes entity keys as a JSON array of [type, id] pairs for
// json_each, so one statement serves any number of keys.
func keysJSON(keys []store.EntityKey) (string, error) {
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		pairs[i] = [2]string{k.Type, k.ID}
	}
	return rowcodec.Marshal(pairs)
}
