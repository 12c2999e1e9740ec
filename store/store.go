// Package store is eddy's driver boundary: the interfaces every storage
// driver implements and the plain row structs they exchange. It holds no
// domain logic and imports nothing of eddy's, so every other package can
// import it without cycles. All SQL lives in the drivers (store/sqlite and
// store/postgres); store/storetest is the conformance suite both must pass.
package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Sentinel errors that drivers return (wrapped) and callers branch on with
// errors.Is.
var (
	// ErrNotFound reports a missing space, entity, type definition, token
	// or receipt.
	ErrNotFound = errors.New("not found")
	// ErrExists reports that a create met an existing row.
	ErrExists = errors.New("already exists")
	// ErrStale reports that a write transaction's Expectation was wrong:
	// another writer moved the space or an entity since the caller last
	// saw it. Nothing was written; retry without an expectation.
	ErrStale = errors.New("stale write expectation")
	// ErrUnavailable reports that the database cannot be reached (a
	// refused or broken connection, a server shutting down, a closed
	// pool). Nothing can be said of the operation; retry later.
	ErrUnavailable = errors.New("store unavailable")
)

// Space is one space's row: the consistency boundary with its own log.
type Space struct {
	ID            string    `json:"space"`
	Head          int64     `json:"head"`
	Horizon       int64     `json:"horizon"`
	Epoch         string    `json:"epoch"`
	SchemaVersion int64     `json:"schemaVersion"`
	CreatedAt     time.Time `json:"createdAt"`
}

// Link is one outgoing link stored on its source entity.
type Link struct {
	Rel    string    `json:"rel"`
	Target EntityKey `json:"target"`
}

// EntityKey names one entity inside a space.
type EntityKey struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Record kinds.
const (
	KindLive    = "live"
	KindDeleted = "deleted"
)

// Record is an entity as stored: live, or a tombstone (Kind == KindDeleted,
// Version = the deleting seq). Properties is a JSON object in canonical
// form (keys sorted, no insignificant whitespace); Links are sorted by
// (rel, target type, target id).
type Record struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Version    int64           `json:"version"`
	Kind       string          `json:"-"`
	Properties json.RawMessage `json:"properties"`
	Links      []Link          `json:"links"`
	CreatedAt  time.Time       `json:"createdAt"`
	UpdatedAt  time.Time       `json:"updatedAt"`
	// GroupVersions holds, per conflict group, the seq of the last commit
	// that changed a property of that group. It is stored, never shown.
	GroupVersions map[string]int64 `json:"-"`
}

// Key returns the record's entity key.
func (r *Record) Key() EntityKey { return EntityKey{Type: r.Type, ID: r.ID} }

// Change kinds.
const (
	ChangeCreated = "created"
	ChangeUpdated = "updated"
	ChangeDeleted = "deleted"
)

// Change is one entity change inside a commit. Before and After are
// immutable snapshots (nil for a creation and a deletion respectively).
type Change struct {
	Ordinal        int      `json:"ordinal"`
	Kind           string   `json:"kind"`
	Type           string   `json:"type"`
	ID             string   `json:"id"`
	Version        int64    `json:"version"`
	Before         *Record  `json:"before"`
	After          *Record  `json:"after"`
	ConflictGroups []string `json:"conflictGroups"`
}

// Receipt statuses.
const (
	ReceiptApplied  = "applied"
	ReceiptNoop     = "noop"
	ReceiptRejected = "rejected"
)

// Receipt is the answer to one processed mutation, applied or not.
type Receipt struct {
	MutationID string             `json:"mutationId,omitempty"`
	Status     string             `json:"status"`
	Seq        int64              `json:"seq,omitempty"`
	Version    int64              `json:"version,omitempty"`
	Accepted   []string           `json:"accepted"`
	Rejected   []RejectedProperty `json:"rejected"`
	Reason     *Reason            `json:"reason,omitempty"`
	Proposed   json.RawMessage    `json:"proposed,omitempty"`
}

