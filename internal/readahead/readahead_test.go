package readahead

import (
	"errors"
	"slices"
	"sync"
	"testing"
)

// reader counts the reads a queue starts and answers each key k with
// 10*k, or an error for a negative k. gate, while open, holds every
// read until closed.
type reader struct {
	mu    sync.Mutex
	keys  []int
	wg    sync.WaitGroup
	gate  chan struct{}
	fails error
}

func (r *reader) read(k int) (int, error) {
	r.mu.Lock()
	r.keys = append(r.keys, k)
	r.mu.Unlock()
	if r.gate != nil {
		<-r.gate
	}
	if k < 0 {
		return 0, r.fails
	}
	return 10 * k, nil
}

func (r *reader) started() []int {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.keys)
}

func sameInt(a, b int) bool { return a == b }

func TestFillKeepsReadsUnderWayAndTakeDropsThosePassed(t *testing.T) {
	t.Parallel()
	r := &reader{}
	q := New[int, int](sameInt)
	q.Fill([]int{1, 2}, r.read, r.wg.Go)
	q.Fill([]int{1, 2}, r.read, r.wg.Go) // both already under way
	if got := r.started(); !slices.Equal(got, []int{1, 2}) && !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("reads started %v, want 1 and 2 once each", got)
	}
	// The reader moved on to 2: 1 is dropped, 2 is kept, 3 is started.
	if rd := q.Take(2); rd == nil || rd.Key != 2 {
		t.Fatalf("Take(2) = %v", rd)
	} else if v, err := rd.Wait(); v != 20 || err != nil {
		t.Fatalf("read of 2 = %d, %v", v, err)
	}
	if len(q.reads) != 0 {
		t.Fatalf("after taking the last read, %d remain", len(q.reads))
	}
	q.Fill([]int{3, 4}, r.read, r.wg.Go)
	if rd := q.Take(3); rd == nil {
		t.Fatal("Take(3) found nothing")
	}
	if len(q.reads) != 1 {
		t.Fatalf("after taking 3 of 3 and 4, %d remain, want 1", len(q.reads))
	}
	// A key not queued leaves the queue as it was.
	if rd := q.Take(9); rd != nil || len(q.reads) != 1 {
		t.Fatalf("Take(9) = %v with %d queued, want nil and 1", rd, len(q.reads))
	}
	// A changed position drops what follows it: 4 kept, 6 replaces nothing,
	// then 5 replaces 6.
	q.Fill([]int{4, 6}, r.read, r.wg.Go)
	q.Fill([]int{4, 5}, r.read, r.wg.Go)
	if got := r.started(); len(got) != 6 {
		t.Fatalf("reads started %v, want 1, 2, 3, 4, 6, 5", got)
	}
	if rd := q.Take(6); rd != nil {
		t.Fatal("the dropped read of 6 was still queued")
	}
	if rd := q.Take(5); rd == nil {
		t.Fatal("the read of 5 was not queued")
	}
	q.Fill([]int{7}, r.read, r.wg.Go)
	q.Clear()
	if len(q.reads) != 0 || q.Take(7) != nil {
		t.Fatal("Clear left reads queued")
	}
	r.started()
}

func TestReadErrorAndWait(t *testing.T) {
	t.Parallel()
	r := &reader{gate: make(chan struct{}), fails: errors.New("store down")}
	q := New[int, int](sameInt)
	q.Fill([]int{-1}, r.read, r.wg.Go)
	rd := q.Take(-1)
	waited := make(chan error, 1)
	go func() {
		_, err := rd.Wait()
		waited <- err
	}()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned %v before the read ended", err)
	default:
	}
	close(r.gate)
	if err := <-waited; !errors.Is(err, r.fails) {
		t.Fatalf("Wait = %v, want the read's error", err)
	}
	r.started()
}
