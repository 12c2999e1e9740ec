package store

import (
	"context"
	"time"
)

// PushClient is one client of the push protocol (DESIGN.md section 8b):
// the principal that owns it and the last ordinal it admitted.
type PushClient struct {
	Space string
	// ID is the client's id, chosen by the client.
	ID string
	// Owner identifies the principal that first pushed it (a token id).
	Owner string
	// LastOrdinal is the last ordinal admitted; 0 before the first push.
	LastOrdinal int64
	// LastSeq is the seq of the last commit the client's pushes appended
	// (0: none yet): every ordinal through LastOrdinal is in the log at
	// or before it.
	LastSeq   int64
	UpdatedAt time.Time
}

// ClientStore keeps push clients. Their rows are written only inside
// write transactions (ClientTx), with the commits they admit.
type ClientStore interface {
	// ClientGet returns a push client or ErrNotFound.
	ClientGet(ctx context.Context, space, id string) (PushClient, error)
	// ClientsOf returns the clients of space owned by owner, by id.
	ClientsOf(ctx context.Context, space, owner string) (map[string]PushClient, error)
	// ClientsExpire deletes at most limit clients, of every space, last
	// updated before before, and returns how many it deleted.
	ClientsExpire(ctx context.Context, before time.Time, limit int) (int, error)
}

// ClientTx is the part of a write transaction that keeps push clients.
type ClientTx interface {
	// Clients are the push clients WriteBegin loaded (WriteBeginParams
	// Clients), by id; absent ids have no row.
	Clients() map[string]PushClient
	// ClientPut creates or replaces a push client's row.
	ClientPut(ctx context.Context, c PushClient) error
}
