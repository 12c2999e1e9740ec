package client_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/eddy-run/eddy/views"
	viewclient "github.com/eddy-run/eddy/views/client"
)

// FuzzApplyPage feeds pages decoded from arbitrary JSON to a client
// holding one bootstrapped view: a page is applied, a duplicate, or
// refused with ErrBadPage or ErrGap, and a refused page changes nothing.
func FuzzApplyPage(f *testing.F) {
	d, err := views.Parse("alpha", []byte(`{"version":"v1","types":["task"],"filter":{"fieldEquals":{"field":"project","expected":"alpha"}}}`))
	if err != nil {
		f.Fatal(err)
	}
	vc := views.NewContext("s", d, "s1", "e1")
	ctxJSON, _ := json.Marshal(vc)
	good, _ := json.Marshal(delta(vc, "c1", "c2", up(rec("t1", 2, `{"project":"alpha"}`)), rm("t2", 3), del("t3", 4)))
	f.Add(good, false)
	f.Add([]byte(`{"context":`+string(ctxJSON)+`,"token":"k0","offset":0,"records":[{"type":"task","id":"t9","version":1}],"cursor":"c9","complete":true}`), true)
	f.Add([]byte(`{"context":`+string(ctxJSON)+`,"previousCursor":"c1","cursor":"c2","commits":[{"seq":2,"changes":[{"kind":"upsert","type":"task","id":"t1","version":2}]}]}`), false)
	f.Add([]byte(`{"context":{"space":"s","view":"alpha"},"previousCursor":"c1","cursor":"c2","commits":[]}`), false)
	f.Fuzz(func(t *testing.T, data []byte, bootstrap bool) {
		mv := viewclient.New(viewclient.NewMemory())
		bootstrapped(t, mv, vc, "c1", rec("t1", 1, `{"project":"alpha"}`), rec("t2", 1, `{}`), rec("t3", 1, `{}`))
		before, _ := mv.Entities(bg, "s", "")
		var err error
		if bootstrap {
			var p views.BootstrapPage
			if json.Unmarshal(data, &p) != nil {
				return
			}
			_, err = mv.ApplyBootstrap(bg, p)
		} else {
			var p views.DeltaPage
			if json.Unmarshal(data, &p) != nil {
				return
			}
			_, err = mv.ApplyDelta(bg, p)
		}
		if err == nil {
			return
		}
		if !errors.Is(err, viewclient.ErrBadPage) && !errors.Is(err, viewclient.ErrGap) {
			t.Fatalf("refused with %v", err)
		}
		after, _ := mv.Entities(bg, "s", "")
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("a refused page changed the state: %v -> %v", before, after)
		}
		if cur, _, _ := mv.Cursor(bg, vc); cur != "c1" {
			t.Fatalf("a refused page moved the cursor to %q", cur)
		}
	})
}
