package changelog_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// Subscribe hears another process's commits on PostgreSQL: every
// subscriber gets the notification, a canceled one no longer does, and
// on SQLite (not a store.Notifier) nothing is sent and cancel is a no-op.
func TestSubscribe(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	openPG := func() store.Store {
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		if err := st.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return st
	}
	here, _ := newLog(t, openPG())
	there := changelog.New(openPG(), changelog.Options{})
	t.Cleanup(func() { _ = there.Close() })

	heads := [2]chan int64{make(chan int64, 16), make(chan int64, 16)}
	var cancels [2]func()
	for i := range heads {
		cancels[i] = here.Subscribe(func(space string, head int64) {
			if space == "s" {
				select {
				case heads[i] <- head:
				default: // never block the listener
				}
			}
		})
	}
	// The listener may connect after a first write: write until both
	// subscribers heard one.
	var heard [2]bool
	polltest.Until(t, "both subscribers hear the other process", func() bool {
		writeOne(t, there)
		for i := range heads {
			select {
			case <-heads[i]:
				heard[i] = true
			default:
			}
		}
		return heard[0] && heard[1]
	})
	cancels[0]()
	cancels[0]() // idempotent
	drain(heads[0])
	drain(heads[1])
	seq := writeOne(t, there)
	polltest.Until(t, "the remaining subscriber hears the write", func() bool {
		for {
			select {
			case head := <-heads[1]:
				if head == seq {
					return true
				}
			default:
				return false
			}
		}
	})
	select {
	case h := <-heads[0]:
		t.Fatalf("canceled subscriber heard head %d", h)
	default:
	}
	cancels[1]() // the last: stops the listener (goleak would see it)

	lite, _ := newLog(t, openSQLite(t))
	lite.Subscribe(func(string, int64) { t.Error("a SQLite subscription heard a commit") })()
	writeOne(t, lite)
}

// written numbers writeOne's rows so that none is a no-op.
var written atomic.Int64

// drain empties c.
func drain(c chan int64) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// writeOne puts one new row into space s and returns its seq.
func writeOne(t *testing.T, lg *changelog.Log) int64 {
	t.Helper()
	props := fmt.Appendf(nil, `{"n":%d}`, written.Add(1))
	res, err := lg.Write(t.Context(), changelog.WriteRequest{Space: "s",
		Mutations:  []changelog.Mutation{{Op: changelog.OpPut, Type: "task", EntityID: "t", Properties: props}},
		Provenance: store.Provenance{Actor: "owner", Via: "api"}})
	if err != nil {
		t.Fatal(err)
	}
	return res.LastSeq
}
