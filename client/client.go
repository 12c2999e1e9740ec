package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Defaults of Options.
const (
	// DefaultServer is where `eddy serve` listens by default.
	DefaultServer = "http://127.0.0.1:7070"
	// DefaultTimeout bounds one call (never a watch stream).
	DefaultTimeout = 30 * time.Second
	// DefaultMaxRetries is how often a call that is safe to repeat is
	// retried after a 429 or 503 answer with Retry-After.
	DefaultMaxRetries = 3
	// DefaultMaxRetryWait is the longest Retry-After a call waits out.
	DefaultMaxRetryWait = 30 * time.Second
	// DefaultTokenFile is where `eddy serve` writes its admin token,
	// relative to the directory it runs in.
	DefaultTokenFile = "eddy-data/admin.token"
)

// maxResponseBytes bounds a response body the client reads.
const maxResponseBytes = 64 << 20

// Options configure a Client. The zero value (plus a Token) is usable.
type Options struct {
	// Token is the bearer token every request carries.
	Token string
	// HTTPClient sends the requests (nil: a client of its own, with its
	// own connection pool). Leave its Timeout at 0: an http.Client
	// Timeout also cuts watch streams; the client bounds calls with
	// Timeout instead.
	HTTPClient *http.Client
	// Timeout bounds each call, retries included (default DefaultTimeout;
	// negative: no bound). Watch streams are not bounded by it; they
	// notice a dead connection by their idle timeout (WatchOptions).
	Timeout time.Duration
	// MaxRetries is how often a call that is safe to repeat (a GET, or a
	// write carrying an idempotency key) is retried after a 429
	// rate_limited or 503 unavailable answer that carries Retry-After,
	// waiting as long as it asks (default DefaultMaxRetries; negative:
	// never).
	MaxRetries int
	// MaxRetryWait is the longest Retry-After a call waits out; an answer
	// asking for longer is returned as its *Error, RetryAfter set
	// (default DefaultMaxRetryWait).
	MaxRetryWait time.Duration
	// UserAgent is sent as User-Agent (default "eddy-go-client").
	UserAgent string
}

// Client talks to one eddy server. It is safe for concurrent use and
// holds no state between calls beyond its configuration and connection
// pool.
type Client struct {
	base         *url.URL
	token        string
	hc           *http.Client
	timeout      time.Duration
	maxRetries   int
	maxRetryWait time.Duration
	userAgent    string
}

// New returns a client of the server at baseURL (scheme, host and port,
// and an optional path prefix a proxy serves eddy under), such as
// "http://127.0.0.1:7070".
func New(baseURL string, o Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: server %q: want http(s)://host:port", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	c := &Client{
		base: u, token: o.Token, hc: o.HTTPClient, timeout: o.Timeout,
		maxRetries: o.MaxRetries, maxRetryWait: o.MaxRetryWait, userAgent: o.UserAgent,
	}
	if c.hc == nil {
		c.hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxRetries == 0 {
		c.maxRetries = DefaultMaxRetries
	}
	if c.maxRetryWait <= 0 {
		c.maxRetryWait = DefaultMaxRetryWait
	}
	if c.userAgent == "" {
		c.userAgent = "eddy-go-client"
	}
	return c, nil
}

// FromEnv returns a client configured the way the eddy CLI is (see
// Env).
func FromEnv() (*Client, error) {
	server, token := Env()
	if token == "" {
		return nil, fmt.Errorf("client: no token: set EDDY_TOKEN or run in the directory holding %s", DefaultTokenFile)
	}
	return New(server, Options{Token: token})
}

// Env returns the server and token the eddy CLI uses: the server from
// EDDY_SERVER (default DefaultServer), the token from EDDY_TOKEN, else
// from the file DefaultTokenFile that `eddy serve` writes on first start
// ("" when there is neither).
func Env() (server, token string) {
	server = os.Getenv("EDDY_SERVER")
	if server == "" {
		server = DefaultServer
	}
	token = os.Getenv("EDDY_TOKEN")
	if token == "" {
		if b, err := os.ReadFile(filepath.FromSlash(DefaultTokenFile)); err == nil {
			token = strings.TrimSpace(string(b))
		}
	}
	return server, token
}

// CloseIdleConnections closes the idle connections of the client's
// HTTP client.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Space returns the handle of one space: the calls under
// /api/v1/spaces/{space}. It sends nothing.
func (c *Client) Space(name string) *Space { return &Space{c: c, name: name} }

// Space is the handle of one space of a Client. It is a value with no
// state of its own: make one per space and share it freely.
type Space struct {
	c    *Client
	name string
}

