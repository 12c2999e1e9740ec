package rowcodec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eddy-run/eddy/store"
)

// scanner is what the drivers' scans call on an Arena column.
type scanner interface{ ScanBytes([]byte) error }

func TestArenaCommits(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.FixedZone("x", 3600))
	want := []store.RawCommit{
		{Row: store.Row{Seq: 1, TS: ts.UTC(), Actor: "a", Op: "put", EntityID: "e1", Type: "task", Payload: json.RawMessage(`{"n":1}`)},
			Changes: json.RawMessage(`[{"id":"e1"}]`), Receipt: json.RawMessage(`{"accepted":[]}`), Provenance: json.RawMessage(`{"actor":"a"}`)},
		{Row: store.Row{Seq: 2, TS: ts.UTC(), Actor: "bb", Op: "delete", EntityID: "e2", Type: "note", Payload: json.RawMessage(`null`)},
			Changes: json.RawMessage(`[]`), Receipt: json.RawMessage{}, Provenance: json.RawMessage(`{}`)},
	}
	a := NewArena(1, 8)
	for _, c := range want {
		scanRow(t, a, c, ts)
	}
	got := a.Commits()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Commits:\n got %+v\nwant %+v", got, want)
	}
	got[0].Payload = append(got[0].Payload, 'x')
	if string(got[1].Payload) != "null" {
		t.Fatalf("appending to one column changed the next: %q", got[1].Payload)
	}
}

// scanRow scans c into a as a driver does, with ts as read (in its own
// zone), and adds it.
func scanRow(t testing.TB, a *Arena, c store.RawCommit, ts time.Time) {
	t.Helper()
	scanCols(t, a, c.Seq, ts, columns(c), nil)
}

// columns returns c's text columns in Dest's order.
func columns(c store.RawCommit) [][]byte {
	return [][]byte{[]byte(c.Actor), []byte(c.Op), []byte(c.EntityID), []byte(c.Type), c.Payload, c.Receipt, c.Provenance, c.Changes}
}

// scanCols scans one row's columns into a through scratch, a buffer the
// "driver" reuses (and clears) after each call, and adds it. As pgx
// does, a nil column is NULL and an empty one is not; the row has no
// stored change count.
func scanCols(t testing.TB, a *Arena, seq int64, ts time.Time, cols [][]byte, scratch []byte) {
	t.Helper()
	scanCounted(t, a, seq, ts, cols, scratch, nil)
}

// scanCounted is scanCols with the row's stored change count (nil: none).
func scanCounted(t testing.TB, a *Arena, seq int64, ts time.Time, cols [][]byte, scratch []byte, count *int32) {
	t.Helper()
	dest := a.Dest()
	*dest[0].(*int64), *dest[1].(*time.Time) = seq, ts
	for i, v := range cols {
		var buf []byte
		if v != nil {
			buf = append(append(scratch[:0], v...), 0)[:len(v)]
		}
		if err := dest[2+i].(scanner).ScanBytes(buf); err != nil {
			t.Fatal(err)
		}
		clear(buf)
	}
	c := dest[2+len(cols)].(*pgtype.Int4)
	*c = pgtype.Int4{}
	if count != nil {
		*c = pgtype.Int4{Int32: *count, Valid: true}
	}
	a.Add()
}

// TestArenaUnreadColumns: provenance and changes read as NULL (left
// unread) come back nil, and a stored change count is each commit's
// ChangeCount, whatever its changes hold.
func TestArenaUnreadColumns(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	row := store.Row{Seq: 1, TS: ts, Actor: "a", Op: "put", EntityID: "e1", Type: "note", Payload: json.RawMessage(`{}`)}
	a := NewArena(3, 0)
	two := int32(2)
	scanCounted(t, a, 1, ts, columns(store.RawCommit{Row: row, Receipt: json.RawMessage{}}), nil, &two)
	full := store.RawCommit{Row: row, Changes: json.RawMessage(`[{},{},{}]`), Receipt: json.RawMessage(`{}`), Provenance: json.RawMessage(`{}`)}
	scanCounted(t, a, 2, ts, columns(full), nil, nil)
	scanCounted(t, a, 3, ts, columns(full), nil, &two)
	got := a.Commits()
	if got[0].Changes != nil || got[0].Provenance != nil || got[0].Receipt == nil {
		t.Fatalf("unread columns: changes %q provenance %q receipt %q", got[0].Changes, got[0].Provenance, got[0].Receipt)
	}
	for i, want := range []int{2, 3, 2} {
		if n := got[i].ChangeCount(); n != want {
			t.Errorf("commit %d: ChangeCount %d, want %d", i, n, want)
		}
	}
	if string(got[1].Changes) != `[{},{},{}]` {
		t.Fatalf("changes read back %q", got[1].Changes)
	}
}