// RejectedProperty names one proposed property a mutation could not apply.
type RejectedProperty struct {
	Property string `json:"property"`
	Reason   string `json:"reason"`
}

// Reason explains a rejection with a stable code (the HTTP problem codes)
// and a human message.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Provenance is the structured origin of a commit. It is stored on every
// commit and shown only to trusted readers.
type Provenance struct {
	Actor      string `json:"actor"`
	Via        string `json:"via"`
	RequestID  string `json:"requestId,omitempty"`
	MutationID string `json:"mutationId,omitempty"`
	Trigger    string `json:"trigger,omitempty"`
	Delivery   string `json:"delivery,omitempty"`
	CausedBy   int64  `json:"causedBy,omitempty"`
	// Root is the seq of the chain's root write: set on every
	// delivery-authored row and park row, absent on a root (an API write
	// or a fire row is its own root) and on rows written before roots
	// were recorded.
	Root        int64  `json:"root,omitempty"`
	Depth       int    `json:"depth"`
	Traceparent string `json:"traceparent,omitempty"`
}

// Row is the wire row: what changes, watch and history carry, and nothing
// else. Payload is a JSON object naming what changed.
type Row struct {
	Seq      int64           `json:"seq"`
	TS       time.Time       `json:"ts"`
	Actor    string          `json:"actor"`
	Op       string          `json:"op"`
	EntityID string          `json:"entityId"`
	Type     string          `json:"type"`
	Payload  json.RawMessage `json:"payload"`
}

// Clone returns the row with its strings and payload copied: a row that
// outlives the page it was read into, when that page's memory goes back
// to the store (Recycler), must own its bytes.
func (r Row) Clone() Row {
	r.Actor, r.Op = strings.Clone(r.Actor), strings.Clone(r.Op)
	r.EntityID, r.Type = strings.Clone(r.EntityID), strings.Clone(r.Type)
	r.Payload = bytes.Clone(r.Payload)
	return r
}

// Commit is what one applied mutation appends: the wire row plus its
// changes, receipt and provenance.
type Commit struct {
	Row
	Changes    []Change   `json:"changes"`
	Receipt    Receipt    `json:"receipt"`
	Provenance Provenance `json:"provenance"`
}

