package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/internal/eddytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// history seeds a space in three phases (the middle one by the actor
// "bot") and returns its rows, oldest first:
//
//	1 put task a, 2 put note n1 | 3 put task b, 4 patch task a, 5 delete task b, 6 put note n2 | 7 put task c
func history(t *testing.T, srv *eddytest.Server) []client.Row {
	t.Helper()
	ctx := context.Background()
	owner := newClient(t, srv.URL, srv.Admin).Space("default")
	_, botToken := srv.Token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, Actor: "bot"})
	bot := newClient(t, srv.URL, botToken).Space("default")
	steps := []func() error{
		func() error { _, err := owner.Put(ctx, "task", "a", map[string]any{"title": "A"}); return err },
		func() error { _, err := owner.Put(ctx, "note", "n1", map[string]any{}); return err },
		func() error { _, err := bot.Put(ctx, "task", "b", map[string]any{"title": "B"}); return err },
		func() error { _, err := bot.Patch(ctx, "task", "a", map[string]any{"status": "done"}); return err },
		func() error { _, err := bot.Delete(ctx, "task", "b"); return err },
		func() error { _, err := bot.Put(ctx, "note", "n2", map[string]any{}); return err },
		func() error { _, err := owner.Put(ctx, "task", "c", map[string]any{"title": "C"}); return err },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	page, err := owner.Changes(ctx, client.ChangesParams{From: 0})
	if err != nil || len(page.Changes) != len(steps) {
		t.Fatalf("changes = %+v %v", page, err)
	}
	return page.Changes
}

func newClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.New(url, client.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// The audit export end to end: filters, when, an entity, a time range,
// both formats, a file, and the progress bar.
func TestAudit(t *testing.T) {
	srv := eddytest.New(t, eddytest.SQLite)
	rows := history(t, srv)
	ts := func(seq int) string { return rows[seq-1].TS.Format(time.RFC3339Nano) }
	// between returns the seqs, newest first, whose ts is in [lo, hi].
	between := func(lo, hi int) []int64 {
		var out []int64
		for i := len(rows) - 1; i >= 0; i-- {
			r := rows[i]
			if !r.TS.Before(rows[lo-1].TS) && !r.TS.After(rows[hi-1].TS) {
				out = append(out, r.Seq)
			}
		}
		return out
	}
	base := []string{"--server", srv.URL, "--token", srv.Admin, "--page", "2"}
	cases := []struct {
		name string
		args []string
		want []int64
	}{
		{"everything", nil, []int64{7, 6, 5, 4, 3, 2, 1}},
		{"types and actors", []string{"--types", "task", "--actors", "bot"}, []int64{5, 4, 3}},
		{"excludes", []string{"--exclude-types", "note", "--exclude-ops", "put"}, []int64{5, 4}},
		{"when", []string{"--when", `row.op == "delete"`}, []int64{5}},
		{"entity", []string{"--entity", "task/a"}, []int64{4, 1}},
		{"time range", []string{"--since", ts(3), "--until", ts(6)}, between(3, 6)},
		{"time range and filter", []string{"--since", ts(4), "--until", ts(7), "--types", "task"}, filterSeqs(between(4, 7), rows, "task")},
	}
	for _, format := range []string{"csv", "jsonl"} {
		for _, tc := range cases {
			t.Run(format+"/"+tc.name, func(t *testing.T) {
				args := append(slices.Concat(base, tc.args), "--format", format, "--progress", "never")
				var stdout, stderr bytes.Buffer
				if err := run(context.Background(), args, &stdout, &stderr); err != nil {
					t.Fatalf("%v\n%s", err, stderr.String())
				}
				got := exported(t, format, stdout.Bytes())
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Fatalf("exported %v, want %v", got, tc.want)
				}
				if want := fmt.Sprintf("exported %d rows\n", len(tc.want)); stderr.String() != want {
					t.Fatalf("stderr %q, want %q", stderr.String(), want)
				}
			})
		}
	}

	t.Run("file and progress bar", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "audit.jsonl")
		var stdout, stderr bytes.Buffer
		args := append(slices.Clone(base), "--format", "jsonl", "--out", out, "--progress", "always", "--page", "1")
		if err := run(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if got := exported(t, "jsonl", b); len(got) != 7 || stdout.Len() != 0 {
			t.Fatalf("file holds %v; stdout %q", got, stdout.String())
		}
		if s := stderr.String(); !strings.Contains(s, "] 100%  seq 0  7 rows\n") || !strings.Contains(s, "\r[") {
			t.Fatalf("progress bar: %q", s)
		}
		if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); lines[0] != string(mustJSON(t, rows[6])) {
			t.Fatalf("a jsonl line is not the API's row: %s", lines[0])
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, args := range [][]string{
			{"--format", "xml"},
			{"--since", "1h", "--until", "2h"},
			{"--since", "yesterday"},
			{"--entity", "task"},
			{"--progress", "sometimes"},
			{"--when", "row.op =="},
			{"extra"},
		} {
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), slices.Concat(base, args), &stdout, &stderr); err == nil {
				t.Errorf("%v: accepted", args)
			}
		}
	})
}

// filterSeqs keeps the seqs of rows of typ.
func filterSeqs(seqs []int64, rows []client.Row, typ string) []int64 {
	var out []int64
	for _, s := range seqs {
		if rows[s-1].Type == typ {
			out = append(out, s)
		}
	}
	return out
}

// exported returns the seqs of an export, in order, checking its shape.
func exported(t *testing.T, format string, b []byte) []int64 {
	t.Helper()
	var seqs []int64
	if format == "jsonl" {
		for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			var r client.Row
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.TS.IsZero() || r.Actor == "" {
				t.Fatalf("line %q: %v", line, err)
			}
			seqs = append(seqs, r.Seq)
		}
		return seqs
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(recs) == 0 || !slices.Equal(recs[0], csvHeader) {
		t.Fatalf("csv %q: %v", b, err)
	}
	for _, rec := range recs[1:] {
		n, err := strconv.ParseInt(rec[0], 10, 64)
		if err != nil || !json.Valid([]byte(rec[6])) {
			t.Fatalf("csv record %q", rec)
		}
		seqs = append(seqs, n)
	}
	return seqs
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
