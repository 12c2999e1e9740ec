package functions

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Post sends the body signed, with the cause token and the extra
// headers, and reads at most MaxResponseBytes+1 of the answer.
func TestPost(t *testing.T) {
	t.Parallel()
	secret := GenerateSecret()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case Verify(secret, r.Header, body, time.Minute) != nil:
			w.WriteHeader(http.StatusUnauthorized)
		case r.Header.Get(HeaderCause) != "tok" || r.Header.Get("Traceparent") != "tp" ||
			r.Header.Get("Content-Type") != "application/json" || r.Header.Get(HeaderID) != "d1":
			w.WriteHeader(http.StatusBadRequest)
		default:
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, strings.Repeat("x", MaxResponseBytes+10))
		}
	}))
	t.Cleanup(srv.Close)
	f := &Function{Name: "hook", Kind: KindWebhook, URL: srv.URL, Secret: secret}
	ans, err := f.Post(t.Context(), srv.Client(), "d1", "tok", []byte(`{"a":1}`), http.Header{"Traceparent": {"tp"}}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Status != http.StatusAccepted || ans.Header.Get("Retry-After") != "3" || len(ans.Body) != MaxResponseBytes+1 {
		t.Fatalf("answer %d %v with %d bytes", ans.Status, ans.Header, len(ans.Body))
	}
	f.URL = "http://127.0.0.1:1/unreachable"
	if _, err := f.Post(t.Context(), srv.Client(), "d1", "", nil, nil, time.Second); err == nil {
		t.Fatal("posting to a closed port succeeded")
	}
}
