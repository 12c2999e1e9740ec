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
// of the answer. An error is a transport failure: no answer was read.
func (f *Function) Post(ctx context.Context, client *http.Client, id, causeToken string, body []byte, extra http.Header, timeout time.Duration) (Answer, error) {
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
