package sqlite

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/eddy-run/eddy/store"
)

// batchSizes are the row counts of the prepared multi-row statements: a
// batch of n rows goes out as the binary decomposition of n over them
// (16 rows: one statement; 15: 8, 4, 2 and the single-row one), so a
// handful of statements, prepared once, serve every group size.
var batchSizes = []int{64, 32, 16, 8, 4, 2}

// The multi-row forms of the append statements, by row count.
var (
	insertCommitsN  = multiRow(sqlInsertCommit, 19, "")
	insertEntitiesN = multiRow(sqlInsertEntity, 11, "")
	upsertEntitiesN = multiRow(sqlUpsertEntity, 11, "ON CONFLICT")
	upsertReceiptsN = multiRow(sqlUpsertReceipt, 5, "ON CONFLICT")
)

// multiRow returns, for each batch size, single with its one VALUES
// tuple of cols placeholders repeated that many times; the text from tail
// on (an ON CONFLICT clause) follows the tuples.
func multiRow(single string, cols int, tail string) map[int]string {
	tuple := "(?" + strings.Repeat(", ?", cols-1) + ")"
	head, _ := cutOrPanic(single, tuple)
	rest := ""
	if tail != "" {
		_, after := cutOrPanic(single, tail)
		rest = " " + tail + after
	}
	out := make(map[int]string, len(batchSizes))
	for _, n := range batchSizes {
		out[n] = head + strings.TrimSuffix(strings.Repeat(tuple+", ", n), ", ") + rest
	}
	return out
}

// cutOrPanic is strings.Cut of the statements above, which hold sep.
func cutOrPanic(s, sep string) (before, after string) {
	before, after, ok := strings.Cut(s, sep)
	if !ok {
		panic("sqlite: " + sep + " not in " + s)
	}
	return before, after
}

// AppendBatch is Append for each commit in order, with its records, as
// one multi-row statement per table (split over the prepared sizes). It
// implements store.BatchAppender. A batch that cannot be encoded is
// refused whole and the transaction stays usable.
func (t *writeTx) AppendBatch(ctx context.Context, commits []store.Commit, records [][]store.Record) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return fmt.Errorf("sqlite: append batch: %w", err)
	}
	for i := range commits {
		if c := &commits[i]; c.Seq != t.next+int64(i) {
			return fmt.Errorf("sqlite: append batch: seq %d, want %d", c.Seq, t.next+int64(i))
		}
	}
	nums, err := t.numberBatch(ctx, commits, records)
	if err != nil {
		return wrap("append batch", t.fail(err))
	}
	encoded, err := t.encodeBatch(commits, records, nums)
	if err != nil {
		return wrap("append batch: encode", err)
	}
	if t.stale { // Commit fails anyway: nothing more to write
		t.next += int64(len(commits))
		return nil
	}
	var rows batchRows
	for _, a := range encoded {
		rows.add(a)
	}
	rows.split(t.firstRow)
	if err := t.fail(t.execBatch(ctx, &rows)); err != nil {
		return wrap("append batch", err)
	}
	t.next += int64(len(commits))
	return nil
}

// numberBatch is writeTx.number for each commit of a batch, in order.
func (t *writeTx) numberBatch(ctx context.Context, commits []store.Commit, records [][]store.Record) ([]any, error) {
	ctx, err := stmtContext(ctx)
	if err != nil {
		return nil, err
	}
	nums := make([]any, len(commits))
	for i := range commits {
		if nums[i], err = t.number(ctx, &commits[i], records[i]); err != nil {
			return nil, err
		}
	}
	return nums, nil
}

// parallelEncodeMin is the smallest batch whose encoding is split over
// the processors: the write lock is held while a batch is encoded, and
// the other writers of the group wait idle meanwhile.
const parallelEncodeMin = 8

