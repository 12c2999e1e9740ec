package functions

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// HeaderCause carries a delivery's cause token to a webhook, which sends
// it back on its writes through the API.
const HeaderCause = "Eddy-Cause"

// Answer is what a webhook answered: its status, headers and at most
// MaxResponseBytes+1 bytes of its body (DecodeResponse refuses more).
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Post sends one delivery body to the webhook f, once: a POST with
// Content-Type application/json, the Standard Webhooks headers for the
// delivery id (signed when f has a secret, timestamped with the local
// clock the receiver checks against), the cause token when it is set,
// and the extra headers given. timeout bounds the request and the read
// of the answer. A redirect is never followed, whatever the client's
// CheckRedirect: the 3xx is the answer. An error is a transport failure:
// no answer was read.
func (f *Function) Post(ctx context.Context, client *http.Client, id, causeToken string, body []byte, extra http.Header, timeout time.Duration) (Answer, error) {
	client = noRedirects(client)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL, bytes.NewReader(body))
	if err != nil {
		return Answer{}, fmt.Errorf("webhook request: %w", err)
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	if causeToken != "" {
		req.Header.Set(HeaderCause, causeToken)
	}
	if err := SetHeaders(req.Header, f.Secret, id, time.Now(), body); err != nil {
		return Answer{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, int64(MaxResponseBytes)+1))
	if err != nil {
		return Answer{}, err
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: raw}, nil
}

// CallError is a webhook call that did not yield actions: a transport
// failure (Status 0, Err), a non-2xx answer (Status), or a 2xx answer
// whose actions were refused (Refused, Err).
type CallError struct {
	Status  int
	Err     error
	Refused bool
}

// Error implements error.
func (e *CallError) Error() string {
	switch {
	case e.Refused:
		return fmt.Sprintf("webhook answer refused: %v", e.Err)
	case e.Err != nil:
		return fmt.Sprintf("webhook failed: %v", e.Err)
	}
	return fmt.Sprintf("webhook answered %d", e.Status)
}

// Unwrap returns the underlying error.
func (e *CallError) Unwrap() error { return e.Err }

// noRedirects returns a copy of client (sharing its transport) that
// answers a redirect with the 3xx itself.
func noRedirects(client *http.Client) *http.Client {
	if client == nil {
		client = http.DefaultClient
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}
