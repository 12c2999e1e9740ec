package rowcodec

import (
	"strings"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// DecodeAll keeps the page's order whether it decodes on one CPU or
// spreads a large page over several, and reports a bad row.
func TestDecodeAll(t *testing.T) {
	for _, n := range []int{0, 1, parallelFrom - 1, parallelFrom*3 + 7} {
		raws := make([]RawCommit, n)
		for i := range raws {
			raws[i] = RawCommit{Commit: store.Commit{Row: store.Row{Seq: int64(i + 1)}},
				Provenance: `{"actor":"a","via":"api","depth":0}`, Changes: `[]`}
			if i%2 == 0 {
				raws[i].Receipt = `{"status":"applied","seq":1,"accepted":[],"rejected":[]}`
			}
		}
		out, err := DecodeAll(raws)
		if err != nil || len(out) != n {
			t.Fatalf("n=%d: %d commits, %v", n, len(out), err)
		}
		for i, c := range out {
			if c.Seq != int64(i+1) || c.Provenance.Actor != "a" || c.Changes == nil {
				t.Fatalf("n=%d: commit %d = %+v", n, i, c)
			}
			if applied := c.Receipt.Status == store.ReceiptApplied; applied != (i%2 == 0) {
				t.Fatalf("n=%d: commit %d receipt %+v", n, i, c.Receipt)
			}
		}
		if n > 0 {
			raws[n-1].Changes = `{`
			if _, err := DecodeAll(raws); err == nil || !strings.Contains(err.Error(), "seq") {
				t.Fatalf("n=%d: a bad row decoded: %v", n, err)
			}
		}
	}
}
