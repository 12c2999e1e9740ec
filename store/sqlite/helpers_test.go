package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newStore opens and migrates a fresh database in a temporary directory.
func newStore(t *testing.T) *Store {
	t.Helper()
	return storetest.Migrated(t, func(ctx context.Context) (*Store, error) {
		return Open(ctx, filepath.Join(t.TempDir(), "eddy.db"))
	})
}

// newSpace creates a space and fails the test on error.
func newSpace(t *testing.T, s *Store, id string) store.Space {
	t.Helper()
	sp, err := s.SpaceCreate(context.Background(), id, "ep-"+id)
	if err != nil {
		t.Fatalf("create space %s: %v", id, err)
	}
	return sp
}

// baseTime is a fixed UTC time at microsecond precision.
var baseTime = time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC)

// live builds a live record written at seq.
func live(typ, id string, seq int64, props string) store.Record {
	return store.Record{
		Type: typ, ID: id, Version: seq, Kind: store.KindLive,
		Properties:    json.RawMessage(props),
		Links:         []store.Link{},
		CreatedAt:     baseTime,
		UpdatedAt:     baseTime.Add(time.Duration(seq) * time.Second),
		GroupVersions: map[string]int64{"": seq},
	}
}

// upsertCommit builds a commit that creates or updates one entity, with a
// receipt under mutationID (may be empty).
func upsertCommit(seq int64, before *store.Record, after store.Record, actor, mutationID string) (store.Commit, []store.Record) {
	kind, op := store.ChangeCreated, "create"
	if before != nil {
		kind, op = store.ChangeUpdated, "update"
	}
	after.Version = seq
	snap := after
	snap.Kind, snap.GroupVersions = "", nil
	c := store.Commit{
		Row: store.Row{
			Seq: seq, TS: baseTime.Add(time.Duration(seq) * time.Second),
			Actor: actor, Op: op, EntityID: after.ID, Type: after.Type,
			Payload: json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq)),
		},
		Changes: []store.Change{{
			Ordinal: 0, Kind: kind, Type: after.Type, ID: after.ID, Version: seq,
			Before: before, After: &snap, ConflictGroups: []string{},
		}},
		Receipt: store.Receipt{
			MutationID: mutationID, Status: store.ReceiptApplied, Seq: seq, Version: seq,
			Accepted: []string{}, Rejected: []store.RejectedProperty{},
		},
		Provenance: store.Provenance{Actor: actor, Via: "api", MutationID: mutationID},
	}
	return c, []store.Record{after}
}

// deleteCommit builds a commit that deletes an entity, leaving a tombstone.
func deleteCommit(seq int64, before store.Record, actor string) (store.Commit, []store.Record) {
	snap := before
	snap.Kind, snap.GroupVersions = "", nil
	tomb := before
	tomb.Kind, tomb.Version, tomb.UpdatedAt = store.KindDeleted, seq, baseTime.Add(time.Duration(seq)*time.Second)
	c := store.Commit{
		Row: store.Row{
			Seq: seq, TS: baseTime.Add(time.Duration(seq) * time.Second),
			Actor: actor, Op: "delete", EntityID: before.ID, Type: before.Type,
			Payload: json.RawMessage(`{}`),
		},
		Changes: []store.Change{{
			Ordinal: 0, Kind: store.ChangeDeleted, Type: before.Type, ID: before.ID, Version: seq,
			Before: &snap, ConflictGroups: []string{},
		}},
		Receipt:    store.Receipt{Status: store.ReceiptApplied, Seq: seq, Version: seq},
		Provenance: store.Provenance{Actor: actor, Via: "api"},
	}
	return c, []store.Record{tomb}
}

// commitOne runs one write transaction appending c and commits it.
func commitOne(t *testing.T, s *Store, space string, c store.Commit, recs []store.Record) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: space})
	if err != nil {
		t.Fatalf("write begin: %v", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := tx.Append(ctx, c, recs); err != nil {
		t.Fatalf("append %d: %v", c.Seq, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit %d: %v", c.Seq, err)
	}
}

// seqs returns the seqs of rows (or of commits).
func seqs[R interface{ store.Row | store.Commit }](rows []R) []int64 {
	out := make([]int64, len(rows))
	for i := range rows {
		switch r := any(&rows[i]).(type) {
		case *store.Row:
			out[i] = r.Seq
		case *store.Commit:
			out[i] = r.Seq
		}
	}
	return out
}

// direct runs a test's own SQL on the write connection, taking it for
// each call as a store write does.
type direct struct{ w *writer }

func (s *Store) direct() direct { return direct{s.wr} }

func (d direct) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := d.w.acquire(ctx); err != nil {
		return nil, err
	}
	defer d.w.release()
	return d.w.conn.ExecContext(ctx, query, args...)
}

// QueryRowContext runs query; its row is read after the connection is
// given back, which no test does while a write runs.
func (d direct) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := d.w.acquire(ctx); err != nil {
		panic(err)
	}
	defer d.w.release()
	return d.w.conn.QueryRowContext(ctx, query, args...)
}

func (d direct) QueryRow(query string, args ...any) *sql.Row {
	return d.QueryRowContext(context.Background(), query, args...)
}
