package client_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/views"
	viewclient "github.com/eddy-run/eddy/views/client"
)

// benchPages returns a bootstrap of n records in pages of size.
func benchPages(vc views.Context, n, size int) []views.BootstrapPage {
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var pages []views.BootstrapPage
	for off := 0; off < n; off += size {
		recs := make([]store.Record, 0, size)
		for i := off; i < min(off+size, n); i++ {
			recs = append(recs, store.Record{Type: "task", ID: fmt.Sprintf("t%07d", i), Version: int64(i + 1),
				Properties: json.RawMessage(fmt.Sprintf(`{"title":"task number %d","project":"alpha","open":true}`, i)),
				Links:      []store.Link{}, CreatedAt: ts, UpdatedAt: ts})
		}
		b, _ := json.Marshal(recs)
		tok := fmt.Sprintf("k%d", off)
		p := views.BootstrapPage{Context: vc, Token: tok, Offset: int64(off), Records: b}
		if off+size < n {
			next := fmt.Sprintf("k%d", off+size)
			p.NextToken = &next
		} else {
			c := "cursor"
			p.Cursor, p.Complete = &c, true
		}
		pages = append(pages, p)
	}
	return pages
}

// BenchmarkBootstrapSQLite applies a bootstrap of 100,000 records in
// pages of 1,000 to a fresh SQLite ClientState, and, as the baseline of
// the same run, inserts the same rows into a bare SQLite table of the
// same shape in the same page-sized transactions. It reports rows/s of
// both and their ratio (goal: at least 30,000 rows/s).
func BenchmarkBootstrapSQLite(b *testing.B) {
	const n, size = 100_000, 1_000
	d, err := views.Parse("alpha", []byte(`{"version":"v1","types":["task"],"filter":{"fieldEquals":{"field":"project","expected":"alpha"}}}`))
	if err != nil {
		b.Fatal(err)
	}
	vc := views.NewContext("default", d, "s1", "e1")
	pages := benchPages(vc, n, size)
	ctx := context.Background()
	var client, raw time.Duration
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		st, err := viewclient.OpenSQLite(ctx, filepath.Join(dir, "replica.db"))
		if err != nil {
			b.Fatal(err)
		}
		mv := viewclient.New(st)
		start := time.Now()
		for _, p := range pages {
			if _, err := mv.ApplyBootstrap(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
		client += time.Since(start)
		st.Close()
		raw += rawInserts(b, filepath.Join(dir, "raw.db"), pages)
	}
	rowsClient := float64(n*b.N) / client.Seconds()
	rowsRaw := float64(n*b.N) / raw.Seconds()
	b.ReportMetric(rowsClient, "rows/s")
	b.ReportMetric(rowsRaw, "raw-rows/s")
	b.ReportMetric(rowsClient/rowsRaw, "ratio")
}

// rawInserts is the baseline: the pages' records inserted as they are
// into a table of the ClientState's shape, one transaction per page,
// with the same pragmas; no reads, no barriers.
func rawInserts(b *testing.B, path string, pages []views.BootstrapPage) time.Duration {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE entities (space TEXT NOT NULL, type TEXT NOT NULL, id TEXT NOT NULL,
	version INTEGER NOT NULL, tombstone INTEGER NOT NULL, record BLOB, record_version INTEGER NOT NULL, owners TEXT NOT NULL,
	PRIMARY KEY (space, type, id)) WITHOUT ROWID`); err != nil {
		b.Fatal(err)
	}
	ins, err := db.Prepare(`INSERT INTO entities VALUES (?,?,?,?,?,?,?,?)`)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for _, p := range pages {
		var recs []json.RawMessage
		if err := json.Unmarshal(p.Records, &recs); err != nil {
			b.Fatal(err)
		}
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		st := tx.Stmt(ins)
		for i, r := range recs {
			if _, err := st.Exec("default", "task", fmt.Sprint(p.Offset+int64(i)), 1, 0, []byte(r), 1, "fp"); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}
