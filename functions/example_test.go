package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
)

func ExampleParseFunction() {
	fn, err := functions.ParseFunction("stamp-completed", []byte(`{"kind": "expr", "writes": ["task"],
		"code": "patch(\"task\", entity.id, {\"completedAt\": now})"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	actions, err := fn.RunExpr(context.Background(), functions.Input{
		Entity:  &store.Record{Type: "task", ID: "t1", Properties: json.RawMessage(`{"status":"done"}`)},
		Trigger: "on-done",
		Now:     time.Date(2026, 8, 4, 10, 0, 0, 0, time.UTC),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(actions)
	fmt.Println(string(b))
	// Output: [{"op":"patch","type":"task","entityId":"t1","patch":{"completedAt":"2026-08-04T10:00:00Z"}}]
}

func ExampleParseFunction_error() {
	_, err := functions.ParseFunction("f", []byte(`{"kind": "expr", "code": "entity.id ==\n  missing"}`))
	fmt.Println(err)
	// Output: bad_request: code: line 2, column 3: unknown name missing
}

func ExampleSetHeaders() {
	h := http.Header{}
	body := []byte(`{"test": 2432232314}`)
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	ts := time.Unix(1614265330, 0)
	if err := functions.SetHeaders(h, secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Get("webhook-signature"))
	fmt.Println(functions.VerifyAt(secret, h, body, time.Minute, ts.Add(30*time.Second)))
	// Output:
	// v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
	// <nil>
}

func ExampleClassify() {
	h := http.Header{"Retry-After": {"30"}}
	d := functions.Classify(http.StatusTooManyRequests, h, nil)
	fmt.Println(d.Outcome, d.RetryAfter, d.Delay(1, time.Second, time.Minute, nil))
	fmt.Println(functions.Classify(http.StatusNotFound, nil, nil).Outcome)
	// Output:
	// retry 30s 30s
	// fail
}
