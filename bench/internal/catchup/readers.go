package catchup

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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
	var (
		seq                      int64
		ts                       time.Time
		actor, op, typ, id, body string
	)
	return scanAll(ctx, e, `SELECT seq, ts, actor, op, entity_type, entity_id, payload FROM commits WHERE space = $1 ORDER BY seq`,
		&seq, &ts, &actor, &op, &typ, &id, &body)
}

// rawPullScan reads every column a pull page carries, of every row of
// the space in seq order: PostgreSQL's part of a pull.
func rawPullScan(ctx context.Context, e *harness.Eddy, _ int64) (int64, error) {
	var (
		seq                                              int64
		ts                                               time.Time
		actor, op, id, typ, body, receipt, prov, changes string
		count                                            *int32
	)
	return scanAll(ctx, e, `SELECT seq, ts, actor, op, entity_id, entity_type, payload, receipt, provenance, changes, change_count
		FROM commits WHERE space = $1 ORDER BY seq`, &seq, &ts, &actor, &op, &id, &typ, &body, &receipt, &prov, &changes, &count)
}

// scanAll runs query for the space on a connection of its own and scans
// every row into dest, returning how many it read.
func scanAll(ctx context.Context, e *harness.Eddy, query string, dest ...any) (int64, error) {
	pool, err := harness.Pool(ctx, e.DB.URL, 1)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	rows, err := pool.Query(ctx, query, harness.Space)
	if err != nil {
		return 0, fmt.Errorf("raw scan: %w", err)
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return n, fmt.Errorf("raw scan: %w", err)
		}
		n++
	}
	return n, rows.Err()
}

// watcher streams the space from 0 over HTTP until the row with seq last.
func watcher(ctx context.Context, e *harness.Eddy, last int64) (_ int64, err error) {
	srv, err := e.Serve(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, srv.Stop()) }()
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

// pull reads every commit through GET .../log in pages of 1,000, over
// one keep-alive connection, as a forwarding consumer does: it reads each
// page whole and takes nextCursor and hasMore from its end (the commits
// are counted by the cursor's advance: one row per commit, seqs without
// gaps).
func pull(ctx context.Context, e *harness.Eddy, last int64) (_ int64, err error) {
	srv, err := e.Serve(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, srv.Stop()) }()
	var buf bytes.Buffer
	var n int64
	for cursor, more := int64(0), true; more; {
		next, hasMore, err := pullPage(ctx, srv, cursor, &buf)
		if err != nil {
			return n, fmt.Errorf("pull after %d: %w", cursor, err)
		}
		if next <= cursor && hasMore {
			return n, fmt.Errorf("pull after %d: the cursor did not move", cursor)
		}
		n += next - cursor
		cursor, more = next, hasMore && next < last
	}
	return n, nil
}

// pullPage reads one page of the log after cursor into buf and returns
// its nextCursor and hasMore.
func pullPage(ctx context.Context, srv *harness.Served, cursor int64, buf *bytes.Buffer) (int64, bool, error) {
	url := fmt.Sprintf("%s/api/v1/spaces/%s/log?after=%d&limit=1000", srv.URL, harness.Space, cursor)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Authorization", "Bearer "+srv.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer res.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(res.Body); err != nil {
		return 0, false, err
	}
	if res.StatusCode != http.StatusOK {
		return 0, false, fmt.Errorf("status %s: %.200s", res.Status, buf.Bytes())
	}
	return pageEnd(buf.Bytes())
}

// pageEnd parses the `"nextCursor":N,"hasMore":B}` that ends a pull page.
func pageEnd(b []byte) (int64, bool, error) {
	const key = `,"nextCursor":`
	i := bytes.LastIndex(b, []byte(key))
	if i < 0 {
		return 0, false, fmt.Errorf("no nextCursor in %.200s", b)
	}
	tail := b[i+len(key):]
	j := bytes.IndexByte(tail, ',')
	if j < 0 {
		return 0, false, fmt.Errorf("bad page end %q", tail)
	}
	next, err := strconv.ParseInt(string(tail[:j]), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("bad nextCursor: %w", err)
	}
	return next, bytes.HasPrefix(tail[j:], []byte(`,"hasMore":true`)), nil
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
	def := `{"source":{"changes":{"types":["task"],"when":"int(entity.properties.n) % 1000 == 0"}},"function":"noop","start":"beginning"}`
	if err := e.Define(ctx, "trigger", "catchup", def); err != nil {
		return 0, err
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	return last, e.WaitCursor(wait, "catchup", last)
}
