package client_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/views"
)

// alphaView is a view of the tasks of project alpha.
var alphaView = map[string]any{"version": "v1", "types": []string{"task"},
	"filter": map[string]any{"fieldEquals": map[string]any{"field": "project", "expected": "alpha"}}}

func TestViewBootstrapDeltaAndWatch(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		v := e.sp.View("alpha")
		if _, created, err := v.Put(c, alphaView); err != nil || !created {
			t.Fatalf("put view: created=%v err=%v", created, err)
		}
		for _, id := range []string{"t1", "t2", "t3"} {
			must(e.sp.Put(c, "task", id, map[string]any{"project": "alpha"}))
		}
		must(e.sp.Put(c, "task", "t4", map[string]any{"project": "beta"}))
		for _, strategy := range []string{client.Keyset, client.Frozen} {
			var ids []string
			var cursor string
			err := v.Bootstrap(c, client.BootstrapOptions{PageSize: 2, Strategy: strategy}, func(p client.BootstrapPage) error {
				var recs []struct{ ID string }
				if err := json.Unmarshal(p.Records, &recs); err != nil {
					return err
				}
				for _, r := range recs {
					ids = append(ids, r.ID)
				}
				if p.Context.View != "alpha" || p.Context.Space != "default" {
					t.Fatalf("page context = %+v", p.Context)
				}
				if p.Complete {
					cursor = *p.Cursor
				}
				return nil
			})
			if err != nil || len(ids) != 3 || cursor == "" {
				t.Fatalf("%s bootstrap: ids=%v cursor=%q err=%v", strategy, ids, cursor, err)
			}
			if strategy == client.Keyset {
				continue
			}
			must(e.sp.Patch(c, "task", "t1", map[string]any{"project": "beta"}))
			d := must(v.Delta(c, cursor, 0))
			if d.PreviousCursor != cursor || len(d.Commits) != 1 || d.Commits[0].Changes[0].Kind != views.RemovedFromScope {
				t.Fatalf("delta = %+v", d)
			}
			vc := d.Context
			st := must(v.Watch(c, vc, d.Cursor, client.ViewStreamOptions{}))
			must(e.sp.Put(c, "task", "t5", map[string]any{"project": "alpha"}))
			ev := must(st.Next())
			for ev.Page == nil || len(ev.Page.Commits) == 0 {
				ev = must(st.Next())
			}
			if ev.Page.PreviousCursor != d.Cursor || ev.Page.Context != vc || ev.Page.Commits[0].Changes[0].ID != "t5" {
				t.Fatalf("stream page = %+v", ev.Page)
			}
			if _, _, err := v.Put(c, map[string]any{"version": "v2", "types": []string{"task"},
				"filter": map[string]any{"fieldEquals": map[string]any{"field": "project", "expected": "beta"}}}); err != nil {
				t.Fatal(err)
			}
			_, err = st.Next()
			for err == nil {
				_, err = st.Next()
			}
			if re, ok := client.AsReset(err); !ok || re.Reason != views.ViewChanged || re.DiscardsSpace() {
				t.Fatalf("stream end = %v", err)
			}
			st.Close()
			_, err = v.Delta(c, d.Cursor, 0)
			if re, ok := client.AsReset(err); !ok || re.Reason != views.ViewChanged || !client.IsCode(err, "reset_required") {
				t.Fatalf("delta after change = %v", err)
			}
			must(e.sp.RotateEpoch(c))
			d2, err := v.Delta(c, d.Cursor, 0)
			var re *client.ResetError
			if !errors.As(err, &re) || re.Reason != views.EpochChanged || !re.DiscardsSpace() {
				t.Fatalf("delta after rotation = %+v %v", d2, err)
			}
		}
		_, err := v.Page(c, "forged")
		if re, ok := client.AsReset(err); !ok || re.Reason != views.TokenUnknown {
			t.Fatalf("forged token = %v", err)
		}
		vs := must(e.sp.Views(c))
		if len(vs) != 1 || vs[0].Name != "alpha" {
			t.Fatalf("views = %+v", vs)
		}
	})
}
