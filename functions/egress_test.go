package functions

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestEgressCheckURL(t *testing.T) {
	t.Parallel()
	open := must(NewEgress(nil, []string{"10.0.0.0/8", "*.internal.example", "bad.example"}))
	only := must(NewEgress([]string{"hooks.example.com", "192.0.2.0/24"}, nil))
	names := must(NewEgress([]string{"hooks.example.com"}, nil))
	for _, tc := range []struct {
		e    *Egress
		url  string
		deny bool
	}{
		{nil, "http://169.254.169.254/latest/meta-data", true},
		{nil, "http://[fe80::1]/x", true},
		{nil, "http://metadata.google.internal/computeMetadata/v1", true},
		{nil, "http://[::ffff:169.254.169.254]/", true},
		{nil, "https://hooks.example.com/x", false},
		{nil, "http://127.0.0.1:9000/hook", false},
		{open, "http://10.1.2.3/", true},
		{open, "http://a.internal.example/", true},
		{open, "http://internal.example/", false},
		{open, "http://BAD.example./", true},
		{open, "http://11.0.0.1/", false},
		{only, "https://hooks.example.com/x", false},
		{only, "http://192.0.2.7/", false},
		{only, "http://198.51.100.1/", true},
		{only, "https://other.example.com/", false}, // a name: its address is checked at connect
		{names, "https://other.example.com/", true},
	} {
		err := tc.e.CheckURL(tc.url)
		if (err != nil) != tc.deny || (err != nil && !errors.Is(err, ErrEgressDenied)) {
			t.Errorf("%s: %v, want denied %v", tc.url, err, tc.deny)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "a b", "ho*st"} {
		if _, err := NewEgress([]string{bad}, nil); err == nil {
			t.Errorf("allow %q accepted", bad)
		}
	}
}

// A name whose address is denied passes at save time and is refused at
// connect time: DNS cannot smuggle a denied address in.
func TestEgressChecksResolvedAddress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	url := "http://localhost:" + port + "/"
	deny := must(NewEgress(nil, []string{"127.0.0.0/8", "::1/128"}))
	if err := deny.CheckURL(url); err != nil {
		t.Fatalf("save-time check: %v", err)
	}
	_, err := deny.Client().Get(url)
	if !errors.Is(err, ErrEgressDenied) {
		t.Fatalf("connect to a denied address: %v, want ErrEgressDenied", err)
	}
	allowed := must(NewEgress(nil, nil))
	resp, err := allowed.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	var nilPolicy *Egress
	if _, err := nilPolicy.DialContext(context.Background(), "tcp", "169.254.169.254:80"); !errors.Is(err, ErrEgressDenied) {
		t.Fatalf("dial a metadata address: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
