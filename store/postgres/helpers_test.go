package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openStore opens and migrates a store on a fresh database.
func openStore(t testing.TB) *Store {
	t.Helper()
	return openURL(t, pgtest.NewDatabase(t))
}

// openURL opens and migrates a store on url, closing it when the test ends.
func openURL(t testing.TB, url string) *Store {
	t.Helper()
	return storetest.Migrated(t, func(ctx context.Context) (*Store, error) { return Open(ctx, url) })
}

// mustSpace creates a space or fails the test.
func mustSpace(t *testing.T, s *Store, id string) store.Space {
	t.Helper()
	sp, err := s.SpaceCreate(context.Background(), id, "epoch-"+id)
	if err != nil {
		t.Fatalf("create space %s: %v", id, err)
	}
	return sp
}

// t0 is a fixed UTC time at microsecond precision.
var t0 = time.Date(2026, 8, 4, 10, 0, 0, 183742000, time.UTC)

// at returns t0 plus seq seconds.
func at(seq int64) time.Time { return t0.Add(time.Duration(seq) * time.Second) }

// rec builds a live record last written at seq.
func rec(typ, id string, seq int64, props string) store.Record {
	return store.Record{
		Type: typ, ID: id, Version: seq, Kind: store.KindLive,
		Properties:    json.RawMessage(props),
		Links:         []store.Link{},
		CreatedAt:     t0,
		UpdatedAt:     at(seq),
		GroupVersions: map[string]int64{"title": seq},
	}
}

// snap returns r as a change snapshot: no kind, no group versions.
func snap(r store.Record) *store.Record {
	r.Kind, r.GroupVersions = "", nil
	return &r
}

// putCommit builds the commit writing after at seq (created when before is
// nil), by actor, with an optional mutation id.
func putCommit(seq int64, before *store.Record, after store.Record, actor, mid string) (store.Commit, []store.Record) {
	kind, created := store.ChangeUpdated, false
	if before == nil {
		kind, created = store.ChangeCreated, true
	}
	after.Version, after.UpdatedAt = seq, at(seq)
	c := store.Commit{
		Row: store.Row{
			Seq: seq, TS: at(seq), Actor: actor, Op: "put", EntityID: after.ID, Type: after.Type,
			Payload: json.RawMessage(fmt.Sprintf(`{"created":%t,"properties":["title"]}`, created)),
		},
		Changes: []store.Change{{
			Kind: kind, Type: after.Type, ID: after.ID, Version: seq,
			Before: before, After: snap(after), ConflictGroups: []string{"title"},
		}},
		Receipt: store.Receipt{
			MutationID: mid, Status: store.ReceiptApplied, Seq: seq, Version: seq,
			Accepted: []string{"title"}, Rejected: []store.RejectedProperty{},
		},
		Provenance: store.Provenance{Actor: actor, Via: "api", MutationID: mid, Depth: 0},
	}
	return c, []store.Record{after}
}

// deleteCommit builds the commit deleting before at seq, leaving a
// tombstone.
func deleteCommit(seq int64, before store.Record, actor string) (store.Commit, []store.Record) {
	tomb := before
	tomb.Kind, tomb.Version, tomb.UpdatedAt = store.KindDeleted, seq, at(seq)
	c := store.Commit{
		Row: store.Row{
			Seq: seq, TS: at(seq), Actor: actor, Op: "delete", EntityID: before.ID, Type: before.Type,
			Payload: json.RawMessage(`{"deleted":true}`),
		},
		Changes: []store.Change{{
			Kind: store.ChangeDeleted, Type: before.Type, ID: before.ID, Version: seq,
			Before: snap(before),
		}},
		Receipt:    store.Receipt{Status: store.ReceiptApplied, Seq: seq},
		Provenance: store.Provenance{Actor: actor, Via: "trigger", Trigger: "t", CausedBy: seq - 1, Depth: 1},
	}
	return c, []store.Record{tomb}
}

// write runs one write transaction on space appending every commit and
// commits it.
func write(t *testing.T, s *Store, space string, commits ...appended) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: space})
	if err != nil {
		t.Fatalf("write begin: %v", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, a := range commits {
		if err := tx.Append(ctx, a.c, a.recs); err != nil {
			t.Fatalf("append %d: %v", a.c.Seq, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// appended is one Append's arguments.
type appended struct {
	c    store.Commit
	recs []store.Record
}

// ap bundles a commit builder's results.
func ap(c store.Commit, recs []store.Record) appended { return appended{c, recs} }

// seqs returns the rows' seqs.
func seqs(rows []store.Row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Seq
	}
	return out
}

// openTransactions counts this database's server sessions that sit inside
// a transaction, other than the one asking.
func openTransactions(t *testing.T, s *Store) int {
	t.Helper()
	const q = `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()
		  AND state IN ('idle in transaction', 'idle in transaction (aborted)', 'active')
		  AND backend_type = 'client backend'`
	var n int
	if err := s.pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("count open transactions: %v", err)
	}
	return n
}
