package client_test

import (
	"errors"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/client"
)

func put(o int64, id string) client.PushMutation {
	return client.PushMutation{Ordinal: o, Mutation: client.Mutation{Op: client.OpPut, Type: "task", EntityID: id, Properties: []byte(`{"project":"alpha"}`)}}
}

func TestPush(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		res := must(e.sp.Push(c, "phone", []client.PushMutation{put(1, "t1"), put(2, "t2")}))
		if res.LastOrdinal != 2 || len(res.Receipts) != 2 || res.Receipts[1].MutationID != "phone:2" || res.Seq != 2 {
			t.Fatalf("push = %+v", res)
		}
		again := must(e.sp.Push(c, "phone", []client.PushMutation{put(2, "t2")}))
		if again.Receipts[0].Seq != 2 || again.Seq != 2 {
			t.Fatalf("replay = %+v", again)
		}
		_, err := e.sp.Push(c, "phone", []client.PushMutation{put(3, "t3"), put(5, "t5")})
		var gap *client.GapError
		if !errors.As(err, &gap) || gap.Expected != 4 || gap.Got != 5 || gap.LastOrdinal != 3 || len(gap.Receipts) != 1 || !client.IsCode(err, "mutation_gap") {
			t.Fatalf("gap = %+v (%v)", gap, err)
		}
		pc := must(e.sp.PushClient(c, "phone"))
		if pc.ClientID != "phone" || pc.LastOrdinal != 3 || pc.UpdatedAt.IsZero() {
			t.Fatalf("client = %+v", pc)
		}
		_, other := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, Actor: "w"})
		osp := e.client(other, nil).Space("default")
		_, err = osp.Push(c, "phone", []client.PushMutation{put(4, "t4")})
		wantCode(t, err, "forbidden")
		_, err = osp.PushClient(c, "phone")
		wantCode(t, err, "forbidden")
		_, err = e.sp.PushClient(c, "tablet")
		wantCode(t, err, "not_found")
		_, err = e.sp.Push(c, "", []client.PushMutation{put(1, "x")})
		wantCode(t, err, "bad_request")
	})
}
