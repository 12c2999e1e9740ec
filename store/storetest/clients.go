package storetest

import (
	"errors"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// testClients covers push clients: rows written in a write transaction
// (and not when it rolls back), loaded by WriteBegin under the lock,
// read, owned and expired.
func testClients(t *testing.T, open OpenFunc) {
	t.Parallel()
	st := open(t)
	for _, sp := range []string{"s", "o"} {
		if _, err := st.SpaceCreate(ctx0, sp, "e"); err != nil {
			t.Fatal(err)
		}
	}
	put := func(space string, c store.PushClient, commit bool) {
		t.Helper()
		tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: space, Clients: []string{c.ID}})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.ClientPut(ctx0, c); err != nil {
			t.Fatal(err)
		}
		if !commit {
			if err := tx.Rollback(ctx0); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := tx.Commit(ctx0); err != nil {
			t.Fatal(err)
		}
	}
	put("s", store.PushClient{ID: "c1", Owner: "tok_a", LastOrdinal: 3, UpdatedAt: ts(10)}, true)
	put("s", store.PushClient{ID: "c2", Owner: "tok_b", LastOrdinal: 1, UpdatedAt: ts(20)}, true)
	put("s", store.PushClient{ID: "c3", Owner: "tok_a", LastOrdinal: 1, UpdatedAt: ts(20)}, false)
	put("o", store.PushClient{ID: "c1", Owner: "tok_z", LastOrdinal: 9, UpdatedAt: ts(5)}, true)
	put("s", store.PushClient{ID: "c1", Owner: "tok_a", LastOrdinal: 4, LastSeq: 12, UpdatedAt: ts(30)}, true)

	tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: "s", Clients: []string{"c1", "c3", "c2"}})
	if err != nil {
		t.Fatal(err)
	}
	got := tx.Clients()
	if err := tx.Rollback(ctx0); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["c1"].LastOrdinal != 4 || got["c1"].LastSeq != 12 || got["c1"].Owner != "tok_a" || got["c2"].Owner != "tok_b" || !got["c1"].UpdatedAt.Equal(ts(30)) {
		t.Fatalf("loaded clients = %+v", got)
	}
	c, err := st.ClientGet(ctx0, "o", "c1")
	if err != nil || c.LastOrdinal != 9 || c.Owner != "tok_z" || c.Space != "o" || c.ID != "c1" || !c.UpdatedAt.Equal(ts(5)) {
		t.Fatalf("client of o = %+v, %v", c, err)
	}
	if _, err := st.ClientGet(ctx0, "s", "c3"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rolled-back client: %v, want ErrNotFound", err)
	}
	owned, err := st.ClientsOf(ctx0, "s", "tok_a")
	if err != nil || len(owned) != 1 || owned["c1"].LastOrdinal != 4 || owned["c1"].LastSeq != 12 {
		t.Fatalf("owned = %v, %v", owned, err)
	}
	n, err := st.ClientsExpire(ctx0, ts(25), 10)
	if err != nil || n != 2 {
		t.Fatalf("expired %d, %v; want c2 of s and c1 of o", n, err)
	}
	if _, err := st.ClientGet(ctx0, "s", "c1"); err != nil {
		t.Fatalf("a client updated after the cutoff was expired: %v", err)
	}
	if n, err := st.ClientsExpire(ctx0, ts(100), 0); n != 0 || err != nil {
		t.Fatalf("limit 0 expired %d, %v", n, err)
	}
}
