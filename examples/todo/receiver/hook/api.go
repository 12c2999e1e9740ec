package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/eddy-run/eddy/functions"
)

// errChanged reports a PATCH refused because the task changed since it
// was listed (412 on If-Match).
var errChanged = errors.New("task changed since it was listed")

// api is the little of eddy's HTTP API the sweep needs.
type api struct {
	base   string // .../api/v1/spaces/{space}
	token  string
	client *http.Client
}

// Task is a task as the sweep reads it.
type Task struct {
	ID         string     `json:"id"`
	Version    int64      `json:"version"`
	Properties Properties `json:"properties"`
}

// Properties are the task properties the sweep looks at.
type Properties struct {
	Title   string `json:"title"`
	Status  string `json:"status"`
	DueAt   string `json:"dueAt"`
	Overdue bool   `json:"overdue"`
}

// listPage is one page of GET .../entities/task.
type listPage struct {
	Items []Task `json:"items"`
	Next  string `json:"next"`
}

// tasks lists every task, following next from page to page (every page
// is read as of the first page's head).
func (a *api) tasks(ctx context.Context) ([]Task, error) {
	var all []Task
	q := url.Values{"limit": {"100"}}
	for {
		var page listPage
		if err := a.do(ctx, http.MethodGet, "/entities/task?"+q.Encode(), nil, nil, &page); err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		all = append(all, page.Items...)
		if page.Next == "" {
			return all, nil
		}
		q.Set("after", page.Next)
	}
}

// markOverdue patches {"overdue": true} onto the task, only if it is still
// at the version listed, as the delivery the cause token names.
func (a *api) markOverdue(ctx context.Context, t Task, cause string) error {
	h := http.Header{
		"Content-Type":        {"application/merge-patch+json"},
		"If-Match":            {strconv.FormatInt(t.Version, 10)},
		functions.HeaderCause: {cause},
	}
	err := a.do(ctx, http.MethodPatch, "/entities/task/"+url.PathEscape(t.ID), h, []byte(`{"overdue": true}`), nil)
	if err != nil {
		return fmt.Errorf("mark task %s overdue: %w", t.ID, err)
	}
	return nil
}

// do sends one request and decodes a 2xx answer into out (if not nil).
func (a *api) do(ctx context.Context, method, path string, h http.Header, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	switch {
	case err != nil:
		return err
	case resp.StatusCode == http.StatusPreconditionFailed:
		return errChanged
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(raw))
	case out == nil:
		return nil
	}
	return json.Unmarshal(raw, out)
}
