package changelog

import (
	"context"
	"fmt"

	"github.com/eddy-run/eddy/store"
)

// Keep returns the rows of space that f selects, in their order,
// consuming the others (rows is reused). Rows that f.NeedsCommit picks
// are judged by f.CommitAllow on their commits, read in as few queries as
// runs of consecutive seqs allow. A commit missing because it was pruned
// meanwhile is a *HistoryUnavailableError.
func (l *Log) Keep(ctx context.Context, space string, rows []store.Row, f *Filter) ([]store.Row, error) {
	out := rows[:0]
	var need []int64
	for i := range rows {
		switch f.Judge(&rows[i]) {
		case Rejected:
			continue
		case AskCommit:
			need = append(need, rows[i].Seq)
		}
		out = append(out, rows[i])
	}
	if len(need) == 0 {
		return out, nil
	}
	commits, err := l.commitsAt(ctx, space, need)
	if err != nil {
		return nil, err
	}
	kept := out[:0]
	for i := range out {
		if c, ok := commits[out[i].Seq]; ok && !f.CommitAllow(c) {
			continue
		}
		kept = append(kept, out[i])
	}
	return kept, nil
}

// Admit reports whether f selects one row of space, reading its commit
// when f.NeedsCommit picks it.
func (l *Log) Admit(ctx context.Context, space string, row *store.Row, f *Filter) (bool, error) {
	if v := f.Judge(row); v != AskCommit {
		return v == Selected, nil
	}
	commits, err := l.commitsAt(ctx, space, []int64{row.Seq})
	if err != nil {
		return false, err
	}
	return f.CommitAllow(commits[row.Seq]), nil
}

// commitsAt reads the commits of seqs (ascending or descending, no
// repeats) without receipts: one query per run of consecutive seqs.
func (l *Log) commitsAt(ctx context.Context, space string, seqs []int64) (map[int64]*store.Commit, error) {
	out := make(map[int64]*store.Commit, len(seqs))
	for _, run := range runs(seqs) {
		cs, err := l.st.Commits(ctx, store.CommitsParams{Space: space, After: run[0] - 1, Limit: int(run[1] - run[0] + 1), NoReceipts: true})
		if err != nil {
			return nil, fmt.Errorf("read commits %d..%d: %w", run[0], run[1], err)
		}
		for i := range cs {
			out[cs[i].Seq] = &cs[i]
		}
		for seq := run[0]; seq <= run[1]; seq++ {
			if _, ok := out[seq]; !ok {
				return nil, l.pruned(ctx, space, seq-1)
			}
		}
	}
	return out, nil
}

// runs splits seqs into inclusive [lo, hi] runs of consecutive values.
func runs(seqs []int64) [][2]int64 {
	var out [][2]int64
	for _, s := range seqs {
		if n := len(out); n > 0 && (s == out[n-1][1]+1 || s == out[n-1][0]-1) {
			out[n-1] = [2]int64{min(out[n-1][0], s), max(out[n-1][1], s)}
			continue
		}
		out = append(out, [2]int64{s, s})
	}
	return out
}
