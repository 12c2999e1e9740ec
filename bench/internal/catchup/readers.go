package catchup

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/eddy-run/eddy/bench/internal/harness"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
)

// populate appends rows commits to the space, 1,000 per request: puts of
// new entities, one in ten a task and the rest notes.
func populate(ctx context.Context, e *harness.Eddy, rows int) error {
	for i := 0; i < rows; {
		batch := make([]changelog.Mutation, 0, 1000)
		for ; i < rows && len(batch) < cap(batch); i++ {
			typ := "note"
			if i%10 == 0 {
				typ = "task"
			}
			n := strconv.Itoa(i)
			batch = append(batch, changelog.Mutation{Op: changelog.OpPut, Type: typ, EntityID: "e" + n,
				Properties: []byte(`{"n":` + n + `,"title":"row ` + n + `"}`)})
		}
		req := changelog.WriteRequest{Space: harness.Space, Mutations: batch, Provenance: store.Provenance{Actor: "loader", Via: "api"}}
		if _, err := e.Log().Write(ctx, req); err != nil {
			return fmt.Errorf("catch-up: populate: %w", err)
		}
	}
	return nil
}

// rawScan reads the wire columns of every row of the space in seq order.
func rawScan(ctx context.Context, e *harness.Eddy, _ int64) (int64, error) {
	pool, err := harness.Pool(ctx, e.DB.URL, 1)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	rows, err := pool.Query(ctx, `SELECT seq, ts, actor, op, entity_type, entity_id, payload FROM commits WHERE space = $1 ORDER BY seq`, harness.Space)
	if err != nil {
		return 0, fmt.Errorf("raw scan: %w", err)
	}
	defer rows.Close()
	var (
		n                        int64
		seq                      int64
		ts                       time.Time
		actor, op, typ, id, body string
	)
	for rows.Next() {
		if err := rows.Scan(&seq, &ts, &actor, &op, &typ, &id, &body); err != nil {
			return n, fmt.Errorf("raw scan: %w", err)
		}
		n++
	}
	return n, rows.Err()
}

// watcher streams the space from 0 over HTTP until the row with seq last.
func watcher(ctx context.Context, e *harness.Eddy, last int64) (int64, error) {
	srv, err := e.Serve(ctx)
	if err != nil {
		return 0, err
	}
	defer srv.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+harness.WatchPath(0), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+srv.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("watch: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("watch: status %s", res.Status)
	}
	br := bufio.NewReaderSize(res.Body, 64<<10)
	end := []byte(`{"seq":` + strconv.FormatInt(last, 10) + `,`)
	var n int64
	for {
		l, err := br.ReadSlice('\n')
		if err != nil {
			return n, fmt.Errorf("watch: after %d rows: %w", n, err)
		}
		if bytes.HasPrefix(l, []byte(`{"seq":`)) {
			n++
			if bytes.HasPrefix(l, end) {
				return n, nil
			}
		}
	}
}

// pull reads every commit with Log.Pull in pages of 1,000.
func pull(ctx context.Context, e *harness.Eddy, _ int64) (int64, error) {
	var n int64
	for cursor, more := int64(0), true; more; {
		page, err := e.Log().Pull(ctx, harness.Space, cursor, 1000)
		if err != nil {
			return n, fmt.Errorf("pull: %w", err)
		}
		n += int64(len(page.Commits))
		cursor, more = page.NextCursor, page.HasMore
	}
	return n, nil
}

// trigger saves a trigger starting at the beginning and waits for its
// cursor to reach last. It matches task rows whose n is a multiple of
// 1,000, delivering to a go function that does nothing.
func trigger(ctx context.Context, e *harness.Eddy, last int64) (int64, error) {
	noop := func(context.Context, functions.Input) ([]changelog.Mutation, error) { return nil, nil }
	if err := e.Functions().Register("catchup-noop", noop); err != nil {
		return 0, fmt.Errorf("trigger: register: %w", err)
	}
	if err := e.Define(ctx, "function", "noop", `{"kind":"go","handler":"catchup-noop"}`); err != nil {
		return 0, err
	}
	def := `{"source":{"changes":{"types":["task"],"when":"entity.properties.n % 1000 == 0"}},"function":"noop","start":"beginning"}`
	if err := e.Define(ctx, "trigger", "catchup", def); err != nil {
		return 0, err
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	return last, e.WaitCursor(wait, "catchup", last)
}
