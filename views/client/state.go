package client

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/views"
)

// Errors of applying pages. A refused page changes nothing.
var (
	// ErrBadPage is a page that is not well formed: a context whose
	// fingerprint is not its own (forged or truncated), a missing
	// cursor or token, a record without type or id.
	ErrBadPage = errors.New("views client: bad page")
	// ErrGap is a page that does not continue the view's stored
	// position: a skipped page, an out-of-order page, or a page of a
	// view the client has not bootstrapped.
	ErrGap = errors.New("views client: page does not continue the view")
)

// Entity is what a ClientState holds of one entity of one space: its
// version barrier, its tombstone, the record (if any view owns it) and
// the fingerprints of the views that own it.
type Entity struct {
	Space, Type, ID string
	// Version is the highest canonical version observed for the entity,
	// through any view and any kind of change.
	Version int64
	// Tombstone is the version of its deletion (0: not deleted). No
	// change at or below it is applied again.
	Tombstone int64
	// Record is the record as a view sent it (nil: not held locally).
	Record json.RawMessage
	// RecordVersion is the version of Record.
	RecordVersion int64
	// Owners are the fingerprints of the views that own the entity.
	Owners []string
}

// owned reports whether view fp owns e.
func (e *Entity) owned(fp string) bool {
	for _, o := range e.Owners {
		if o == fp {
			return true
		}
	}
	return false
}

// Phase is where a view's progress is.
type Phase string

// Phases of a view.
const (
	// Bootstrapping: pages of a bootstrap are being applied.
	Bootstrapping Phase = "bootstrap"
	// Streaming: the bootstrap completed; delta pages continue after
	// Cursor.
	Streaming Phase = "delta"
)

// seenPages is how many applied pages a view remembers, so a duplicate
// delivered late is still recognized as one.
const seenPages = 64

// Progress is one view's position, kept under its context's fingerprint.
type Progress struct {
	Context views.Context `json:"context"`
	Phase   Phase         `json:"phase"`
	// Cursor is the delta cursor (Streaming).
	Cursor string `json:"cursor,omitempty"`
	// NextToken and NextOffset are the next bootstrap page expected
	// (Bootstrapping).
	NextToken  string `json:"nextToken,omitempty"`
	NextOffset int64  `json:"nextOffset,omitempty"`
	// Seen are the ids of the last pages applied (a bootstrap page's
	// token, a delta page's previous and next cursor), oldest first.
	Seen []string `json:"seen,omitempty"`
}

// seen reports whether the page with id was applied.
func (p *Progress) seen(id string) bool {
	for _, s := range p.Seen {
		if s == id {
			return true
		}
	}
	return false
}

// remember records an applied page's id.
func (p *Progress) remember(id string) {
	p.Seen = append(p.Seen, id)
	if len(p.Seen) > seenPages {
		p.Seen = append([]string(nil), p.Seen[len(p.Seen)-seenPages:]...)
	}
}

// Pending is one local write waiting for its push and its
// acknowledgement.
type Pending struct {
	Space    string             `json:"space"`
	ClientID string             `json:"clientId"`
	Ordinal  int64              `json:"ordinal"`
	Mutation changelog.Mutation `json:"mutation"`
}

// ClientState is the local store of a MultiViewClient. Every change goes
// through one StateTx, committed whole or not at all.
type ClientState interface { //nolint:revive // the whole client's state (every view's records and cursor); State alone reads as one view's
	// Begin opens a transaction; only one is open at a time (Begin waits).
	Begin(ctx context.Context) (StateTx, error)
	// Close releases the state.
	Close() error
}

// StateTx is one local transaction of a ClientState. It is used by one
// goroutine; after Commit or Rollback it must not be used again.
type StateTx interface {
	// Entity returns the entity, and false when nothing is known of it.
	Entity(space, typ, id string) (Entity, bool, error)
	// EntitiesOf returns what is known of the named entities of a
	// space (absent keys: nothing known), in one read.
	EntitiesOf(space string, keys []store.EntityKey) (map[store.EntityKey]Entity, error)
	// PutEntity stores e whole (replacing what was known).
	PutEntity(e Entity) error
	// Entities returns every entity of a space, ordered by type and id;
	// typ filters by type when not "".
	Entities(space, typ string) ([]Entity, error)
	// Progress returns a view's progress by fingerprint.
	Progress(fingerprint string) (Progress, bool, error)
	// PutProgress stores a view's progress under its context's
	// fingerprint.
	PutProgress(p Progress) error
	// DeleteProgress forgets a view's progress.
	DeleteProgress(fingerprint string) error
	// Views returns the progress of every view, ordered by space and
	// fingerprint.
	Views() ([]Progress, error)
	// DropSpace discards what is known of a space's history: its
	// entities (records, versions, tombstones) and every view's
	// progress. Pending writes and meta values stay: they are the
	// application's own writes, still to be pushed.
	DropSpace(space string) error
	// Pending returns the pending writes of a space, in ordinal order.
	Pending(space string) ([]Pending, error)
	// PutPending queues a pending write.
	PutPending(p Pending) error
	// DropPending removes a client's pending writes through ordinal.
	DropPending(space, clientID string, through int64) error
	// Meta returns a value the client keeps per space (its client id,
	// its next ordinal).
	Meta(space, key string) (string, bool, error)
	// PutMeta stores a per-space value.
	PutMeta(space, key, value string) error
	// Commit publishes the transaction's changes together.
	Commit() error
	// Rollback discards them (a no-op after Commit).
	Rollback() error
}
