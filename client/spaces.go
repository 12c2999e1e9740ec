package client

import (
	"context"
	"net/http"
	"strconv"
)

// Discovery answers GET /api/v1: the server's version and the spaces the
// token may see.
type Discovery struct {
	Version string         `json:"version"`
	Spaces  []SpaceSummary `json:"spaces"`
}

// SpaceSummary is one space in Discovery.
type SpaceSummary struct {
	Space   string `json:"space"`
	Head    int64  `json:"head"`
	Horizon int64  `json:"horizon"`
	Epoch   string `json:"epoch"`
}

// SpaceInfo is one space: GET, PUT and prune answer it. A position c is
// resumable iff Horizon <= c <= Head; RetainedFrom is Horizon+1, the
// oldest seq still stored.
type SpaceInfo struct {
	Space         string `json:"space"`
	Head          int64  `json:"head"`
	Horizon       int64  `json:"horizon"`
	RetainedFrom  int64  `json:"retainedFrom"`
	Epoch         string `json:"epoch"`
	SchemaVersion int64  `json:"schemaVersion"`
}

// Discover answers GET /api/v1.
func (c *Client) Discover(ctx context.Context) (Discovery, error) {
	var d Discovery
	_, err := c.callJSON(ctx, get(apiPath(), nil), &d)
	return d, err
}

// Info answers GET /api/v1/spaces/{space}.
func (s *Space) Info(ctx context.Context) (SpaceInfo, error) {
	var sp SpaceInfo
	_, err := s.c.callJSON(ctx, get(s.path(), nil), &sp)
	return sp, err
}

// CreateSpace creates a space (PUT /api/v1/spaces/{space}, admin).
// created is false when it existed already (200 instead of 201).
func (c *Client) CreateSpace(ctx context.Context, name string) (info SpaceInfo, created bool, err error) {
	cl := send(http.MethodPut, apiPath("spaces", name), nil)
	cl.retry = true // creating a space twice answers the same space
	ans, err := c.callJSON(ctx, cl, &info)
	if err != nil {
		return SpaceInfo{}, false, err
	}
	return info, ans.status == http.StatusCreated, nil
}

// PruneParams is the body of POST .../prune.
type PruneParams struct {
	// Through is the last seq to delete; the horizon moves to it.
	Through int64 `json:"through"`
	// Force prunes past rows enabled triggers still need (they stall
	// with history_pruned until reset).
	Force bool `json:"force,omitempty"`
}

// Prune deletes the commits <= p.Through (POST .../prune, admin) and
// answers the space with its new horizon. Pruning past what triggers
// still need is 409 conflict with reason "triggers_behind" and
// details.limit, unless p.Force.
func (s *Space) Prune(ctx context.Context, p PruneParams) (SpaceInfo, error) {
	var sp SpaceInfo
	_, err := s.c.callJSON(ctx, send(http.MethodPost, s.path("prune"), p), &sp)
	return sp, err
}

// seqHeader returns the Eddy-Seq header of a write answer (0 when
// absent).
func seqHeader(h http.Header) int64 {
	n, _ := strconv.ParseInt(h.Get("Eddy-Seq"), 10, 64)
	return n
}