// TestArenaBlocks reads pages longer and shorter than expected, with rows
// of mixed sizes and values larger than a block, and gets every commit
// back intact with no column's slice reaching into the next.
func TestArenaBlocks(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct{ rows, expect, rowBytes int }{
		{1, 8000, 400}, {1000, 1001, 400}, {3000, 1000, 0}, {500, 0, 10}, {40, 40, maxBlock},
	} {
		want := make([]store.RawCommit, tc.rows)
		for i := range want {
			size := rng.IntN(600)
			if i == tc.rows/2 {
				size = maxBlock + rng.IntN(1000)
			}
			body := `"` + strings.Repeat(string(rune('a'+i%26)), size) + `"`
			want[i] = store.RawCommit{
				Row: store.Row{Seq: int64(i + 1), TS: ts, Actor: "actor" + strings.Repeat("x", rng.IntN(40)), Op: "put",
					EntityID: fmt.Sprint("e", i), Type: "task", Payload: json.RawMessage(body)},
				Changes: json.RawMessage(`[` + body + `]`), Receipt: json.RawMessage{}, Provenance: json.RawMessage(`{}`),
			}
		}
		a := NewArena(tc.expect, tc.rowBytes)
		for _, c := range want {
			scanRow(t, a, c, ts)
		}
		got := a.Commits()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v: the commits read back differ", tc)
		}
		for i := range got {
			if cap(got[i].Payload) != len(got[i].Payload) || cap(got[i].Changes) != len(got[i].Changes) {
				t.Fatalf("%+v: row %d's JSON has room past its end", tc, i)
			}
		}
	}
}

// TestArenaPageCopiesNothingTwice: a page of the expected length takes a
// handful of allocations (blocks, rows, strings, the commits), not the
// copies of buffers that grow row by row, and a short page sets aside
// little of the room the whole page would need.
func TestArenaPageCopiesNothingTwice(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := store.RawCommit{Row: store.Row{Seq: 1, TS: ts, Actor: "loader", Op: "put", EntityID: "e12345", Type: "note",
		Payload: json.RawMessage(`{"n":12345,"title":"row 12345"}`)}, Changes: json.RawMessage(strings.Repeat("c", 300)),
		Receipt: json.RawMessage(`{}`), Provenance: json.RawMessage(`{"actor":"loader","via":"api"}`)}
	rowBytes := len(c.Payload) + len(c.Changes) + len(c.Receipt) + len(c.Provenance)
	cols, scratch := columns(c), make([]byte, 0, 1024)
	allocs := testing.AllocsPerRun(20, func() {
		a := NewArena(1000, rowBytes)
		for range 1000 {
			scanCols(t, a, c.Seq, ts, cols, scratch)
		}
		a.Commits()
	})
	if allocs > 16 {
		t.Fatalf("a page of 1,000 rows took %.0f allocations, want at most 16", allocs)
	}
	// A tail read expecting a whole page and finding one row.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	a := NewArena(8000, rowBytes)
	scanCols(t, a, c.Seq, ts, cols, scratch)
	a.Commits()
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Fatalf("one row read into an arena expecting 8,000 allocated %d bytes, want under 64 KiB", n)
	}
}

func TestArenaEmpty(t *testing.T) {
	t.Parallel()
	if got := NewArena(0, 0).Commits(); got == nil || len(got) != 0 {
		t.Fatalf("Commits of an empty arena = %#v, want an empty slice", got)
	}
}

