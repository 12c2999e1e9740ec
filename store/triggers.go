package store

import (
	"context"
	"errors"
	"slices"
	"time"
)

// ErrFenced reports that a trigger write was refused because the caller's
// view of the trigger is out of date: its lease epoch changed (another
// process took the lease) or its cursor moved (an operator reset or
// replayed it). Nothing was written; the caller reloads the state.
var ErrFenced = errors.New("trigger state fenced")

// DeliveryStatus is where a delivery stands. Pending, running and
// retrying are open; the others are terminal (parked until an operator
// releases it).
type DeliveryStatus string

// Delivery statuses.
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliveryRunning   DeliveryStatus = "running"
	DeliverySucceeded DeliveryStatus = "succeeded"
	DeliveryRetrying  DeliveryStatus = "retrying"
	DeliveryFailed    DeliveryStatus = "failed"
	DeliveryParked    DeliveryStatus = "parked"
	DeliveryDiscarded DeliveryStatus = "discarded"
)

// DeliveryStatuses are every delivery status, in lifecycle order.
var DeliveryStatuses = []DeliveryStatus{
	DeliveryPending, DeliveryRunning, DeliverySucceeded, DeliveryRetrying,
	DeliveryFailed, DeliveryParked, DeliveryDiscarded,
}

// OpenDeliveryStatuses are the statuses of deliveries still to run.
var OpenDeliveryStatuses = []DeliveryStatus{DeliveryPending, DeliveryRunning, DeliveryRetrying}

// Open reports whether s is one of OpenDeliveryStatuses.
func (s DeliveryStatus) Open() bool { return slices.Contains(OpenDeliveryStatuses, s) }

// OnlyOpen reports whether statuses is not empty and every one is open:
// a listing filtered so can read the drivers' index of open deliveries.
func OnlyOpen(statuses []DeliveryStatus) bool {
	for _, st := range statuses {
		if !st.Open() {
			return false
		}
	}
	return len(statuses) > 0
}

// Stopped reports whether s is a status a delivery ends in short of
// success: failed, parked or discarded (neither open nor succeeded). The
// stores index such deliveries by status, so they are counted and
// listed without reading a trigger's succeeded ones.
func (s DeliveryStatus) Stopped() bool { return !s.Open() && s != DeliverySucceeded }

// OnlyStopped reports whether statuses is not empty and every one is
// stopped (see Stopped): such a listing reads the stopped deliveries'
// indexes alone.
func OnlyStopped(statuses []DeliveryStatus) bool {
	for _, st := range statuses {
		if !st.Stopped() {
			return false
		}
	}
	return len(statuses) > 0
}

// OneStopped reports the status when statuses is a single stopped status
// (see Stopped): a trigger's deliveries of it are listed through the
// stopped deliveries' index.
func OneStopped(statuses []DeliveryStatus) (DeliveryStatus, bool) {
	if len(statuses) != 1 || !statuses[0].Stopped() {
		return "", false
	}
	return statuses[0], true
}

// Add records n deliveries of status; oldest is the creation time of
// the oldest of them, kept in OldestOpen when status is open. A status
// of "" is the count of all the trigger's deliveries: the succeeded
// ones are what it leaves after the others (see Settle), so a delivery
// that succeeds writes no index entry the count needs.
func (st *DeliveryStats) Add(status DeliveryStatus, n int, oldest time.Time) {
	if status == "" {
		st.total = n
		return
	}
	st.ByStatus[status] = n
	if status.Open() && (st.OldestOpen.IsZero() || oldest.Before(st.OldestOpen)) {
		st.OldestOpen = oldest
	}
}

// Settle sets the succeeded count from the total Add was given, if any.
func (st *DeliveryStats) Settle() {
	if st.total == 0 {
		return
	}
	n := st.total
	for _, c := range st.ByStatus {
		n -= c
	}
	if n > 0 {
		st.ByStatus[DeliverySucceeded] = n
	}
	st.total = 0
}

