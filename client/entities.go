package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/eddy-run/eddy/store"
)

// Record is an entity as the API shows it: {type, id, version,
// properties, links, createdAt, updatedAt}. Version is the seq of the
// commit that last changed it.
type Record = store.Record

// Receipt is the answer to one processed mutation, applied, noop or
// rejected.
type Receipt = store.Receipt

// EntityKey names one entity: {type, id}.
type EntityKey = store.EntityKey

// Link is one outgoing link of an entity: {rel, target}.
type Link = store.Link

// Receipt statuses.
const (
	ReceiptApplied  = store.ReceiptApplied
	ReceiptNoop     = store.ReceiptNoop
	ReceiptRejected = store.ReceiptRejected
)

// WriteOptions are the optional headers of an entity write.
type WriteOptions struct {
	// IfMatch applies the write only if the entity is at this version
	// (0: only if it does not exist); otherwise the write is rejected
	// with precondition_failed (412). Set it with Version(n).
	IfMatch *int64
	// IdempotencyKey is the write's mutation id: a repeated write with
	// the same key answers the first write's receipt and appends nothing
	// (for the idempotency window, 24h by default). A write with a key
	// is retried after 429/503 with Retry-After.
	IdempotencyKey string
	// Cause is an Eddy-Cause token from a delivery: the write is then
	// authored by the delivery's trigger (see docs/causality.md).
	Cause string
}

// Version returns a pointer to v, for WriteOptions.IfMatch.
func Version(v int64) *int64 { return &v }

// WriteResult answers an entity write.
type WriteResult struct {
	// Receipt is the mutation's receipt (applied or noop; a rejection is
	// an *Error whose Receipt method returns it).
	Receipt Receipt `json:"receipt"`
	// Entity is the entity after the write; nil after a delete.
	Entity *Record `json:"entity"`
	// Created reports that the write created the entity (201).
	Created bool `json:"-"`
	// Seq is the Eddy-Seq header: the seq of the commit the write
	// appended, or the head when it appended nothing (a noop). Pass it to
	// Fence to wait for the write's side effects.
	Seq int64 `json:"-"`
}

// Get returns the entity typ/id (not_found when it is missing or
// deleted).
func (s *Space) Get(ctx context.Context, typ, id string) (Record, error) {
	var rec Record
	_, err := s.c.callJSON(ctx, get(s.path("entities", typ, id), nil), &rec)
	return rec, err
}

// Put replaces the properties of typ/id (creating it if needed) with
// props, anything that encodes to a JSON object. opts (at most one) sets
// If-Match, Idempotency-Key or Eddy-Cause.
func (s *Space) Put(ctx context.Context, typ, id string, props any, opts ...WriteOptions) (WriteResult, error) {
	return s.write(ctx, http.MethodPut, s.path("entities", typ, id), props, "", opts)
}

// Patch applies a JSON merge patch (RFC 7386: null removes a property)
// to typ/id. patch is anything that encodes to a JSON object.
func (s *Space) Patch(ctx context.Context, typ, id string, patch any, opts ...WriteOptions) (WriteResult, error) {
	return s.write(ctx, http.MethodPatch, s.path("entities", typ, id), patch, "application/merge-patch+json", opts)
}

// Delete tombstones typ/id; the result's Entity is nil.
func (s *Space) Delete(ctx context.Context, typ, id string, opts ...WriteOptions) (WriteResult, error) {
	return s.write(ctx, http.MethodDelete, s.path("entities", typ, id), nil, "", opts)
}

// Create creates an entity of typ with a generated id (the result's
// Entity.ID) and props.
func (s *Space) Create(ctx context.Context, typ string, props any, opts ...WriteOptions) (WriteResult, error) {
	return s.write(ctx, http.MethodPost, s.path("entities", typ), props, "", opts)
}

// write sends one entity write.
func (s *Space) write(ctx context.Context, method, path string, body any, ctype string, opts []WriteOptions) (WriteResult, error) {
	cl := send(method, path, body)
	cl.ctype = ctype
	if len(opts) > 0 {
		o := opts[0]
		cl.header = writeHeader(o)
		cl.retry = o.IdempotencyKey != ""
	}
	var res WriteResult
	ans, err := s.c.callJSON(ctx, cl, &res)
	if err != nil {
		return WriteResult{}, err
	}
	res.Created = ans.status == http.StatusCreated
	res.Seq = seqHeader(ans.header)
	return res, nil
}

// writeHeader returns the headers of o.
func writeHeader(o WriteOptions) http.Header {
	h := http.Header{}
	if o.IfMatch != nil {
		h.Set("If-Match", strconv.Quote(strconv.FormatInt(*o.IfMatch, 10)))
	}
	if o.IdempotencyKey != "" {
		h.Set("Idempotency-Key", o.IdempotencyKey)
	}
	if o.Cause != "" {
		h.Set("Eddy-Cause", o.Cause)
	}
	return h
}

// ListParams select one page of a collection.
type ListParams struct {
	// Limit is the page size, 1 to 1000 (0: the server's default, 100).
	Limit int
	// After is the previous page's Next ("" for the first page).
	After string
}

// ListPage is one page of a collection, consistent as of Head: every
// page of one walk shows the collection as of the first page's head, so
// watching from Head after the last page misses nothing and sees
// nothing twice. Next is the After of the following page, "" on the
// last.
type ListPage struct {
	Items []Record `json:"items"`
	Head  int64    `json:"head"`
	Next  string   `json:"next,omitempty"`
}

// List returns one page of the entities of typ the token may read.
func (s *Space) List(ctx context.Context, typ string, p ListParams) (ListPage, error) {
	q := url.Values{}
	setLimit(q, p.Limit)
	if p.After != "" {
		q.Set("after", p.After)
	}
	var page ListPage
	_, err := s.c.callJSON(ctx, get(s.path("entities", typ), q), &page)
	return page, err
}

// ListPages walks every page of typ, limit entities at a time (0: the
// server's default), stopping at the first error. Every page carries the
// same Head.
func (s *Space) ListPages(ctx context.Context, typ string, limit int) iter.Seq2[ListPage, error] {
	return func(yield func(ListPage, error) bool) {
		p := ListParams{Limit: limit}
		for {
			page, err := s.List(ctx, typ, p)
			if !yield(page, err) || err != nil || page.Next == "" {
				return
			}
			p.After = page.Next
		}
	}
}

// setLimit sets the limit parameter when n is positive.
func setLimit(q url.Values, n int) {
	if n > 0 {
		q.Set("limit", strconv.Itoa(n))
	}
}