// TypeDef is a stored type definition. Def is the JSON definition; its
// meaning belongs to the changelog package.
type TypeDef struct {
	Type      string          `json:"type"`
	Def       json.RawMessage `json:"definition"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// Definition kinds.
const (
	DefFunction = "function"
	DefTrigger  = "trigger"
)

// Definition is a stored function or trigger definition. Def is its JSON;
// its meaning belongs to the runtime and triggers packages.
type Definition struct {
	Name      string          `json:"name"`
	Def       json.RawMessage `json:"definition"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// StoredReceipt is a receipt kept under its mutation id for the
// idempotency window.
type StoredReceipt struct {
	MutationID string
	Receipt    Receipt
	// Entity is the record the original request answered with (nil after a
	// delete or a rejection), so a retried request answers the same.
	Entity    *Record
	CreatedAt time.Time
}

// Token is a stored API token; only the hash of its secret is kept.
type Token struct {
	ID          string    `json:"id"`
	Hash        []byte    `json:"-"`
	Space       string    `json:"space"`
	Role        string    `json:"role"`
	Actor       string    `json:"actor"`
	Types       []string  `json:"types,omitempty"`
	Scopes      []string  `json:"scopes,omitempty"`
	User        string    `json:"user,omitempty"`
	Application string    `json:"application,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
}

// RowFilter is the part of a row filter a driver pushes into SQL. Empty
// slices do not constrain. EntityType and EntityID are set together or not
// at all.
type RowFilter struct {
	Types         []string
	Ops           []string
	Actors        []string
	ExcludeTypes  []string
	ExcludeOps    []string
	ExcludeActors []string
	EntityType    string
	EntityID      string
}

// RowsParams selects wire rows with Lo < seq <= Hi matching Filter, in
// ascending seq order (Desc false) or descending (Desc true), at most Limit.
type RowsParams struct {
	Space  string
	Lo, Hi int64
	Filter RowFilter
	Desc   bool
	Limit  int
	// Recycle asks for a page whose memory the caller will hand back
	// through Recycler once it is done with it (see CommitsParams).
	Recycle bool
}

// CommitsParams selects at most Limit whole commits with seq > After, in
// ascending seq order, each with its changes ordered by ordinal.
type CommitsParams struct {
	Space string
	After int64
	Limit int
	// NoReceipts leaves every commit's Receipt zero: a reader that has no
	// use for receipts (the trigger evaluator) skips reading and decoding
	// them.
	NoReceipts bool
	// ChangesOf (RawCommits only), when not nil, reads the changes and
	// provenance only of the commits of these entity types (the Type of their Row): the
	// others come with Changes and Provenance nil, for a reader that
	// needs only their rows (the trigger evaluator: rows of types no
	// trigger watches). Their ChangeCount still answers, from the count
	// stored with each commit; a commit stored without one (written
	// before the count was) comes whole. nil reads every commit whole.
	ChangesOf []string
	// Recycle (RawCommits only) asks for a page whose memory the caller
	// will hand back through Recycler once it is done with it (a
	// forwarding reader that encodes each page and drops it). A store
	// that does not implement Recycler ignores it.
	Recycle bool
}

// Recycler is implemented by stores that can reuse the memory of the
// pages they read with CommitsParams.Recycle or RowsParams.Recycle. A
// page is handed back by a slice of its own (any part of it that starts
// where the page does, or the page filtered in place); a page not read
// with Recycle, or already handed back, is ignored. The caller must hold
// no reference to the page's commits or rows, nor to any string or JSON
// of theirs: the next pages overwrite them.
type Recycler interface {
	// RecycleRaw hands back the memory of a RawCommits page.
	RecycleRaw(commits []RawCommit)
	// RecycleRows hands back the memory of a Rows page.
	RecycleRows(rows []Row)
}

// EntityListParams selects records of one type with id > After (bytewise),
// ordered by id, at most Limit. With AsOf > 0, tombstones whose version is
// greater than AsOf are included (they may have been live at AsOf).
type EntityListParams struct {
	Space string
	Type  string
	After string
	AsOf  int64
	Limit int
}

// Store is a storage driver. Every method is safe for concurrent use.
type Store interface {
	// Migrate applies the driver's embedded migrations that have not run.
	Migrate(ctx context.Context) error
	// Close releases the driver's resources.
	Close() error

	// SpaceCreate creates a space at head 0, horizon 0; ErrExists if it
	// exists.
	SpaceCreate(ctx context.Context, id, epoch string) (Space, error)
	// SpaceGet returns a space or ErrNotFound.
	SpaceGet(ctx context.Context, id string) (Space, error)
	// SpaceList returns every space ordered by id.
	SpaceList(ctx context.Context) ([]Space, error)
	// SpacePrune deletes commits with seq <= through and moves the horizon
	// to through. It also deletes the causal budget counters of roots at
	// or below through whose chains wrote nothing above it (RootCount
	// LastSeq <= through). It never touches the head.
	SpacePrune(ctx context.Context, id string, through int64) (Space, error)
	// SpaceSeqBefore returns how far a max-age retention may prune a
	// space: walking its retained commits (seq > horizon) in seq order,
	// the seq just before the first commit whose ts is not before before,
	// or the head when every retained commit is older (the horizon when
	// the first one is not). Commit timestamps need not be monotonic, so
	// the walk stops at the first younger commit. ErrNotFound if the
	// space is missing.
	SpaceSeqBefore(ctx context.Context, space string, before time.Time) (int64, error)

	// TypeDefPut stores a type definition and bumps the space's schema
	// version.
	TypeDefPut(ctx context.Context, space string, def TypeDef) (TypeDef, error)
	// TypeDefGet returns a type definition or ErrNotFound.
	TypeDefGet(ctx context.Context, space, typ string) (TypeDef, error)
	// TypeDefList returns a space's type definitions ordered by type.
	TypeDefList(ctx context.Context, space string) ([]TypeDef, error)
	// TypeDefDelete removes a type definition (ErrNotFound if absent) and
	// bumps the schema version.
	TypeDefDelete(ctx context.Context, space, typ string) error

	// WriteBegin opens a write transaction on one space. Its first
	// statement takes the space write lock; in the same round trip it
	// loads the entities and stored receipts the caller names, so a
	// commit usually costs one round trip to read and one to write.
	WriteBegin(ctx context.Context, p WriteBeginParams) (WriteTx, error)

	// EntityGet returns a record (live or tombstone) or ErrNotFound.
	EntityGet(ctx context.Context, space string, key EntityKey) (Record, error)
	// EntityList returns records ordered by id, bytewise.
	EntityList(ctx context.Context, p EntityListParams) ([]Record, error)
	// FirstChangesAfter returns, for each key that has one, the first
	// change with seq > after that touched it (its Before is the record as
	// of after).
	FirstChangesAfter(ctx context.Context, space string, after int64, keys []EntityKey) (map[EntityKey]Change, error)

	// Rows returns wire rows (see RowsParams).
	Rows(ctx context.Context, p RowsParams) ([]Row, error)
	// Commits returns whole commits with their changes, receipt and
	// provenance (see CommitsParams).
	Commits(ctx context.Context, p CommitsParams) ([]Commit, error)
	// RawCommits is Commits with the changes, receipt and provenance left
	// as the stored JSON, for readers that forward them.
	RawCommits(ctx context.Context, p CommitsParams) ([]RawCommit, error)

	// DefinitionPut creates or replaces a definition of a kind (functions,
	// triggers) and reports whether it created it.
	DefinitionPut(ctx context.Context, space, kind string, d Definition) (created bool, err error)
	// DefinitionGet returns a definition or ErrNotFound.
	DefinitionGet(ctx context.Context, space, kind, name string) (Definition, error)
	// DefinitionList returns a space's definitions of a kind ordered by
	// name.
	DefinitionList(ctx context.Context, space, kind string) ([]Definition, error)
	// DefinitionDelete removes a definition; ErrNotFound if absent.
	DefinitionDelete(ctx context.Context, space, kind, name string) error

	// Secret returns the server secret called name, storing gen's value
	// first if there is none. Processes sharing a database agree on it.
	Secret(ctx context.Context, name string, gen func() ([]byte, error)) ([]byte, error)

	// TokenCreate stores a token.
	TokenCreate(ctx context.Context, t Token) error
	// TokenByHash returns the token with that secret hash or ErrNotFound.
	TokenByHash(ctx context.Context, hash []byte) (Token, error)
	// TokenList returns every token ordered by creation.
	TokenList(ctx context.Context) ([]Token, error)
	// TokenDelete revokes a token; ErrNotFound if absent. In the same
	// transaction it advances the token generation.
	TokenDelete(ctx context.Context, id string) error
	// TokenGeneration returns a number that changes whenever a token is
	// revoked, by any process sharing the database: a cache of
	// authenticated tokens is valid while it stays the same.
	TokenGeneration(ctx context.Context) (int64, error)

	// CommitLanded reports whether the commit at seq of space was written
	// by the write transaction that began with WriteBeginParams.WriteID
	// writeID. It first waits for any transaction holding the space's
	// write lock to end, so a transaction whose Commit failed ambiguously
	// (the connection broke after COMMIT was sent) has certainly committed
	// or rolled back when it answers. No commit at seq (above the
	// horizon) is false; a commit at seq pruned away is an error, since
	// nothing can then be known.
	CommitLanded(ctx context.Context, space string, seq, writeID int64) (bool, error)

	// ReceiptsExpire deletes at most limit stored receipts, of every
	// space, created before before, oldest first, and returns how many it
	// deleted. A limit below 1 deletes nothing.
	ReceiptsExpire(ctx context.Context, before time.Time, limit int) (int, error)

	TriggerStore
	CausalStore
	RootCountStore
	ViewStore
	ClientStore
	JournalStore
}

// WriteBeginParams names what a write transaction reads up front.
type WriteBeginParams struct {
	Space       string
	Entities    []EntityKey
	MutationIDs []string
	// ReceiptsSince ignores stored receipts older than this time.
	ReceiptsSince time.Time
	// WriteID, if not 0, is stored with every commit the transaction
	// appends, so CommitLanded can tell afterwards whether a transaction
	// whose Commit failed in fact committed.
	WriteID int64
	// Clients are the push clients to load under the space lock
	// (WriteTx.Clients). A transaction that loads clients is never
	// optimistic: WriteBegin ignores Expect when Clients is set.
	Clients []string
	// Expect, if set, predicts what the opening reads would return, so a
	// driver with network round trips may skip them: it answers Space,
	// Entities and Receipts from the prediction and verifies it under the
	// space lock when it commits, failing Commit with ErrStale (having
	// written nothing) if it was wrong. A driver may ignore Expect and
	// load the real state instead.
	Expect *Expectation
}

// Expectation is a writer's prediction of a space's state: its head and
// schema version, the records of the named entities (a named key absent
// from Records is predicted to have no row), and that none of the named
// mutation ids has a stored receipt.
type Expectation struct {
	Head          int64
	SchemaVersion int64
	Records       map[EntityKey]Record
}

// WriteTx is an open write transaction holding its space's write lock.
// Appends may be buffered by the driver and sent with Commit; a driver
// must make every buffered statement part of the same transaction.
type WriteTx interface {
	// Space is the locked space row as read by the lock statement.
	Space() Space
	// Entities are the records loaded by WriteBegin (live or tombstone);
	// absent keys had no row.
	Entities() map[EntityKey]Record
	// Receipts are the stored receipts loaded by WriteBegin, by mutation id.
	Receipts() map[string]StoredReceipt
	// Append records one commit: the commit row, its changes, the entity
	// rows it leaves (After, or a tombstone for deletions) and, when
	// c.Receipt.MutationID is set, its receipt (stored with Entity = the
	// After of change 0). Seqs must be Space().Head+1, +2, … in call order.
	// A commit's changes have distinct ordinals and touch at most two
	// entities: the commit's own and one more (merge, split).
	Append(ctx context.Context, c Commit, records []Record) error
	// ReceiptPut stores a receipt of a mutation that appended nothing.
	ReceiptPut(ctx context.Context, r StoredReceipt) error
	// Commit sets the space head to the last appended seq, signals other
	// processes (PostgreSQL NOTIFY) and commits.
	Commit(ctx context.Context) error
	// Rollback abandons the transaction; it is safe after Commit.
	Rollback(ctx context.Context) error

	TriggerTx
	ClientTx
	RootCountTx
}

// BatchAppender is implemented by write transactions that append several
// commits at once more cheaply than one by one (multi-row statements).
// AppendBatch(ctx, cs, recs) does what Append(ctx, cs[i], recs[i]) does
// for each i in order.
type BatchAppender interface {
	AppendBatch(ctx context.Context, commits []Commit, records [][]Record) error
}

// Notifier is implemented by drivers that can tell a process about
// commits made by other processes sharing the database (PostgreSQL:
// LISTEN on the channel the write transaction NOTIFYs).
type Notifier interface {
	// Listen calls fn with a space and its new head for every commit
	// notification, from this process or any other, until ctx ends. It
	// holds one dedicated connection, reconnects after failures, and after
	// each (re)connect calls fn with space "" and head -1 to say that
	// notifications may have been missed and every space must re-check
	// its head. fn must not block.
	Listen(ctx context.Context, fn func(space string, head int64)) error
}
