package rowcodec

import (
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// resetSpares forgets every spare block and commit slice.
func resetSpares() {
	spares.mu.Lock()
	defer spares.mu.Unlock()
	spares.blocks.items, spares.commits.items, spares.rows.items, spares.bytes = nil, nil, nil, 0
}

// sparePage reads a page of n commits like c (seqs from first) into a
// new arena and returns it with its memory.
func sparePage(t testing.TB, c store.RawCommit, first int64, n int) ([]store.RawCommit, *Memory) {
	t.Helper()
	ts := c.TS
	cols, scratch := columns(c), make([]byte, 0, 1024)
	a := NewArena(n, len(c.Payload)+len(c.Changes)+len(c.Receipt)+len(c.Provenance))
	for i := range n {
		scanCols(t, a, first+int64(i), ts, cols, scratch)
	}
	return a.CommitsPage()
}

func spareCommit(changes string) store.RawCommit {
	return store.RawCommit{Row: store.Row{TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Actor: "loader", Op: "put",
		EntityID: "e12345", Type: "note", Payload: json.RawMessage(`{"n":12345}`)}, Changes: json.RawMessage(changes),
		Receipt: json.RawMessage(`{}`), Provenance: json.RawMessage(`{"actor":"loader"}`)}
}

// TestArenaReusesReleasedPage: a page read after another was released
// takes its blocks and commit slice instead of allocating them, and
// holds its own rows, not the released page's.
func TestArenaReusesReleasedPage(t *testing.T) {
	resetSpares()
	defer resetSpares()
	old, m := sparePage(t, spareCommit(strings.Repeat("a", 300)), 1, 1000)
	oldFirst := &old[0]
	m.Release()
	if spares.bytes == 0 {
		t.Fatal("a released page left no spare memory")
	}
	c := spareCommit(strings.Repeat("b", 300))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, _ := sparePage(t, c, 1001, 1000)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Fatalf("a page read after a released one allocated %d bytes, want under 64 KiB", n)
	}
	if &got[0] != oldFirst {
		t.Fatal("the page did not reuse the released page's commit slice")
	}
	for i := range got {
		want := c
		want.Seq = 1001 + int64(i)
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("commit %d of the page read on reused memory:\n got %+v\nwant %+v", i, got[i], want)
		}
	}
}

// TestSparesBounded: releasing many pages keeps at most maxSpareBytes.
func TestSparesBounded(t *testing.T) {
	resetSpares()
	defer resetSpares()
	var mems []*Memory
	for i := range 40 {
		_, m := sparePage(t, spareCommit(strings.Repeat("c", 400)), int64(i*1000+1), 1000)
		mems = append(mems, m)
	}
	for _, m := range mems {
		m.Release()
	}
	if spares.bytes > maxSpareBytes || spares.bytes < maxSpareBytes/2 {
		t.Fatalf("spares hold %d bytes after 40 pages were released, want between %d and %d", spares.bytes, maxSpareBytes/2, maxSpareBytes)
	}
	if held := spareBytes(); held != spares.bytes {
		t.Fatalf("spares count %d bytes, hold %d", spares.bytes, held)
	}
}

// spareBytes adds up the spares held.
func spareBytes() int {
	total := 0
	for _, b := range spares.blocks.items {
		total += cap(b)
	}
	for _, c := range spares.commits.items {
		total += cap(c) * rawCommitBytes
	}
	for _, r := range spares.rows.items {
		total += cap(r) * rowBytes
	}
	return total
}

// TestSparesKeepTheNewest: with the spares full of one reader's pages,
// a page of another kind released after them is kept, the oldest spares
// dropped for it, so the next page of that kind reuses it.
func TestSparesKeepTheNewest(t *testing.T) {
	resetSpares()
	defer resetSpares()
	for range 200 {
		_, m := sparePage(t, spareCommit(strings.Repeat("r", 100)), 1, 200)
		m.Release()
	}
	old, m := sparePage(t, spareCommit(strings.Repeat("c", 600)), 1, 1000)
	m.Release()
	got, _ := sparePage(t, spareCommit(strings.Repeat("d", 600)), 1001, 1000)
	if &got[0] != &old[0] {
		t.Fatal("the newest page's memory was not kept for the next page")
	}
	if held := spareBytes(); held != spares.bytes || held > maxSpareBytes {
		t.Fatalf("spares count %d bytes, hold %d, bound %d", spares.bytes, held, maxSpareBytes)
	}
}

// TestArenaReusesReleasedRows: a page of wire rows read after another
// was released takes its blocks and row slice, and holds its own rows.
func TestArenaReusesReleasedRows(t *testing.T) {
	resetSpares()
	defer resetSpares()
	scratch := make([]byte, 0, 256)
	rowPage := func(rows []store.Row) ([]store.Row, *Memory) {
		a := NewArena(len(rows), 64)
		for _, r := range rows {
			dest := a.RowDest()
			*dest[0].(*int64), *dest[1].(*time.Time) = r.Seq, r.TS
			for i, v := range [][]byte{[]byte(r.Actor), []byte(r.Op), []byte(r.EntityID), []byte(r.Type), r.Payload} {
				scratch = append(scratch[:0], v...)
				if err := dest[2+i].(scanner).ScanBytes(scratch); err != nil {
					t.Fatal(err)
				}
			}
			a.Add()
		}
		return a.RowsPage()
	}
	old, m := rowPage(wireRows(1000, 40))
	oldFirst := &old[0]
	m.Release()
	want := wireRows(1000, 41)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, _ := rowPage(want)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 32<<10 {
		t.Fatalf("a page of rows read after a released one allocated %d bytes, want under 32 KiB", n)
	}
	if &got[0] != oldFirst {
		t.Fatal("the page did not reuse the released page's row slice")
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows read on reused memory:\n got %+v\nwant %+v", got[:2], want[:2])
	}
}