// Name returns the space's name.
func (s *Space) Name() string { return s.name }

// Client returns the client the handle belongs to.
func (s *Space) Client() *Client { return s.c }

// path returns the API path of the space followed by segs, each escaped.
func (s *Space) path(segs ...string) string {
	return apiPath(append([]string{"spaces", s.name}, segs...)...)
}

// apiPath returns /api/v1 followed by segs, each escaped.
func apiPath(segs ...string) string {
	var b strings.Builder
	b.WriteString("/api/v1")
	for _, seg := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(seg))
	}
	return b.String()
}

// call is one request.
type call struct {
	method string
	path   string // below the base, segments escaped, e.g. /api/v1/spaces/default
	query  url.Values
	// body is sent as JSON unless it is a []byte (sent as is); nil sends
	// no body.
	body   any
	ctype  string
	header http.Header
	// retry says the call may be repeated: a GET, or a write carrying an
	// idempotency key.
	retry bool
	// extra lengthens the call's timeout (a fence waits on the server).
	extra time.Duration
	// from is the position a compacted answer refers to (-1: none).
	from int64
}

// answer is a successful (2xx) response, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// get returns a GET call of path with query q.
func get(path string, q url.Values) call {
	return call{method: http.MethodGet, path: path, query: q, retry: true, from: -1}
}

// send returns a call with a JSON body (nil: none).
func send(method, path string, body any) call {
	return call{method: method, path: path, body: body, from: -1}
}

// do sends c (retrying as Options allow) and returns its 2xx answer; an
// error answer is returned as *Error (*CompactedError for compacted).
func (c *Client) do(ctx context.Context, cl call) (*answer, error) {
	body, err := encodeBody(cl.body)
	if err != nil {
		return nil, err
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout+cl.extra)
		defer cancel()
	}
	for attempt := 0; ; attempt++ {
		ans, err := c.once(ctx, cl, body)
		wait, again := c.retryWait(cl, err, attempt)
		if dl, ok := ctx.Deadline(); !again || (ok && time.Until(dl) < wait) {
			return ans, err // no retry, or none that could finish in time
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// retryWait reports whether a failed attempt may be repeated and after
// how long: a retryable call answered 429 or 503 with a Retry-After
// within MaxRetryWait, while retries remain.
func (c *Client) retryWait(cl call, err error, attempt int) (time.Duration, bool) {
	var e *Error
	if !cl.retry || attempt >= c.maxRetries || !errors.As(err, &e) {
		return 0, false
	}
	if e.Status != http.StatusTooManyRequests && e.Status != http.StatusServiceUnavailable {
		return 0, false
	}
	if !e.retryable || e.RetryAfter > c.maxRetryWait {
		return 0, false
	}
	return e.RetryAfter, true
}

// encodeBody returns the bytes of a call's body (nil for none).
func encodeBody(v any) ([]byte, error) {
	switch b := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return b, nil
	case json.RawMessage:
		return b, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return b, nil
}

// once sends one attempt of cl.
func (c *Client) once(ctx context.Context, cl call, body []byte) (*answer, error) {
	req, err := c.request(ctx, cl.method, cl.path, cl.query, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		ctype := cl.ctype
		if ctype == "" {
			ctype = "application/json"
		}
		req.Header.Set("Content-Type", ctype)
	}
	for k, vs := range cl.header {
		req.Header[k] = vs
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", cl.method, cl.path, err)
	}
	defer resp.Body.Close()
	data, err := readBody(resp.Body, maxResponseBytes)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", cl.method, cl.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, classify(problemOf(resp.StatusCode, resp.Header, data), cl.from)
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// request builds an authenticated request for path below the base.
func (c *Client) request(ctx context.Context, method, path string, q url.Values, body []byte) (*http.Request, error) {
	u := *c.base
	u.RawPath = c.base.EscapedPath() + path // path's segments are escaped
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	u.Path = p
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), r)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	return req, nil
}

// errTooLarge is an answer larger than the client reads.
var errTooLarge = errors.New("answer too large")

// readBody reads r whole, failing beyond limit bytes.
func readBody(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
	}
	return data, nil
}

// callJSON sends cl and decodes its answer into out.
func (c *Client) callJSON(ctx context.Context, cl call, out any) (*answer, error) {
	ans, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	if out != nil {
		if err := json.Unmarshal(ans.body, out); err != nil {
			return nil, fmt.Errorf("%s %s: decode answer: %w", cl.method, cl.path, err)
		}
	}
	return ans, nil
}
