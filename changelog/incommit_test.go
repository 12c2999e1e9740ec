package changelog_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// The InCommit hook sees a group's commits after its predecessor, in the
// transaction; finish hears the outcome. A hook whose writes fail never
// fails the write: the group runs again without it.
func TestInCommitHook(t *testing.T) {
	lg, _ := newLog(t, openSQLite(t))
	ctx := context.Background()
	write := func(ids ...string) int64 {
		t.Helper()
		req := changelog.WriteRequest{Space: "s", Provenance: store.Provenance{Actor: "owner", Via: "api"}}
		for _, id := range ids {
			req.Mutations = append(req.Mutations, changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: id, Properties: json.RawMessage(`{"n":1}`)})
		}
		res, err := lg.Write(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res.LastSeq
	}
	type call struct {
		prev    int64
		seqs    []int64
		outcome error
	}
	var calls []call
	fail := error(nil)
	lg.SetInCommit(func(_ context.Context, tx store.WriteTx, g changelog.InCommitGroup) (func(error), bool, error) {
		c := call{prev: g.Prev}
		for _, cm := range g.Commits {
			c.seqs = append(c.seqs, cm.Seq)
			if cm.Receipt.Seq != 0 {
				t.Errorf("commit %d carries its receipt", cm.Seq)
			}
		}
		calls = append(calls, c)
		i := len(calls) - 1
		return func(err error) { calls[i].outcome = err }, true, fail
	})
	if head := write("a", "b"); head != 2 {
		t.Fatalf("head %d", head)
	}
	if len(calls) != 1 || calls[0].prev != 0 || len(calls[0].seqs) != 2 || calls[0].seqs[1] != 2 || calls[0].outcome != nil {
		t.Fatalf("calls %+v", calls)
	}
	fail = errors.New("fenced, say")
	if head := write("c"); head != 3 {
		t.Fatalf("head %d after a failing hook", head)
	}
	if len(calls) != 2 || calls[1].prev != 2 || !errors.Is(calls[1].outcome, fail) {
		t.Fatalf("the failing hook was called %d times: %+v", len(calls)-1, calls[1:])
	}
	lg.SetInCommit(nil)
	write("d")
	if len(calls) != 2 {
		t.Fatalf("a removed hook was called")
	}
}
