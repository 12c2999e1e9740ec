package store

import (
	"context"
	"encoding/json"
	"time"
)

// DefView is the definition kind of a saved view (see package views);
// views are stored with DefinitionPut like functions and triggers.
const DefView = "view"

// ViewSession is the header of a frozen view bootstrap session: a view
// materialized at one source watermark and cut into pages, kept until
// ExpiresAt so that retried pages answer byte for byte the same from any
// process sharing the database.
type ViewSession struct {
	Space string
	// ID is the session's random id (the bootstrap tokens name it).
	ID string
	// View names the view the session was opened for.
	View string
	// Reader names who the records were judged readable for (a token
	// id), or is "" when they were not judged.
	Reader string
	// Watermark is the seq the snapshot is consistent as of.
	Watermark int64
	// PageSize is the records of every page but the last; Pages and
	// Records count what the session holds.
	PageSize  int
	Pages     int
	Records   int64
	CreatedAt time.Time
	ExpiresAt time.Time
}

// ViewSessionPage is one stored page of a frozen session: the records it
// holds (a JSON array, served verbatim) and the offset of its first record
// in the whole snapshot.
type ViewSessionPage struct {
	Page    int
	Offset  int64
	Records json.RawMessage
}

// ViewStore is what view sync keeps beyond the log and the definitions:
// frozen bootstrap sessions and epoch rotation.
type ViewStore interface {
	// ViewSessionPagesPut stores pages of a session that is being
	// materialized; they are not served until ViewSessionPut stores its
	// header. A page number stored twice is an error.
	ViewSessionPagesPut(ctx context.Context, space, id string, expires time.Time, pages []ViewSessionPage) error
	// ViewSessionPut stores a session's header, making its pages
	// servable; ErrExists if the session already has one.
	ViewSessionPut(ctx context.Context, s ViewSession) error
	// ViewSessionPage returns a session's header and one of its pages;
	// ErrNotFound when either is missing (never stored, expired and
	// deleted, or a page number out of range).
	ViewSessionPage(ctx context.Context, space, id string, page int) (ViewSession, ViewSessionPage, error)
	// ViewSessionsExpire deletes at most limit sessions (headers and
	// pages, headerless pages included) that expired before before, of
	// every space, and returns how many sessions it deleted.
	ViewSessionsExpire(ctx context.Context, before time.Time, limit int) (int, error)
	// ViewSessionsOpen counts the sessions, of every space, whose header
	// is stored and which have not expired at now.
	ViewSessionsOpen(ctx context.Context, now time.Time) (int64, error)

	// SpaceEpochRotate replaces a space's epoch, so every view cursor and
	// bootstrap token of the space stops addressing its history;
	// ErrNotFound if the space is missing.
	SpaceEpochRotate(ctx context.Context, space, epoch string) (Space, error)
}
