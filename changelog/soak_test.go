package changelog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/storetest"
)

// soakDuration is how long the soak scenarios run: EDDY_SOAK (a Go
// duration; `make soak` sets it) or a bounded two seconds.
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("EDDY_SOAK")
	if v == "" {
		return 2 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("EDDY_SOAK=%q: %v", v, err)
	}
	return d
}

// answer is what one request was told.
type answer struct {
	op      string // put, patch, delete
	status  string // a receipt status, or "" when the request failed
	seq     int64
	created bool
}

// TestSoakAmbiguousCommits is the scenario: 16 writers each doing
// PUT, If-Match PATCH and DELETE on fresh entities while another session
// terminates about half of the database's connections every 150 ms.
// Half the writers send mutation ids (Idempotency-Keys) and retry failed
// requests with them until answered; the others take the first answer.
// Every answer a writer got must agree with the log: an applied receipt
// names its commit, a noop or a rejection means the log holds no such
// commit, and nothing is applied twice.
func TestSoakAmbiguousCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	st := storetest.Migrated(t, func(ctx context.Context) (*postgres.Store, error) { return postgres.Open(ctx, url) })
	lg := changelog.New(st, changelog.Options{})
	t.Cleanup(func() { _ = lg.Close() })
	if _, err := lg.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	killed := make(chan int)
	go terminateBackends(t, url, stop, killed)

	const writers = 16
	deadline := time.Now().Add(soakDuration(t))
	answers := make([]map[string][]answer, writers)
	var wg sync.WaitGroup
	for w := range writers {
		answers[w] = map[string][]answer{}
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				answers[w][id] = soakEntity(lg, id, w%2 == 0)
			}
		})
	}
	wg.Wait()
	close(stop)
	kills := <-killed
	// The terminator's last round may have killed idle connections the
	// pool still holds, and a killed connection fails its next use: the
	// check reads on fresh ones.
	st.Pool().Reset()
	checkSoak(t, lg, answers)
	n, unanswered := countAnswers(answers)
	t.Logf("%d entities, %d requests, %d without a definite answer (unkeyed), %d backends terminated",
		countEntities(answers), n, unanswered, kills)
}

// soakEntity runs PUT, If-Match PATCH and DELETE on a fresh entity id,
// stopping at the first request without a definite answer.
func soakEntity(lg *changelog.Log, id string, keyed bool) []answer {
	put := changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: id, Properties: []byte(`{"n":1}`)}
	var out []answer
	a := soakWrite(lg, put, keyed, id+"/put")
	out = append(out, a)
	if a.status != store.ReceiptApplied {
		return out
	}
	v := a.seq
	patch := changelog.Mutation{Op: changelog.OpPatch, Type: "task", EntityID: id, Patch: []byte(`{"n":2}`), IfVersion: &v, IfMatch: true}
	a = soakWrite(lg, patch, keyed, id+"/patch")
	out = append(out, a)
	if a.status != store.ReceiptApplied {
		return out
	}
	a = soakWrite(lg, changelog.Mutation{Op: changelog.OpDelete, Type: "task", EntityID: id}, keyed, id+"/delete")
	return append(out, a)
}

// soakWrite sends one mutation; keyed, with a mutation id and retried
// until it is answered.
func soakWrite(lg *changelog.Log, m changelog.Mutation, keyed bool, key string) answer {
	if keyed {
		m.MutationID = key
	}
	for attempt := 0; ; attempt++ {
		res, err := lg.Write(context.Background(), changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m},
			Provenance: store.Provenance{Actor: "soak", Via: "api"}})
		if err == nil {
			r := res.Receipts[0]
			return answer{op: m.Op, status: r.Status, seq: r.Seq, created: res.Created[0]}
		}
		if !keyed || attempt == 200 {
			return answer{op: m.Op}
		}
		time.Sleep(10 * time.Millisecond) // a pause between retries, not a synchronization
	}
}

// terminateBackends kills each other session of the database with
// probability 1/2 every 150 ms until stop closes, then reports how many.
func terminateBackends(t *testing.T, url string, stop <-chan struct{}, killed chan<- int) { //nolint:thelper // a goroutine of the soak test
	ctx := context.Background()
	total := 0
	defer func() { killed <- total }()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Errorf("terminator: %v", err)
		return
	}
	defer conn.Close(ctx)
	tick := time.NewTicker(150 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		var n int
		err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND random() < 0.5`).Scan(&n)
		if err != nil {
			t.Errorf("terminate: %v", err)
			return
		}
		total += n
	}
}

// checkSoak compares every answer with the log.
func checkSoak(t *testing.T, lg *changelog.Log, answers []map[string][]answer) {
	t.Helper()
	logged := map[string]map[string][]int64{} // entity -> op -> seqs
	for after := int64(0); ; {
		page, err := lg.Pull(context.Background(), "s", after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.Commits {
			if logged[c.EntityID] == nil {
				logged[c.EntityID] = map[string][]int64{}
			}
			logged[c.EntityID][c.Op] = append(logged[c.EntityID][c.Op], c.Seq)
		}
		if !page.HasMore {
			break
		}
		after = page.NextCursor
	}
	wrong := 0
	for _, byEntity := range answers {
		for id, as := range byEntity {
			for _, a := range as {
				if err := agree(a, logged[id][a.op]); err != nil {
					wrong++
					if wrong <= 20 {
						t.Errorf("%s %s: %v", a.op, id, err)
					}
				}
			}
			for op, seqs := range logged[id] {
				if len(seqs) > 1 {
					t.Errorf("%s %s applied %d times: %v", op, id, len(seqs), seqs)
				}
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d answers disagree with the log", wrong)
	}
}

// agree checks one answer against the seqs of its op on its entity.
func agree(a answer, seqs []int64) error {
	switch a.status {
	case "":
		return nil // no answer claimed
	case store.ReceiptApplied:
		if len(seqs) != 1 || seqs[0] != a.seq {
			return fmt.Errorf("answered applied at %d, log has %v", a.seq, seqs)
		}
		if a.op == changelog.OpPut && !a.created {
			return errors.New("a first-time put answered applied but not created")
		}
	default:
		if len(seqs) > 0 {
			return fmt.Errorf("answered %s, but the log has it at %v", a.status, seqs)
		}
	}
	return nil
}

func countEntities(answers []map[string][]answer) int {
	n := 0
	for _, m := range answers {
		n += len(m)
	}
	return n
}

// countAnswers returns how many requests were sent and how many got no
// definite answer.
func countAnswers(answers []map[string][]answer) (n, unanswered int) {
	for _, m := range answers {
		for _, as := range m {
			for _, a := range as {
				n++
				if a.status == "" {
					unanswered++
				}
			}
		}
	}
	return n, unanswered
}