// encodeBatch encodes every commit of a batch, its primary entity
// numbered nums[i] (writeTx.number), in chunks on up to
// GOMAXPROCS goroutines when the batch is large; the first error in
// commit order is returned.
func (t *writeTx) encodeBatch(commits []store.Commit, records [][]store.Record, nums []any) ([]appendArgs, error) {
	out := make([]appendArgs, len(commits))
	errs := make([]error, len(commits))
	encode := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i], errs[i] = t.encodeAppend(&commits[i], records[i], nums[i])
		}
	}
	if procs := runtime.GOMAXPROCS(0); len(commits) < parallelEncodeMin || procs < 2 {
		encode(0, len(commits))
	} else {
		chunk := (len(commits) + procs - 1) / procs
		var wg sync.WaitGroup
		for lo := chunk; lo < len(commits); lo += chunk {
			wg.Go(func() { encode(lo, min(lo+chunk, len(commits))) })
		}
		encode(0, min(chunk, len(commits)))
		wg.Wait()
	}
	return out, firstError(errs)
}

// firstError is the first non-nil error of errs, or nil.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// batchRows are the encoded rows of a batch; entity and receipt rows are
// deduplicated by key, the last write winning, as one-by-one appends
// would leave them. The entity rows of keys predicted absent and not read
// move to firsts (split): they are inserted, not upserted.
type batchRows struct {
	commits, records, receipts [][]any
	firsts                     [][]any
	recIdx, rcptIdx            map[string]int
}

// split moves the entity rows first says are their key's first row to
// b.firsts.
func (b *batchRows) split(first func(row []any) bool) {
	kept := b.records[:0]
	for _, r := range b.records {
		if first(r) {
			b.firsts = append(b.firsts, r)
			continue
		}
		kept = append(kept, r)
	}
	b.records = kept
}

func (b *batchRows) add(a appendArgs) {
	b.commits = append(b.commits, a.commit)
	for _, r := range a.records {
		b.records = dedupe(b.records, &b.recIdx, r[1].(string)+"\x00"+r[2].(string), r)
	}
	if a.receipt != nil {
		b.receipts = dedupe(b.receipts, &b.rcptIdx, a.receipt[1].(string), a.receipt)
	}
}

// dedupe appends row under key, or replaces the row already there.
func dedupe(rows [][]any, idx *map[string]int, key string, row []any) [][]any {
	if *idx == nil {
		*idx = map[string]int{}
	}
	if i, ok := (*idx)[key]; ok {
		rows[i] = row
		return rows
	}
	(*idx)[key] = len(rows)
	return append(rows, row)
}

// execBatch writes a batch's rows, the entity rows predicted absent
// first: when one exists (t.stale) nothing more is written.
func (t *writeTx) execBatch(ctx context.Context, b *batchRows) error {
	if err := t.runFirsts(ctx, b.firsts); err != nil || t.stale {
		return err
	}
	if err := t.runRows(ctx, sqlUpsertEntity, upsertEntitiesN, b.records); err != nil {
		return fmt.Errorf("entities: %w", err)
	}
	if err := t.runRows(ctx, sqlInsertCommit, insertCommitsN, b.commits); err != nil {
		return fmt.Errorf("commit rows: %w", err)
	}
	if err := t.runRows(ctx, sqlUpsertReceipt, upsertReceiptsN, b.receipts); err != nil {
		return fmt.Errorf("receipts: %w", err)
	}
	return nil
}

// runFirsts inserts the first rows of entities predicted absent; one that
// meets an existing row marks the transaction stale (writeTx.runEntity).
func (t *writeTx) runFirsts(ctx context.Context, rows [][]any) error {
	err := t.runRows(ctx, sqlInsertEntity, insertEntitiesN, rows)
	if err != nil && errors.Is(translate(err), store.ErrExists) {
		t.stale = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("entities: %w", err)
	}
	return nil
}

// runRows writes rows in order with the largest prepared statements that
// fit, the single-row one last.
func (t *writeTx) runRows(ctx context.Context, single string, multi map[int]string, rows [][]any) error {
	for len(rows) > 0 {
		n, q := 1, single
		for _, size := range batchSizes {
			if size <= len(rows) {
				n, q = size, multi[size]
				break
			}
		}
		args := make([]any, 0, n*len(rows[0]))
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		if err := t.run(ctx, q, args); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}
