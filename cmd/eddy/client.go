package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/eddy-run/eddy/problem"
)

// maxResponseBytes bounds a response body the CLI reads.
const maxResponseBytes = 64 << 20

// client is the CLI's small HTTP client for the eddy API.
type client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// newClient returns a client for the server at base (scheme and host, an
// optional path prefix) authenticating with token.
func newClient(base, token string) (*client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("--server %q: want http(s)://host:port", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &client{base: u, token: token, http: &http.Client{Timeout: 60 * time.Second}}, nil
}

// request is one API call.
type request struct {
	method string
	path   string // below the server base, e.g. /api/v1/spaces/default
	query  url.Values
	body   []byte
	ctype  string
	header http.Header
}

// response is a successful answer (2xx).
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends r and returns a 2xx response; a non-2xx answer is returned as a
// *problem.Error (the server's problem object, or one made from the status).
func (c *client) do(ctx context.Context, r request) (*response, error) {
	u := *c.base
	u.Path += r.path
	u.RawQuery = r.query.Encode()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if r.body != nil {
		ctype := r.ctype
		if ctype == "" {
			ctype = "application/json"
		}
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, decodeProblem(resp.StatusCode, data)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// getJSON sends a GET and decodes its body into v.
func (c *client) getJSON(ctx context.Context, path string, q url.Values, v any) ([]byte, error) {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path, query: q})
	if err != nil {
		return nil, err
	}
	if v != nil {
		if err := json.Unmarshal(resp.body, v); err != nil {
			return nil, fmt.Errorf("decode response: %w", err)
		}
	}
	return resp.body, nil
}

// decodeProblem turns an error answer into a *problem.Error.
func decodeProblem(status int, body []byte) error {
	var env struct {
		Error *problem.Error `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err == nil && env.Error != nil && env.Error.Code != "" {
		return env.Error
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &problem.Error{Code: fmt.Sprintf("http_%d", status), Message: msg}
}

// spacePath returns the API path of a space, with more path segments
// appended (each escaped).
func spacePath(space string, segs ...string) string {
	var b strings.Builder
	b.WriteString("/api/v1/spaces/")
	b.WriteString(url.PathEscape(space))
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}