// SeqRange is the closed seq range Lo..Hi (Lo <= Hi).
type SeqRange struct {
	Lo int64 `json:"lo"`
	Hi int64 `json:"hi"`
}

// TriggerState is the evaluation state of one trigger in a space: its
// cursor (every row <= Cursor has a stance), its start (rows <= Start are
// not_started), the ranges skipped while disabled, the last cron slot it
// fired, and its lease.
type TriggerState struct {
	Space   string     `json:"space"`
	Trigger string     `json:"trigger"`
	Cursor  int64      `json:"cursor"`
	Start   int64      `json:"start"`
	Skipped []SeqRange `json:"skipped"`
	// Fired is the scheduled time of the last cron firing (zero if none).
	Fired time.Time `json:"fired"`
	// Owner is the process holding the lease ("" when none ever did);
	// Epoch grows by one every time the lease changes hands.
	Owner        string    `json:"owner"`
	Epoch        int64     `json:"epoch"`
	LeaseExpires time.Time `json:"leaseExpires"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// Delivery is one run of a trigger's function for one row.
type Delivery struct {
	ID      string `json:"id"`
	Space   string `json:"space"`
	Trigger string `json:"trigger"`
	// Seq is the row that caused the delivery.
	Seq int64 `json:"seq"`
	// Entity is the row's primary entity (for a fire row, eddy.trigger and
	// the trigger's name).
	Entity        EntityKey      `json:"entity"`
	Status        DeliveryStatus `json:"status"`
	Attempts      int            `json:"attempts"`
	Depth         int            `json:"depth"`
	LastError     string         `json:"lastError"`
	NextAttemptAt time.Time      `json:"nextAttemptAt"`
	CreatedAt     time.Time      `json:"createdAt"`
	UpdatedAt     time.Time      `json:"updatedAt"`
}

// FilterFailure records that a trigger's filter raised an error on a
// row (the row's stance is error).
type FilterFailure struct {
	Trigger string `json:"trigger"`
	Seq     int64  `json:"seq"`
	Error   string `json:"error"`
}

// Advance moves one trigger's cursor from From to To (From < To), fenced:
// it applies only if the stored cursor is From and the stored epoch is
// Epoch. Deliveries are inserted (their ids must be new) and Failures
// recorded with it, in the same transaction.
type Advance struct {
	Trigger    string
	Epoch      int64
	From, To   int64
	Deliveries []Delivery
	Failures   []FilterFailure
}

// DeliveryUpdate changes one delivery, fenced: it applies only if the
// delivery's status is one of From (any status when From is empty) and,
// when Epoch > 0, the trigger's lease epoch is Epoch. A zero
// NextAttemptAt stores zero.
type DeliveryUpdate struct {
	Space         string
	ID            string
	Epoch         int64
	From          []DeliveryStatus
	Status        DeliveryStatus
	Attempts      int
	LastError     string
	NextAttemptAt time.Time
}

// DeliveryListParams selects deliveries of a space ordered by (seq, id),
// after the position After (exclusive; zero = from the start), at most
// Limit. Empty Trigger and Statuses do not constrain.
type DeliveryListParams struct {
	Space    string
	Trigger  string
	Statuses []DeliveryStatus
	After    DeliveryPosition
	Limit    int
}

// DeliveryPosition is a position in a delivery listing.
type DeliveryPosition struct {
	Seq int64
	ID  string
}

// DeliveryStats summarizes one trigger's deliveries.
type DeliveryStats struct {
	// ByStatus counts deliveries per status (statuses with none absent).
	ByStatus map[DeliveryStatus]int
	// OldestOpen is the creation time of the oldest open delivery (zero if
	// none is open).
	OldestOpen time.Time

	total int // all the trigger's deliveries, until Settle
}

// LeaseParams asks for a trigger's lease: it is granted when nobody holds
// it, the holder is Owner, or the holder's lease expired before Now. It
// then expires at Now+TTL; a change of holder bumps the epoch.
type LeaseParams struct {
	Space   string
	Trigger string
	Owner   string
	Now     time.Time
	TTL     time.Duration
}

// TriggerStore keeps triggers' cursors, leases and deliveries. Every
// method is safe for concurrent use.
type TriggerStore interface {
	// TriggerStateInit stores s if the trigger has no state and reports
	// whether it did; either way it returns the stored state.
	TriggerStateInit(ctx context.Context, s TriggerState) (TriggerState, bool, error)
	// TriggerStateGet returns a trigger's state or ErrNotFound.
	TriggerStateGet(ctx context.Context, space, trigger string) (TriggerState, error)
	// TriggerStateList returns the states of a space's triggers ordered by
	// trigger (every space's, ordered by space then trigger, when space
	// is "").
	TriggerStateList(ctx context.Context, space string) ([]TriggerState, error)
	// TriggerStateDelete removes a trigger's state, its deliveries and its
	// recorded errors; ErrNotFound if it has no state.
	TriggerStateDelete(ctx context.Context, space, trigger string) error
	// TriggerMove sets a trigger's cursor (and start, when p.Start is
	// set), appends p.Skip to its skipped ranges when set, and, with
	// p.DiscardOpen, marks its open deliveries discarded, in one
	// transaction. Unfenced: it is the operator's override (reset,
	// replay, enable with skip); a lease holder's next fenced write sees
	// the moved cursor and reloads. It returns the new state;
	// ErrNotFound if the trigger has no state.
	TriggerMove(ctx context.Context, p TriggerMoveParams) (TriggerState, error)
	// TriggerAdvance applies advances of a space's triggers in one
	// transaction; if any is fenced nothing is written and the error
	// wraps ErrFenced.
	TriggerAdvance(ctx context.Context, space string, advances []Advance) error
	// TriggerFired records a cron firing outside a log write: it sets
	// Fired to at, fenced by epoch (ErrFenced).
	TriggerFired(ctx context.Context, space, trigger string, epoch int64, at time.Time) error

	// LeaseAcquire grants or renews a lease (see LeaseParams) and returns
	// the state with ok; when another holder's lease is live it returns
	// the state and ok false. ErrNotFound if the trigger has no state.
	LeaseAcquire(ctx context.Context, p LeaseParams) (TriggerState, bool, error)
	// LeaseRelease gives up a lease held by owner at epoch (it expires at
	// once); a lease no longer held so is left alone.
	LeaseRelease(ctx context.Context, space, trigger, owner string, epoch int64) error
	// ProcessBeat records that the process owner is alive until now+ttl
	// and returns the owners of every live process (expiry >= now),
	// sorted bytewise, owner included. Processes sharing the store use
	// the list to spread leases; rows long expired may be removed.
	ProcessBeat(ctx context.Context, owner string, now time.Time, ttl time.Duration) ([]string, error)
	// ProcessGone removes the process owner from the live processes (a
	// clean shutdown); an unknown owner is not an error.
	ProcessGone(ctx context.Context, owner string) error

	// DeliveryGet returns a delivery or ErrNotFound.
	DeliveryGet(ctx context.Context, space, id string) (Delivery, error)
	// DeliveryList lists deliveries (see DeliveryListParams).
	DeliveryList(ctx context.Context, p DeliveryListParams) ([]Delivery, error)
	// DeliveriesAt returns every delivery caused by the row seq, ordered
	// by trigger then creation (the latest last).
	DeliveriesAt(ctx context.Context, space string, seq int64) ([]Delivery, error)
	// DeliveryUpdate applies u (see DeliveryUpdate); ErrNotFound if there
	// is no such delivery, an error wrapping ErrFenced if the status or
	// the epoch did not match. It returns the updated delivery.
	DeliveryUpdate(ctx context.Context, u DeliveryUpdate) (Delivery, error)
	// DeliveryUpdateMany applies several updates in one transaction, each
	// on its own terms: errs[i] is nil, or wraps ErrNotFound or ErrFenced
	// as DeliveryUpdate would, for us[i]; a fenced update does not stop
	// the others. err reports a failure of the transaction itself (then
	// nothing was written).
	//
	// Its commit does not wait for the disk (SQLite synchronous=NORMAL,
	// PostgreSQL synchronous_commit=off, for this transaction only): a
	// power loss or operating system crash, not a process crash, may
	// lose the last such updates, and their deliveries then run again,
	// as a delivery interrupted by a crash would. The next durable commit
	// makes them durable too, and none is ever applied out of order. The
	// engine passes only updates that carry no writes.
	DeliveryUpdateMany(ctx context.Context, us []DeliveryUpdate) (errs []error, err error)
	// DeliveryStats summarizes a trigger's deliveries. Its cost grows
	// with the trigger's finished deliveries (an index walk over them).
	DeliveryStats(ctx context.Context, space, trigger string) (DeliveryStats, error)
	// DeliveryBacklog is DeliveryStats of the deliveries that still need
	// work or an operator: ByStatus counts only the open statuses and
	// parked. It reads those deliveries alone, never the finished ones,
	// so its cost follows the backlog, not the trigger's history; the
	// engine's gauges call it at every scrape.
	DeliveryBacklog(ctx context.Context, space, trigger string) (DeliveryStats, error)
	// DeliveriesOpenThrough counts a trigger's open deliveries caused by
	// rows with seq <= through.
	DeliveriesOpenThrough(ctx context.Context, space, trigger string, through int64) (int, error)
	// StanceErrorsAt returns the errors recorded for the row seq, by
	// trigger.
	StanceErrorsAt(ctx context.Context, space string, seq int64) (map[string]string, error)
}

// TriggerTx is the part of a write transaction (WriteTx) that lets a
// delivery's effects commit with the rows it appends. A driver may
// report an error of these methods at the call or at Commit.
type TriggerTx interface {
	// DeliveryInsert inserts a delivery; an error wrapping ErrExists if
	// the id is taken (a cron slot that already fired).
	DeliveryInsert(ctx context.Context, d Delivery) error
	// DeliveryComplete applies u like TriggerStore.DeliveryUpdate.
	DeliveryComplete(ctx context.Context, u DeliveryUpdate) error
	// TriggerAdvanceTx applies advances like TriggerStore.TriggerAdvance.
	TriggerAdvanceTx(ctx context.Context, advances []Advance) error
	// TriggerFiredTx records a cron firing like TriggerStore.TriggerFired.
	TriggerFiredTx(ctx context.Context, trigger string, epoch int64, at time.Time) error
}

// DeliveryTxUpdater is a WriteTx that applies delivery updates of its
// space inside it, each on its own terms as TriggerStore.DeliveryUpdateMany
// applies them: errs[i] is nil, or wraps ErrNotFound or ErrFenced for
// us[i], which then changed nothing, and does not fail the transaction;
// err is any other failure, after which the transaction cannot commit.
// The updates commit with the transaction, as durably as its writes.
type DeliveryTxUpdater interface {
	DeliveryUpdateManyTx(ctx context.Context, us []DeliveryUpdate) (errs []error, err error)
}

// SingleWriter is implemented by a Store that runs one write transaction
// at a time (SQLite): a transaction of its own for a few delivery updates
// waits for the writes under way and they for it, so the updates are
// better applied inside a write transaction already under way. Its
// WriteTx implements DeliveryTxUpdater.
type SingleWriter interface {
	SingleWriter()
}

// TriggerMoveParams are the arguments of TriggerStore.TriggerMove.
type TriggerMoveParams struct {
	Space, Trigger string
	// Cursor is the new cursor.
	Cursor int64
	// Start, when set, is the new start (nil keeps it).
	Start *int64
	// Skip, when set, is appended to the skipped ranges.
	Skip *SeqRange
	// DiscardOpen discards the trigger's open deliveries.
	DiscardOpen bool
}

// StartArg returns p.Start as the drivers bind it: -1 when unset.
func (p TriggerMoveParams) StartArg() int64 {
	if p.Start == nil {
		return -1
	}
	return *p.Start
}