// scanWire scans a wire row into a through RowDest, as Rows's driver
// does, reusing and clearing a scratch buffer, and adds it.
func scanWire(t testing.TB, a *Arena, r store.Row, ts time.Time) {
	t.Helper()
	dest := a.RowDest()
	if len(dest) != 7 {
		t.Fatalf("RowDest has %d columns, want 7", len(dest))
	}
	*dest[0].(*int64), *dest[1].(*time.Time) = r.Seq, ts
	var scratch []byte
	for i, v := range [][]byte{[]byte(r.Actor), []byte(r.Op), []byte(r.EntityID), []byte(r.Type), r.Payload} {
		scratch = append(scratch[:0], v...)
		if err := dest[2+i].(scanner).ScanBytes(scratch); err != nil {
			t.Fatal(err)
		}
		clear(scratch) // reused, as a driver reuses its buffer: ScanBytes must copy
	}
	a.Add()
}

// wireRows returns n wire rows with payloads of about size bytes.
func wireRows(n, size int) []store.Row {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	out := make([]store.Row, n)
	for i := range out {
		out[i] = store.Row{Seq: int64(i + 1), TS: ts, Actor: "owner", Op: "put", EntityID: fmt.Sprintf("e%d", i),
			Type: "task", Payload: json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", size)))}
	}
	return out
}

// TestArenaRows: wire rows scanned through RowDest come back as they
// were, whether the page fills its blocks or leaves them mostly empty.
func TestArenaRows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		rows, expect int
	}{{"short page", 2, 1000}, {"full page", 1000, 1000}, {"long page", 3000, 100}} {
		t.Run(tc.name, func(t *testing.T) {
			want := wireRows(tc.rows, 40)
			a := NewArena(tc.expect, 60)
			for _, r := range want {
				scanWire(t, a, r, r.TS.In(time.FixedZone("x", 3600)))
			}
			got := a.Rows()
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Rows differ: got %d rows, first %+v; want first %+v", len(got), got[0], want[0])
			}
		})
	}
}

// TestArenaRowsFit: a short page in an arena sized for a long one is
// copied into blocks of its exact size (a row a caller keeps holds no
// spare room); whatever the page, what Rows keeps is at most twice the
// bytes used.
func TestArenaRowsFit(t *testing.T) {
	t.Parallel()
	short := NewArena(1000, 200)
	for _, r := range wireRows(2, 40) {
		scanWire(t, short, r, r.TS)
	}
	short.fit()
	for name, bs := range map[string]*blocks{"text": &short.text, "json": &short.json} {
		if len(bs.all) != 1 || cap(bs.all[0]) != bs.used || len(bs.all[0]) != bs.used {
			t.Errorf("short page's %s blocks after fit: %d blocks, first cap %d, used %d; want one of exactly the bytes used",
				name, len(bs.all), cap(bs.all[0]), bs.used)
		}
	}
	if got, want := short.Rows(), wireRows(2, 40); !reflect.DeepEqual(got, want) {
		t.Fatalf("short page after fit: %+v, want %+v", got, want)
	}

	for _, n := range []int{16, 17, 100, 999, 1000, 1001, 5000} {
		a := NewArena(1000, 60)
		for _, r := range wireRows(n, 40) {
			scanWire(t, a, r, r.TS)
		}
		a.fit()
		for name, bs := range map[string]*blocks{"text": &a.text, "json": &a.json} {
			room := 0
			for _, b := range bs.all {
				room += cap(b)
			}
			if room > 2*bs.used {
				t.Errorf("%d rows: %s blocks keep %d bytes of room for %d used", n, name, room, bs.used)
			}
		}
		if got, want := a.Rows(), wireRows(n, 40); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d rows after fit differ", n)
		}
	}
}

// TestArenaRoomBounded: a page of about the expected length sets aside
// little more room than it uses, however its row sizes stray from the
// estimate; a page's last rows do not spill into a block as large as
// the rest of the page.
func TestArenaRoomBounded(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct{ rows, expect, rowBytes, mean int }{
		{1000, 1000, 500, 500}, {1001, 1001, 400, 500}, {990, 1001, 600, 500}, {1000, 1000, 0, 300},
	} {
		a := NewArena(tc.expect, tc.rowBytes)
		for i := range tc.rows {
			size := tc.mean*4/5 + rng.IntN(tc.mean*2/5)
			body := json.RawMessage(`"` + strings.Repeat("x", size) + `"`)
			scanRow(t, a, store.RawCommit{Row: store.Row{Seq: int64(i + 1), TS: ts, Actor: "a", Op: "put", EntityID: "e", Type: "t",
				Payload: body}, Changes: json.RawMessage(`[]`), Receipt: json.RawMessage(`{}`), Provenance: json.RawMessage(`{}`)}, ts)
		}
		room := 0
		for _, b := range a.json.all {
			room += cap(b)
		}
		if limit := a.json.used*3/2 + minBlock; room > limit {
			t.Errorf("%+v: %d bytes of room in %d blocks for %d used, want at most %d", tc, room, len(a.json.all), a.json.used, limit)
		}
	}
}

