package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// testViews covers the ViewStore: frozen session pages and headers,
// expiry and epoch rotation.
func testViews(t *testing.T, open OpenFunc) {
	t.Run("Sessions", func(t *testing.T) { t.Parallel(); testViewSessions(t, open) })
	t.Run("Expire", func(t *testing.T) { t.Parallel(); testViewSessionsExpire(t, open) })
	t.Run("Epoch", func(t *testing.T) { t.Parallel(); testEpochRotate(t, open) })
}

// sessionPages returns n pages of two records each; page 1 holds
// characters a driver must keep byte for byte.
func sessionPages(n int) []store.ViewSessionPage {
	out := make([]store.ViewSessionPage, n)
	for i := range out {
		recs := fmt.Sprintf(`[{"id":"r%d","n":1},{"id":"r%d","n":2.50}]`, 2*i, 2*i+1)
		if i == 1 {
			recs = "[{\"t\":\"\\u00e9 é <&> \\\"q\\\"\"},\n {\"big\":\"" + strings.Repeat("x", 100_000) + "\"}]"
		}
		out[i] = store.ViewSessionPage{Page: i, Offset: int64(2 * i), Records: []byte(recs)}
	}
	return out
}

func testViewSessions(t *testing.T, open OpenFunc) {
	st := open(t)
	pages := sessionPages(3)
	exp := ts(600)
	if err := st.ViewSessionPagesPut(ctx0, "s", "sess1", exp, pages[:2]); err != nil {
		t.Fatal(err)
	}
	if err := st.ViewSessionPagesPut(ctx0, "s", "sess1", exp, pages[2:]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.ViewSessionPage(ctx0, "s", "sess1", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("page of a session without header: %v, want ErrNotFound", err)
	}
	if err := st.ViewSessionPagesPut(ctx0, "s", "sess1", exp, pages[1:2]); err == nil {
		t.Fatal("a page stored twice was accepted")
	}
	hdr := store.ViewSession{Space: "s", ID: "sess1", View: "open", Reader: "tok_1", Watermark: 42, PageSize: 2, Pages: 3, Records: 6, CreatedAt: ts(0), ExpiresAt: exp}
	if err := st.ViewSessionPut(ctx0, hdr); err != nil {
		t.Fatal(err)
	}
	if err := st.ViewSessionPut(ctx0, hdr); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second header: %v, want ErrExists", err)
	}
	for _, p := range pages {
		got, gp, err := st.ViewSessionPage(ctx0, "s", "sess1", p.Page)
		if err != nil {
			t.Fatalf("page %d: %v", p.Page, err)
		}
		if got != hdr {
			t.Fatalf("header = %+v, want %+v", got, hdr)
		}
		if gp.Page != p.Page || gp.Offset != p.Offset || !bytes.Equal(gp.Records, p.Records) {
			t.Fatalf("page %d = %d/%d %q, want the bytes stored", p.Page, gp.Page, gp.Offset, cut(gp.Records))
		}
	}
	for _, k := range []struct {
		space, id string
		page      int
	}{{"s", "sess1", 3}, {"s", "sess1", -1}, {"other", "sess1", 0}, {"s", "nope", 0}} {
		if _, _, err := st.ViewSessionPage(ctx0, k.space, k.id, k.page); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("page %+v: %v, want ErrNotFound", k, err)
		}
	}
}

func cut(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

func testViewSessionsExpire(t *testing.T, open OpenFunc) {
	st := open(t)
	put := func(id string, expires time.Time, header bool) {
		t.Helper()
		if err := st.ViewSessionPagesPut(ctx0, "s", id, expires, sessionPages(2)); err != nil {
			t.Fatal(err)
		}
		if header {
			h := store.ViewSession{Space: "s", ID: id, View: "v", Pages: 2, Records: 4, CreatedAt: ts(0), ExpiresAt: expires}
			if err := st.ViewSessionPut(ctx0, h); err != nil {
				t.Fatal(err)
			}
		}
	}
	put("old1", ts(10), true)
	put("old2", ts(20), true)
	put("orphan", ts(15), false) // a materialization that never finished
	put("young", ts(100), true)
	if n, err := st.ViewSessionsOpen(ctx0, ts(5)); err != nil || n != 3 {
		t.Fatalf("open at 5 = %d, %v; want 3 (headerless pages do not count)", n, err)
	}
	if n, err := st.ViewSessionsOpen(ctx0, ts(50)); err != nil || n != 1 {
		t.Fatalf("open at 50 = %d, %v; want 1", n, err)
	}
	if n, err := st.ViewSessionsExpire(ctx0, ts(50), 0); err != nil || n != 0 {
		t.Fatalf("expire with limit 0 = %d, %v", n, err)
	}
	total := 0
	for range 4 {
		n, err := st.ViewSessionsExpire(ctx0, ts(50), 2)
		if err != nil || n > 2 {
			t.Fatalf("expire = %d, %v (limit 2)", n, err)
		}
		total += n
	}
	if total != 3 {
		t.Fatalf("expired %d sessions, want 3", total)
	}
	for _, id := range []string{"old1", "old2"} {
		if _, _, err := st.ViewSessionPage(ctx0, "s", id, 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("expired session %s still served: %v", id, err)
		}
	}
	if err := st.ViewSessionPagesPut(ctx0, "s", "orphan", ts(500), sessionPages(1)); err != nil {
		t.Fatalf("the orphan's pages were not deleted: %v", err)
	}
	if _, _, err := st.ViewSessionPage(ctx0, "s", "young", 1); err != nil {
		t.Fatalf("young session: %v", err)
	}
}

func testEpochRotate(t *testing.T, open OpenFunc) {
	st := open(t)
	if _, err := st.SpaceCreate(ctx0, "s", "ep-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SpaceCreate(ctx0, "other", "ep-o"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			if _, err := st.SpaceEpochRotate(ctx0, "s", fmt.Sprintf("ep-%d", i+2)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	sp, err := st.SpaceEpochRotate(ctx0, "s", "ep-final")
	if err != nil || sp.ID != "s" || sp.Epoch != "ep-final" {
		t.Fatalf("rotate = %+v, %v", sp, err)
	}
	if got, _ := st.SpaceGet(ctx0, "s"); got.Epoch != "ep-final" || got.Head != 0 || got.Horizon != 0 {
		t.Fatalf("space after rotation = %+v", got)
	}
	if got, _ := st.SpaceGet(ctx0, "other"); got.Epoch != "ep-o" {
		t.Fatalf("another space's epoch moved: %+v", got)
	}
	if _, err := st.SpaceEpochRotate(ctx0, "nope", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rotate a missing space: %v, want ErrNotFound", err)
	}
}