// TestPgTime: a binary timestamptz decodes to the time pgx's own codec
// reads, before PostgreSQL's epoch as after it.
func TestPgTime(t *testing.T) {
	t.Parallel()
	m := pgtype.NewMap()
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		want := time.UnixMicro(rng.Int64N(8e15) - 3e15).UTC()
		buf, err := m.Encode(pgtype.TimestamptzOID, pgtype.BinaryFormatCode, want, nil)
		if err != nil {
			t.Fatal(err)
		}
		var viaPgx time.Time
		if err := m.Scan(pgtype.TimestamptzOID, pgtype.BinaryFormatCode, buf, &viaPgx); err != nil {
			t.Fatal(err)
		}
		got := pgTime(int64(binary.BigEndian.Uint64(buf)))
		if !got.Equal(want) || !got.Equal(viaPgx) || got.Location() != time.UTC {
			t.Fatalf("pgTime of %v = %v, pgx reads %v", want, got, viaPgx)
		}
	}
}

// TestArenaAddRaw: a row added from its columns' bytes is the row Dest
// and Add build from the same columns; a seq, ts or count of the wrong
// size is an error, not a row.
func TestArenaAddRaw(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 1, 2, 3, 4, 5, 678000, time.UTC)
	us := ts.UnixMicro() - pgEpoch
	c := store.RawCommit{Row: store.Row{Seq: 7, TS: ts, Actor: "loader", Op: "put", EntityID: "e1", Type: "note",
		Payload: json.RawMessage(`{"n":1}`)}, Changes: json.RawMessage(`[{"x":1}]`), Receipt: json.RawMessage(`{}`)}
	raw := func(count []byte) [][]byte {
		vals := [][]byte{binary.BigEndian.AppendUint64(nil, uint64(c.Seq)), binary.BigEndian.AppendUint64(nil, uint64(us))}
		return append(append(vals, columns(c)...), count)
	}
	three := int32(3)
	for _, count := range []*int32{nil, &three} {
		var countBytes []byte
		if count != nil {
			countBytes = binary.BigEndian.AppendUint32(nil, uint32(*count))
		}
		want := NewArena(1, 0)
		scanCounted(t, want, c.Seq, ts, columns(c), nil, count)
		got := NewArena(1, 0)
		got.Dest()
		if err := got.AddRaw(raw(countBytes)); err != nil {
			t.Fatal(err)
		}
		if w, g := want.Commits(), got.Commits(); !reflect.DeepEqual(g, w) {
			t.Errorf("count %v: AddRaw built %+v, Add %+v", count, g, w)
		}
	}
	wire := NewArena(1, 0)
	wire.RowDest()
	if err := wire.AddRaw(raw(nil)[:7]); err != nil {
		t.Fatal(err)
	}
	if got := wire.Rows(); len(got) != 1 || !reflect.DeepEqual(got[0], c.Row) {
		t.Errorf("AddRaw of a wire row built %+v, want %+v", got, c.Row)
	}
	for name, vals := range map[string][][]byte{
		"short seq":   append([][]byte{{1, 2}}, raw(nil)[1:]...),
		"null ts":     append([][]byte{raw(nil)[0], nil}, raw(nil)[2:]...),
		"short count": raw([]byte{1}),
	} {
		a := NewArena(1, 0)
		a.Dest()
		if err := a.AddRaw(vals); err == nil {
			t.Errorf("%s: AddRaw took it", name)
		}
		if got := a.Commits(); len(got) != 0 {
			t.Errorf("%s: AddRaw kept %d rows", name, len(got))
		}
	}
}
